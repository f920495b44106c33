"""The two-way loop (S-13): ``agent.drive()`` yields events and receives a decision per call."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from bastion import Agent, tool
from bastion.agent import AgentDrive, DriveDecision, ToolOptions
from bastion.core import AgentEvent, AssistantMessage, ModelRequest, UserError
from bastion.stores import NewEntry, Stores, open_store
from bastion.testing import Call, FunctionModel, Turn
from bastion.tools import Allow, Ask, BeforeToolCall, Deny, Mock, Rewrite, Tool, ToolCallRequest


class Bank:
    """A side-effecting tool and a model that calls it, counting what really happened."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.model_calls = 0

    def tools(self) -> list[Tool]:
        bank = self

        @tool(side_effect_class="side_effecting")
        def transfer(to: str, amount: int) -> str:
            """Send money."""
            bank.sent.append(f"{to}:{amount}")
            return f"sent {amount} to {to}"

        @tool(side_effect_class="read_only")
        def balance() -> int:
            """Read the balance."""
            return 100

        return [transfer, balance]

    def model(self) -> FunctionModel:
        def answer(request: ModelRequest) -> Turn:
            self.model_calls += 1
            if not any(isinstance(m, AssistantMessage) for m in request.messages):
                return Turn(
                    tool_calls=[
                        Call("balance", {}, id="c1"),
                        Call("transfer", {"to": "bob", "amount": 5}, id="c2"),
                    ]
                )
            last = request.messages[-1]
            return Turn(text=f"Done: {getattr(last, 'content', '')}")

        return FunctionModel(answer)

    def agent(
        self, store: Stores | None = None, hooks: Sequence[BeforeToolCall] = ()
    ) -> Agent[None, str]:
        return Agent(
            "bank",
            model=self.model(),
            tools=self.tools(),
            store=store,
            tool_options=ToolOptions(before_call=hooks),
        )


async def _drive(
    run: AgentDrive[str], decide: dict[str, DriveDecision], asked: list[str]
) -> list[AgentEvent]:
    """Drive ``run`` to its end, sending ``decide[tool_name]`` for each call asked."""
    events: list[AgentEvent] = []
    decision: DriveDecision = None
    while True:
        try:
            event = await run.asend(decision)
        except StopAsyncIteration:
            return events
        events.append(event)
        decision = None
        if event.type == "tool.approval.requested":
            asked.append(f"{event.tool_name} {event.arguments}")
            decision = decide.get(event.tool_name)


def _ends(events: list[AgentEvent]) -> list[str]:
    lines: list[str] = []
    for e in events:
        if e.type == "tool.execute.end":
            lines.append(f"{e.tool_name}: {e.result}")
        elif e.type == "tool.execute.error":
            lines.append(f"{e.tool_name}: {e.kind} {e.message}")
    return lines


async def test_s13_each_call_is_sent_to_the_application_and_decided() -> None:
    # covers S-13
    bank = Bank()
    asked: list[str] = []
    async with bank.agent().drive("pay bob") as run:
        events = await _drive(run, {"transfer": Rewrite({"to": "bob", "amount": 3})}, asked)
    assert asked == ["balance {}", 'transfer {"to": "bob", "amount": 5}']
    kinds = [e.type for e in events if e.type.startswith("tool.approval")]
    assert kinds == ["tool.approval.requested", "tool.approval.resolved"] * 2
    assert bank.sent == ["bob:3"]  # the edited arguments ran
    assert _ends(events) == ["balance: 100", "transfer: sent 3 to bob"]
    assert run.result.output == "Done: sent 3 to bob"
    assert run.result.tool_calls[1].arguments == '{"to":"bob","amount":3}'


@pytest.mark.parametrize(
    ("decision", "result", "sent"),
    [
        (Allow(), "transfer: sent 5 to bob", ["bob:5"]),
        (None, "transfer: sent 5 to bob", ["bob:5"]),
        (Mock("queued for tomorrow"), "transfer: queued for tomorrow", []),
        (
            Deny("over the daily limit"),
            "transfer: approval_denied Denied: over the daily limit",
            [],
        ),
    ],
)
async def test_s13_run_skip_and_deny(decision: DriveDecision, result: str, sent: list[str]) -> None:
    # covers S-13
    bank = Bank()
    run = bank.agent().drive("pay bob")
    events = await _drive(run, {"transfer": decision}, [])
    assert _ends(events)[1] == result
    assert bank.sent == sent
    assert run.result.status == "completed"


