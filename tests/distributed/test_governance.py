"""Governance on Temporal: budgets counted in a store every worker shares, raised by update."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import Agent
from bastion.core import UserError, UserMessage
from bastion.distributed import TemporalAgent, WorkflowResult
from bastion.governance import Budget, Governor, Limit
from bastion.stores import StoreCounters, open_store
from bastion.testing import FunctionModel, isolated_store
from bastion.tools import InterruptResolution

from ._governed import METERED_CALLS, metered, spender

WORKER = Path(__file__).with_name("_governed_worker.py")
RUNS = 500


async def _spent(url: str, budget: Budget) -> float:
    """What another process reads of the budget's counter in the shared store."""
    async with open_store(url) as stores:
        governor = Governor(budget=budget, store=StoreCounters(stores.counters))
        [view] = await governor.counters("llm")
        return view.accumulated


async def test_a_budget_reached_parks_the_run_until_an_update_raises_it(  # covers L-24
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = time_skipping.client
    async with isolated_store("postgres", tmp_path) as url:
        remote = spender("bastion-test-tgov-budget", url)
        async with remote.worker(client):
            handle = await remote.start(client, "Is tea in stock?")
            parked = await remote.settle(client, handle.id)
            assert parked.status == "awaiting_approval"
            assert parked.pending == []  # nothing but the budget waits
            [waiting] = parked.interrupts
            assert (waiting.kind, waiting.on, waiting.oracle, waiting.limit_type) == (
                "limit",
                "model",
                "llm",
                "cost",
            )
            assert (waiting.current, waiting.max, waiting.approvers) == (0.6, 0.5, ("human:cfo",))
            assert (await remote.status(client, handle.id)).interrupts == [waiting]
            assert await _spent(url, Budget(cost_usd=0.5)) == pytest.approx(0.6)

            with pytest.raises(UserError, match=r"raises nothing: its max is 0\.5"):
                await remote.raise_budget(client, handle.id, waiting.id, 0.5)
            with pytest.raises(UserError, match="'intern' may not raise this limit"):
                await remote.raise_budget(client, handle.id, waiting.id, 2, approver="intern")
            with pytest.raises(UserError, match="No interrupt 'int_nope' is waiting"):
                await remote.raise_budget(client, handle.id, "int_nope", 2)
            assert await remote.raise_budget(client, handle.id, waiting.id, 2) == []

            result = await remote.result(client, handle.id)
        assert result.ok, result.error
        assert result.output == "Tea is in stock."
        assert result.usage.cost_usd == pytest.approx(1.2)
        assert await _spent(url, Budget(cost_usd=0.5)) == pytest.approx(1.2)
        # the counters' answers are in the history: it replays without reaching the store
        replayer = Replayer(workflows=[remote.workflow])
        replayed = await replayer.replay_workflow(await handle.fetch_history())
        assert replayed.replay_failure is None


async def test_a_raise_past_the_ceiling_is_refused_and_the_run_stays_parked(  # covers L-23
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = time_skipping.client
    url = f"sqlite:///{tmp_path / 'counters.db'}"
    remote = spender("bastion-test-tgov-ceiling", url)
    async with remote.worker(client):
        handle = await remote.start(client, "Is tea in stock?")
        [waiting] = (await remote.settle(client, handle.id)).interrupts
        assert await remote.raise_budget(client, handle.id, waiting.id, 50) == []
        again = await remote.settle(client, handle.id)
        assert again.status == "awaiting_approval"  # the ceiling ($5) refused the raise
        assert [i.id for i in again.interrupts] == [waiting.id]
        assert await remote.raise_budget(client, handle.id, waiting.id, 5) == []
        assert (await remote.result(client, handle.id)).ok


async def test_a_denied_interrupt_fails_the_run_as_a_local_denial_does(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = time_skipping.client
    remote = spender("bastion-test-tgov-deny", f"sqlite:///{tmp_path / 'counters.db'}")
    async with remote.worker(client):
        handle = await remote.start(client, "Is tea in stock?")
        [waiting] = (await remote.settle(client, handle.id)).interrupts
        deny = {"decision": "deny", "reason": "Over budget this month"}
        resolution = InterruptResolution(interrupt_id=waiting.id, decision=deny)
        assert await remote.resolve(client, handle.id, resolution) == []
        result = await remote.result(client, handle.id)
    assert (result.status, result.error and result.error.code) == ("failed", "policy_denied")
    assert result.error is not None
    assert "Over budget this month" in result.error.message


def test_governance_needs_a_counter_store_every_worker_shares() -> None:
    agent = Agent("budgeted", model=FunctionModel(lambda _: "hi"), budget=Budget(cost_usd=1))
    with pytest.raises(UserError, match=r"has governance: give TemporalAgent\(counters="):
        TemporalAgent(agent)
    with pytest.raises(UserError, match="live in one process"):
        TemporalAgent(agent, counters="memory://")
    with pytest.raises(UserError, match="Unsupported store URL 'mysql://db'"):
        TemporalAgent(agent, counters="mysql://db")
    plain = Agent("plain", model=FunctionModel(lambda _: "hi"))
    with pytest.raises(UserError, match="has no policies or budget"):
        TemporalAgent(plain, counters="sqlite:///c.db")


@asynccontextmanager
async def _worker(address: str, counters: str) -> AsyncGenerator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        address,
        counters,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert process.stdout is not None
        line = await process.stdout.readline()
        assert line.decode().strip() == "WORKER_READY", f"the worker said {line!r}"
        yield process
    finally:
        process.terminate()
        await process.wait()


@pytest.mark.timeout(300)
async def test_concurrent_runs_on_two_workers_never_overspend_a_shared_limit(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    async with isolated_store("redis", tmp_path) as url:
        remote = metered(url)
        async with _worker(address, url) as one, _worker(address, url) as two:
            # all 500 in flight at once; at most 25 client calls at a time (the dev server
            # times out requests beyond what it can take on this machine)
            gate = asyncio.Semaphore(25)

            async def run(i: int) -> WorkflowResult[str]:
                async with gate:
                    handle = await remote.start(client, f"Run {i}")
                await started.wait()
                async with gate:
                    return await remote.result(client, handle.id)

            started = asyncio.Event()
            runs = [asyncio.ensure_future(run(i)) for i in range(RUNS)]
            started.set()
            results = await asyncio.gather(*runs)
        done = [r for r in results if r.ok]
        refused = [r for r in results if not r.ok]
        # No call past the limit. A counter write whose answer was lost (a workflow task
        # timed out on a loaded machine, so its local activity ran again) counts twice:
        # fewer runs may then complete than the limit allows, never more.
        assert 0 < len(done) <= METERED_CALLS
        served_by = {r.text for r in done}
        assert served_by == {f"served by {one.pid}", f"served by {two.pid}"}
        assert {(r.status, r.error and r.error.code) for r in refused} == {
            ("failed", "budget_exceeded")
        }
        assert len(done) + len(refused) == RUNS
        async with open_store(url) as stores:
            governor = Governor(
                oracles={"llm": [Limit(type="calls", max=METERED_CALLS, window="day")]},
                store=StoreCounters(stores.counters),
            )
            [view] = await governor.counters("llm")
        assert view.accumulated == METERED_CALLS  # the shared counter stopped at the limit


async def test_a_sessions_turn_parks_at_a_budget_and_a_steer_denies_the_interrupt(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'counters.db'}"
    remote = spender("bastion-test-tgov-session", url)
    async with remote.worker(time_skipping.client):
        session = await remote.session(time_skipping.client, "governed-chat")
        await session.send("Is tea in stock?")
        parked = await session.settle()  # the second model call passes the $0.50 budget
        assert (parked.status, parked.pending) == ("awaiting_approval", [])
        [waiting] = parked.interrupts
        assert (waiting.kind, waiting.limit_type, waiting.current, waiting.max) == (
            "limit",
            "cost",
            0.6,
            0.5,
        )
        with pytest.raises(UserError, match="'intern' may not raise this limit"):
            await session.raise_budget(waiting.id, 2, approver="intern")
        assert await session.raise_budget(waiting.id, 2, approver="human:cfo") == []
        answered = await session.settle()
        assert (answered.status, answered.text, answered.interrupts) == (
            "idle",
            "Tea is in stock.",
            [],
        )
        assert answered.usage.cost_usd == pytest.approx(1.2)
        assert await _spent(url, Budget(cost_usd=0.5)) == pytest.approx(1.2)

        for question in ("And coffee?", "And milk?"):  # one answer each: $1.80, $2.40
            await session.send(question)
            assert (await session.settle()).status == "idle"
        await session.send("And sugar?")  # the raised $2 is spent
        [again] = (await session.settle()).interrupts
        assert (again.current, again.max) == (pytest.approx(2.4), 2.0)
        await session.send("Never mind.")  # a steer denies what the turn waits on
        view = await session.settle()
        history = await time_skipping.client.get_workflow_handle(session.id).fetch_history()
    # the counters' answers are in the history: the session replays without the store
    replayed = await Replayer(workflows=[remote.session_workflow]).replay_workflow(history)
    assert replayed.replay_failure is None
    assert view.error is not None
    assert (view.error.code, view.interrupts, view.turns) == ("policy_denied", [], 4)
    assert "steered" in view.error.message
    # the denied model call never answered: the turn ends with the steer, the session idle
    assert view.status == "idle"
    last = [m.content for m in view.messages[-2:] if isinstance(m, UserMessage)]
    assert last == ["And sugar?", "Never mind."]
