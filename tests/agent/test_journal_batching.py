"""The journal's write-behind: batched commits, and the barriers where durability comes first.

A run queues its entries and commits them in batches; it waits for the store only before a
tool runs, before a human is asked, and before the run's end. Between barriers an entry is
committed within ``COMMIT_DELAY`` even while the run waits for a slow model.
ARCHITECTURE §5 (journal, side-effect ledger).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bastion import Agent, tool
from bastion.agent import ToolOptions
from bastion.core import ModelRequest, RunContext, RunStatus
from bastion.stores import JournalEntry, JournalStore, NewEntry, Stores, open_store
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn
from bastion.tools import ApprovalConfig, ApprovalDecision, ApprovalRequest, Directive


class Watched:
    """Wraps a store's journal: counts appends and wakes waiters on each.

    With ``fail_on``, an append holding an entry of that kind fails as a full disk would.
    """

    def __init__(self, stores: Stores, fail_on: str | None = None) -> None:
        self.inner: JournalStore = stores.journal
        self.fail_on = fail_on
        self.batches: list[list[str]] = []
        self.changed = asyncio.Event()
        stores.journal = self  # type: ignore[assignment]  # the same protocol, watched

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        if self.fail_on in [e.kind for e in entries]:
            raise OSError("disk full")
        stored = await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )
        self.batches.append([e.kind for e in entries])
        self.changed.set()
        return stored

    async def until(self, count: int) -> None:
        while sum(map(len, self.batches)) < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), timeout=10)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_a_fast_run_commits_one_batch_per_barrier() -> None:
    script: list[Turn | str] = [
        Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
        Turn(tool_calls=[Call("add", {"a": 2, "b": 1})]),
        "done",
    ]
    async with open_store("memory://") as stores:
        watched = Watched(stores)
        result = await Agent("s", model=ScriptedModel(script), tools=[add], store=stores).run("go")
        entries = await stores.journal.read(result.run_id)
    assert result.output == "done"
    # Each tool's start is a barrier; the run's end is the last one.
    assert watched.batches == [
        ["run_started", "model_response", "tool_call_started"],
        ["tool_result", "model_response", "tool_call_started"],
        ["tool_result", "model_response", "run_ended"],
    ]
    assert [e.seq for e in entries] == list(range(1, 10))


async def test_entries_are_committed_while_the_run_waits_for_a_slow_model() -> None:
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        await release.wait()  # a model that takes its time
        return "late answer"

    async with open_store("memory://") as stores:
        watched = Watched(stores)
        stream = Agent("s", model=FunctionModel(slow), store=stores).stream("go")
        drained = asyncio.ensure_future(stream.drain())
        await watched.until(1)  # committed within COMMIT_DELAY, the model still thinking
        assert watched.batches == [["run_started"]]
        assert [e.kind for e in await stores.journal.read(stream.run_id)] == ["run_started"]
        release.set()
        result = await drained
    assert result.output == "late answer"
    assert watched.batches == [["run_started"], ["model_response", "run_ended"]]


async def test_a_tool_runs_only_after_its_start_is_in_the_store() -> None:
    seen: list[list[str]] = []
    stores = open_store("memory://")

    @tool(side_effect_class="side_effecting")
    async def send(ctx: RunContext[None], text: str) -> str:
        """Send a message."""
        seen.append([e.kind for e in await stores.journal.read(ctx.run_id)])
        return "sent"

    script: list[Turn | str] = [Turn(tool_calls=[Call("send", {"text": "hi"})]), "ok"]
    async with stores:
        result = await Agent("s", model=ScriptedModel(script), tools=[send], store=stores).run("go")
    assert result.output == "ok"
    assert seen == [["run_started", "model_response", "tool_call_started"]]


async def test_what_the_run_did_is_durable_before_a_human_is_asked() -> None:
    seen: list[list[str]] = []
    stores = open_store("memory://")

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def wire(amount: int) -> str:
        """Wire money."""
        return f"wired {amount}"

    async def human(request: ApprovalRequest, ctx: RunContext[None]) -> bool:
        seen.append([e.kind for e in await stores.journal.read(ctx.run_id)])
        return True

    script: list[Turn | str] = [Turn(tool_calls=[Call("wire", {"amount": 5})]), "wired"]
    async with stores:
        agent = Agent(
            "s",
            model=ScriptedModel(script),
            tools=[wire],
            store=stores,
            tool_options=ToolOptions(approval=ApprovalConfig(on_approval=human)),
        )
        result = await agent.run("go")
    assert result.output == "wired"
    assert seen == [["run_started", "model_response"]]


async def test_a_store_failure_between_barriers_fails_the_run() -> None:
    ran: list[int] = []

    @tool(side_effect_class="side_effecting")
    def charge(amount: int) -> str:
        """Charge an amount."""
        ran.append(amount)
        return "charged"

    script: list[Turn | str] = [
        Turn(tool_calls=[Call("charge", {"amount": 1})]),
        Turn(tool_calls=[Call("charge", {"amount": 2})]),
        "done",
    ]
    async with open_store("memory://") as stores:
        Watched(stores, fail_on="tool_result")
        result = await Agent("s", model=ScriptedModel(script), tools=[charge], store=stores).run(
            "go"
        )
    assert result.status == "failed"
    assert result.error is not None
    assert "disk full" in result.error.message
    assert ran == [1]  # the second charge never ran: its barrier found the failure


async def test_a_human_decision_is_durable_before_the_resumed_run_goes_on() -> None:
    seen: list[list[str]] = []
    run_ids: list[str] = []
    stores = open_store("memory://")

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def wire(amount: int) -> str:
        """Wire money."""
        return f"wired {amount}"

    async def answer(request: ModelRequest) -> Turn | str:
        if not any(m.role == "tool" for m in request.messages):
            return Turn(tool_calls=[Call("wire", {"amount": 5}, id="c1")])
        seen.append([e.kind for e in await stores.journal.read(run_ids[0])])
        return "not wired"

    async with stores:
        agent = Agent("s", model=FunctionModel(answer), tools=[wire], store=stores)
        suspended = await agent.run("go")
        assert suspended.status == "awaiting_approval"
        run_ids.append(suspended.run_id)
        denied = Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=False)])
        result = await agent.resume(suspended.run_id, directive=denied)
    assert result.output == "not wired"
    # The denial ran no tool, so no tool barrier made it durable; its own barrier did.
    assert seen == [["run_started", "model_response", "interrupt_raised", "interrupt_decided"]]