async def test_s13_async_for_runs_every_call() -> None:
    # covers S-13
    bank = Bank()
    events = [e async for e in bank.agent().drive("pay bob")]
    assert bank.sent == ["bob:5"]
    assert events[-1].type == "agent.end"


async def test_s13_a_decision_at_the_wrong_time_is_refused() -> None:
    # covers S-13
    bank = Bank()
    async with bank.agent().drive("pay bob") as run:
        first = await run.asend(None)
        assert first.type == "agent.start"
        with pytest.raises(UserError, match="no tool call waits for one"):
            await run.asend(Deny("no"))
        event = first
        while event.type != "tool.approval.requested":
            event = await run.asend(None)
        assert run.asking is event
        with pytest.raises(UserError, match="Ask\\(\\) is not a decision"):
            await run.asend(Ask())  # pyright: ignore[reportArgumentType]
    assert bank.sent == []
    assert run.result.status == "aborted"


async def test_s13_the_agents_own_hooks_decide_first() -> None:
    # covers S-13
    bank = Bank()

    def reads_freely(request: ToolCallRequest) -> Allow | None:
        return Allow() if request.tool.name == "balance" else None

    agent = bank.agent(hooks=[reads_freely])
    asked: list[str] = []
    await _drive(agent.drive("pay bob"), {}, asked)
    assert asked == ['transfer {"to": "bob", "amount": 5}']


async def _copy(stores: Stores, run_id: str, count: int) -> Stores:
    """A fresh store holding the first ``count`` entries of the run: a crash there."""
    copy = open_store("memory://")
    await copy.open()
    for entry in (await stores.journal.read(run_id))[:count]:
        new = NewEntry(kind=entry.kind, payload=entry.payload, schema_version=entry.schema_version)
        await copy.journal.append(run_id, [new], expected_seq=entry.seq - 1, agent="bank")
    return copy


async def test_s13_a_crash_while_the_application_decides_asks_again_on_resume() -> None:
    # covers S-13
    bank = Bank()
    async with open_store("memory://") as stores:
        run = bank.agent(stores).drive("pay bob")
        event = await run.asend(None)
        while event.type != "tool.approval.requested":
            event = await run.asend(None)
        # the journal is durable before the application is asked: a crash happens here
        entries = await stores.journal.read(run.run_id)
        crashed = await _copy(stores, run.run_id, len(entries))
        await run.aclose()
    assert [e.kind for e in entries] == ["run_started", "model_response"]
    resumed = Bank()
    asked: list[str] = []
    drive = resumed.agent(crashed).drive(resume=run.run_id)
    events = await _drive(drive, {"transfer": Deny("not now")}, asked)
    assert asked == ["balance {}", 'transfer {"to": "bob", "amount": 5}']  # nothing had run
    assert resumed.sent == []
    assert resumed.model_calls == 1  # the recorded answer was not asked for again
    assert _ends(events)[1] == "transfer: approval_denied Denied: not now"
    assert drive.result.output == "Done: Denied: not now"


async def test_s13_decided_calls_are_journaled_and_never_asked_again() -> None:
    # covers S-13
    bank = Bank()
    async with open_store("memory://") as stores:
        run = bank.agent(stores).drive("pay bob")
        await _drive(run, {"transfer": Rewrite({"to": "bob", "amount": 3})}, [])
        entries = await stores.journal.read(run.run_id)
        kinds = [e.kind for e in entries]
        results = kinds.index("tool_result", kinds.index("tool_result") + 1) + 1
        crashed = await _copy(stores, run.run_id, results)  # both calls done, then a crash
    started = [e.payload for e in entries if e.kind == "tool_call_started"]
    assert json.loads(str(started[1]["arguments"])) == {"to": "bob", "amount": 3}
    resumed = Bank()
    asked: list[str] = []
    drive = resumed.agent(crashed).drive(resume=run.run_id)
    await _drive(drive, {}, asked)
    assert asked == []  # every call was decided and done before the crash
    assert resumed.sent == []
    assert drive.result.output == "Done: sent 3 to bob"
    [answer] = [m for m in drive.result.messages if isinstance(m, AssistantMessage)][:1]
    assert json.loads(answer.tool_calls[1].arguments) == {"to": "bob", "amount": 3}


def test_resume_takes_no_new_input() -> None:
    with pytest.raises(UserError, match="drive\\(resume=run_id\\) continues a journaled run"):
        Bank().agent(open_store("memory://")).drive("again", resume="run_x")
