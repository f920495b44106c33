"""Loop detection: one tool called with identical arguments again and again in a run."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, RunContext, Usage, run_state_from_json, run_state_to_json, tool
from bastion.agent import LoopDetection, LoopHooks, ToolOptions
from bastion.core import UserError
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive
from tests.agent.conftest import brief

NOTE = (
    "[Loop detected: this is call 3 of 'lookup' with the same arguments in this run. "
    "Repeating it is unlikely to help: use the results you have, change the arguments, "
    "try another tool, or answer.]"
)


def make_lookup(ran: list[str]):
    @tool(side_effect_class="read_only")
    def lookup(q: str, page: int = 1) -> str:
        """Look something up."""
        ran.append(f"{q}:{page}")
        return f"nothing about {q}"

    return lookup


def turns(*args: dict[str, Any]) -> list[Turn | str]:
    return [*(Turn(tool_calls=[Call("lookup", a, id=f"c{i}")]) for i, a in enumerate(args)), "ok"]


async def test_scenario_22_identical_calls_are_detected_and_reported_to_the_model() -> None:
    # covers §3.3 scenario 22 (same tool, identical args, 3+ times: a loop is detected)
    ran: list[str] = []
    same = {"q": "weather", "page": 1}
    reordered = {"page": 1, "q": "weather"}  # the same arguments, other key order
    model = ScriptedModel(turns(same, same, reordered, same))
    agent = Agent(
        "a",
        model=model,
        tools=[make_lookup(ran)],
        tool_options=ToolOptions(loop_detection=LoopDetection()),
    )
    events = [e async for e in agent.stream("go")]
    detected = [e for e in events if e.type == "tool.loop.detected"]
    assert [(e.tool_call_id, e.count, e.action) for e in detected] == [
        ("c2", 3, "warn"),
        ("c3", 4, "warn"),
    ]
    third = brief(events).index("tool.loop.detected")
    assert brief(events)[third : third + 3] == [
        "tool.loop.detected",
        "tool.execute.start lookup#c2",
        "tool.execute.end lookup#c2",
    ]
    assert ran == ["weather:1"] * 4  # warn: the call still runs
    result = events[-1]
    assert result.type == "agent.end"
    assert result.status == "completed"
    ends = [e for e in events if e.type == "tool.execute.end"]
    assert [e.result for e in ends[:2]] == ["nothing about weather"] * 2
    assert ends[2].result == f"{NOTE}\n\nnothing about weather"
    # What the model read on the next call says so too.
    tool_message = model.requests[3].messages[-1]
    assert getattr(tool_message, "content", None) == f"{NOTE}\n\nnothing about weather"


async def test_scenario_22_different_arguments_never_trigger() -> None:
    # covers §3.3 scenario 22 (different args do not trigger)
    ran: list[str] = []
    model = ScriptedModel(
        turns({"q": "a"}, {"q": "b"}, {"q": "a", "page": 2}, {"q": "c"}, {"q": "b", "page": 2})
    )
    agent = Agent(
        "a",
        model=model,
        tools=[make_lookup(ran)],
        tool_options=ToolOptions(loop_detection=LoopDetection(threshold=2)),
    )
    events = [e async for e in agent.stream("go")]
    assert "tool.loop.detected" not in brief(events)
    assert len(ran) == 5


async def test_loop_detection_can_fail_the_run_or_be_off() -> None:
    # covers §3.3 scenario 22 (configurable: threshold, action)
    ran: list[str] = []
    same = {"q": "x"}
    agent = Agent(
        "a",
        model=ScriptedModel(turns(same, same, same)),
        tools=[make_lookup(ran)],
        tool_options=ToolOptions(loop_detection=LoopDetection(threshold=2, action="fail")),
    )
    events = [e async for e in agent.stream("go")]
    assert brief(events)[-6:] == [
        "tool.loop.detected",
        "tool.execute.start lookup#c1",
        "tool.execute.error lookup#c1 aborted",
        "step.end 2 tool_calls",
        "agent.error loop_detected",
        "agent.end failed",
    ]
    assert ran == ["x:1"]  # the repeated call did not run
    error = events[-2]
    assert error.type == "agent.error"
    assert "called 'lookup' 2 times with the same arguments" in error.message

    class StopAfterEachRound(LoopHooks):
        def on_roundtrip_complete(self, ctx: RunContext[Any], step: int, usage: Usage) -> bool:
            return step >= 2

    hooked = Agent(
        "h",
        model=ScriptedModel(turns(same, same, same)),
        tools=[make_lookup([])],
        hooks=StopAfterEachRound(),
        tool_options=ToolOptions(loop_detection=LoopDetection(threshold=2, action="fail")),
    )
    failed = await hooked.run("go")
    assert failed.status == "failed"  # a hook does not turn the failure into a stop
    assert failed.error is not None
    assert failed.error.code == "loop_detected"
    off = Agent(
        "b",
        model=ScriptedModel(turns(same, same, same)),
        tools=[make_lookup([])],
        tool_options=ToolOptions(loop_detection=LoopDetection(action="off")),
    )
    assert "tool.loop.detected" not in brief([e async for e in off.stream("go")])
    default = Agent("c", model=ScriptedModel(turns(same, same, same)), tools=[make_lookup([])])
    assert "tool.loop.detected" not in brief([e async for e in default.stream("go")])


async def test_scenario_22_the_count_survives_suspend_and_resume() -> None:
    # covers §3.3 scenario 22 (the count comes from the run's state, not from memory)
    @tool(side_effect_class="side_effecting", needs_approval=True)
    def notify(who: str) -> str:
        """Notify someone."""
        return f"notified {who}"

    same = {"q": "status"}
    script: list[Turn | str] = [
        Turn(tool_calls=[Call("lookup", same, id="c1")]),
        Turn(tool_calls=[Call("lookup", same, id="c2"), Call("notify", {"who": "ops"}, id="n")]),
    ]
    first = Agent(
        "a",
        model=ScriptedModel(script),
        tools=[make_lookup([]), notify],
        tool_options=ToolOptions(loop_detection=LoopDetection()),
    )
    suspended = await first.run("go")
    assert suspended.status == "awaiting_approval"
    assert suspended.state is not None
    saved = run_state_to_json(suspended.state)

    ran: list[str] = []
    model = ScriptedModel([Turn(tool_calls=[Call("lookup", same, id="c3")]), "done"])
    second = Agent(
        "a",
        model=model,
        tools=[make_lookup(ran), notify],
        tool_options=ToolOptions(loop_detection=LoopDetection()),
    )
    resumed = [
        e
        async for e in second.stream(
            run_state_from_json(saved),
            directive=Directive(approvals=[ApprovalDecision(tool_call_id="n", granted=True)]),
        )
    ]
    detected = [e for e in resumed if e.type == "tool.loop.detected"]
    assert [(e.tool_call_id, e.count) for e in detected] == [("c3", 3)]
    assert ran == ["status:1"]


def test_bad_loop_detection_fails_before_any_run() -> None:
    # covers STYLE: a bad config raises UserError naming what is wrong
    with pytest.raises(UserError, match="threshold must be at least 2"):
        LoopDetection(threshold=1)
    with pytest.raises(UserError, match="action must be one of"):
        LoopDetection(action="stop")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="loop_detection must be a LoopDetection"):
        Agent("a", model=ScriptedModel([]), tool_options=ToolOptions(loop_detection=3))  # pyright: ignore[reportArgumentType]
