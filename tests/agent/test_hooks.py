"""AgentHooks and LoopHooks (A-17..A-22, SPEC §3.3 scenarios 13, 14)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bastion import Agent, AgentHooks, RunContext, RunResult, SkipTool, tool
from bastion.agent import LoopHooks
from bastion.core import Message, ModelResponse, SystemMessage, Usage
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="read_only")
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


class Recorder(AgentHooks):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def before_run(self, ctx: RunContext[Any]) -> None:
        self.calls.append("before_run")

    async def after_run(self, ctx: RunContext[Any], result: RunResult[Any]) -> None:
        self.calls.append(f"after_run {result.status} {result.output}")

    def on_tool_call(self, ctx: RunContext[Any], tool_name: str, args: Mapping[str, Any]) -> None:
        self.calls.append(f"on_tool_call {tool_name} {dict(args)}")

    def on_error(self, ctx: RunContext[Any], error: BaseException) -> None:
        self.calls.append(f"on_error {type(error).__name__}")


async def test_agent_hooks_observe_the_run() -> None:
    #
    hooks = Recorder()
    model = ScriptedModel([Turn(tool_calls=[Call("lookup", {"key": "k"})]), "done"])
    await Agent("a", model=model, tools=[lookup], hooks=hooks).run("go")
    assert hooks.calls == [
        "before_run",
        "on_tool_call lookup {'key': 'k'}",
        "after_run completed done",
    ]


async def test_on_error_fires_for_a_failed_run_and_after_run_does_not() -> None:
    # covers A-17 (after_run on success only)
    hooks = Recorder()
    result = await Agent("a", model=ScriptedModel([]), hooks=hooks).run("go")
    assert result.status == "failed"
    assert hooks.calls == ["before_run", "on_error ScriptExhausted"]


class Loop(LoopHooks):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def before_llm_call(
        self, ctx: RunContext[Any], messages: list[Message], step: int
    ) -> list[Message] | None:
        self.seen.append(f"before_llm_call {step} {len(messages)}")
        if step == 1:
            return [SystemMessage(content="replaced"), *messages[1:]]
        return None

    async def after_llm_call(
        self, ctx: RunContext[Any], response: ModelResponse, step: int
    ) -> None:
        self.seen.append(f"after_llm_call {step} {response.finish_reason}")

    def before_tool_exec(
        self, ctx: RunContext[Any], tool_name: str, args: Mapping[str, Any]
    ) -> SkipTool | None:
        if args.get("key") == "mocked":
            return SkipTool(result="mock")
        return None

    def after_tool_exec(self, ctx: RunContext[Any], tool_name: str, result: str) -> str | None:
        return result.upper() if result.startswith("value") else None

    def on_roundtrip_complete(self, ctx: RunContext[Any], step: int, usage: Usage) -> bool:
        self.seen.append(f"roundtrip {step}")
        return False


async def test_loop_hooks_replace_skip_and_rewrite() -> None:
    # covers, SPEC §3.3 scenario 14
    hooks = Loop()
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("lookup", {"key": "mocked"}), Call("lookup", {"key": "real"})]),
            "done",
        ]
    )
    result = await Agent(
        "a", model=model, instructions="original", tools=[lookup], hooks=hooks
    ).run("go")
    assert model.requests[0].messages[0] == SystemMessage(content="replaced")
    assert [c.result for c in result.tool_calls] == ["mock", "VALUE OF REAL"]
    assert hooks.seen == [
        "before_llm_call 1 2",
        "after_llm_call 1 tool_calls",
        "roundtrip 1",
        "before_llm_call 2 5",
        "after_llm_call 2 stop",
    ]
    assert result.messages[0] == SystemMessage(content="original")  # replacement is per call


async def test_on_roundtrip_complete_can_stop_the_run() -> None:
    # covers A-22, C3 (stopped), SPEC §3.3 scenario 13
    class Budget(LoopHooks):
        def on_roundtrip_complete(self, ctx: RunContext[Any], step: int, usage: Usage) -> bool:
            return usage.total_tokens > 0

    model = ScriptedModel(
        [Turn(text="checking", tool_calls=[Call("lookup", {"key": "k"})]), "unused"]
    )
    result = await Agent("a", model=model, tools=[lookup], hooks=Budget()).run("go")
    assert result.status == "stopped"
    assert result.stop_reason == "hook"
    assert result.output == "checking"
    assert len(model.requests) == 1


async def test_a_failing_hook_fails_the_run_with_its_error() -> None:
    class Broken(AgentHooks):
        def before_run(self, ctx: RunContext[Any]) -> None:
            raise ValueError("hook bug")

    result = await Agent("a", model=ScriptedModel(["x"]), hooks=Broken()).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.message == "ValueError: hook bug"
