"""S9: the journal's cost on a run: S1 (three tool calls and an answer) with and without a store.

``python -m benchmarks.journal [none memory sqlite postgres redis]`` runs the S1 agent (a
``ScriptedModel``, a sync ``pure`` tool) on each store (isolated as in ``benchmarks.stores``)
and prints the median time per run over interleaved rounds, the overhead per step and per
journal entry against the run without a store, and the ratio. Every run is checked: it
completes, and its journal holds the 12 entries of S1 (run_started, 4 model_response,
3 tool_call_started, 3 tool_result, run_ended).

``python -m benchmarks.journal resume [memory sqlite postgres redis]`` times resuming a long
run: a run of 333 one-call tool steps is cut after its 1,000th entry (run_started, then
model_response / tool_call_started / tool_result per step; the append of the final answer's
``model_response`` fails, as if the process had died there), and ``agent.resume_stream`` is
timed until its first event (reading and folding the journal, rebuilding the transcript)
and until the run has ended (the final model call, output, ``run_ended``). Median of
``RESUME_SAMPLES`` runs; each resumed run is checked to complete without calling the model
for the replayed steps.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack

from bastion import Agent, tool
from bastion.core import RunStatus
from bastion.stores import JournalEntry, JournalStore, NewEntry, Stores
from bastion.testing import Call, ForwardingJournal, ScriptedModel, Turn

from .stores import _backend

RUNS = 200
ROUNDS = 3
STEPS = 4
ENTRIES = 12


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _script() -> list[Turn | str]:
    return [Turn(tool_calls=[Call("add", {"a": i, "b": 1})]) for i in range(3)] + ["done"]


async def _round(stores: Stores | None, runs: int) -> float:
    """Median seconds per run over ``runs`` runs."""
    times: list[float] = []
    for _ in range(runs):
        model = ScriptedModel(_script(), record_requests=False)
        agent = Agent("s1", model=model, tools=[add], store=stores)
        start = time.perf_counter()
        result = await agent.run("go")
        times.append(time.perf_counter() - start)
        assert result.status == "completed"
        if stores is not None:
            assert len(await stores.journal.read(result.run_id)) == ENTRIES
    return statistics.median(times)


async def main(backends: list[str]) -> str:
    """Measure ``backends`` in interleaved rounds and return the Markdown report."""
    async with AsyncExitStack() as stack:
        stores: dict[str, Stores | None] = {}
        for name in backends:
            stores[name] = (
                None if name == "none" else await stack.enter_async_context(_backend(name))
            )
        best: dict[str, float] = {}
        for store in stores.values():  # warm-up
            await _round(store, 20)
        for _ in range(ROUNDS):
            for name, store in stores.items():
                print(f"measuring {name}…", file=sys.stderr)
                figure = await _round(store, RUNS)
                best[name] = min(best.get(name, figure), figure)
    base = best.get("none")
    lines = [
        f"**S9 journal** (S1: {STEPS} steps, {ENTRIES} entries per run; median per run, best "
        f"of {ROUNDS} rounds of {RUNS} runs)",
        "",
        "| store | µs/run | overhead µs/step | overhead µs/entry | x no store |",
        "|---|---|---|---|---|",
    ]
    for name, figure in best.items():
        if base is None or name == "none":
            lines.append(f"| {name} | {figure * 1e6:,.0f} | - | - | 1.00x |")
            continue
        extra = figure - base
        lines.append(
            f"| {name} | {figure * 1e6:,.0f} | {extra / STEPS * 1e6:,.0f} | "
            f"{extra / ENTRIES * 1e6:,.0f} | {figure / base:.2f}x |"
        )
    return "\n".join(lines)


RESUME_STEPS = 333  # run_started + 3 entries per step = 1,000 entries
RESUME_ENTRIES = 1 + 3 * RESUME_STEPS
RESUME_SAMPLES = 7


class _CutJournal(ForwardingJournal):
    """A journal whose appends fail after ``limit`` entries: the run stops as if killed."""

    def __init__(self, inner: JournalStore, limit: int) -> None:
        super().__init__(inner)
        self._limit = limit
        self._count = 0

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        if self._count + len(entries) > self._limit:
            raise ConnectionError("simulated crash")
        self._count += len(entries)
        return await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )


async def _long_run(stores: Stores) -> str:
    """Journal a run of ``RESUME_STEPS`` tool steps cut after ``RESUME_ENTRIES`` entries."""
    script: list[Turn | str] = [
        Turn(tool_calls=[Call("add", {"a": i, "b": 1})]) for i in range(RESUME_STEPS)
    ]
    model = ScriptedModel([*script, "done"], record_requests=False)
    journal = stores.journal
    stores.journal = _CutJournal(journal, RESUME_ENTRIES)
    try:
        agent = Agent("s9r", model=model, tools=[add], store=stores, max_steps=RESUME_STEPS + 1)
        result = await agent.run("go")
    finally:
        stores.journal = journal
    assert result.status == "failed"
    assert await journal.last_seq(result.run_id) == RESUME_ENTRIES
    record = await journal.get_run(result.run_id)
    assert record is not None
    assert record.status == "running"
    return result.run_id


async def _resume_once(stores: Stores) -> tuple[float, float]:
    """Seconds until the resumed stream's first event, and until the run has ended."""
    run_id = await _long_run(stores)
    model = ScriptedModel(["done"])  # only the final call: replayed steps never reach it
    agent = Agent("s9r", model=model, tools=[add], store=stores, max_steps=RESUME_STEPS + 1)
    start = time.perf_counter()
    stream = agent.resume_stream(run_id)
    first: float | None = None
    async for _ in stream:
        if first is None:
            first = time.perf_counter() - start
    total = time.perf_counter() - start
    result = await stream.drain()
    assert first is not None
    assert result.status == "completed"
    assert result.output == "done"
    assert len(model.requests) == 1
    assert await stores.journal.last_seq(run_id) == RESUME_ENTRIES + 2
    return first, total


async def resume_main(backends: list[str]) -> str:
    """Time resuming a 1,000-entry run on ``backends``; return the Markdown report."""
    rows: list[str] = []
    async with AsyncExitStack() as stack:
        for name in backends:
            print(f"measuring resume on {name}…", file=sys.stderr)
            stores = await stack.enter_async_context(_backend(name))
            await _resume_once(stores)  # warm-up
            samples = [await _resume_once(stores) for _ in range(RESUME_SAMPLES)]
            first = statistics.median(s[0] for s in samples)
            total = statistics.median(s[1] for s in samples)
            rows.append(
                f"| {name} | {first * 1e3:,.1f} | {first / RESUME_ENTRIES * 1e6:,.1f} | "
                f"{total * 1e3:,.1f} |"
            )
    return "\n".join(
        [
            f"**S9 resume** ({RESUME_ENTRIES:,} entries: {RESUME_STEPS} tool steps; median of "
            f"{RESUME_SAMPLES})",
            "",
            "| store | ms to first event | µs per entry | ms to run end |",
            "|---|---|---|---|",
            *rows,
        ]
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["resume"]:
        print(asyncio.run(resume_main(sys.argv[2:] or ["memory", "sqlite", "postgres", "redis"])))
    else:
        chosen = sys.argv[1:] or ["none", "memory", "sqlite", "postgres", "redis"]
        print(asyncio.run(main(chosen)))
