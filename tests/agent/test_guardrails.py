"""Input and output guardrails: pass, block, warn, rewrite (SPEC C5, A-23..A-25, §3.1 s. 25)."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, GuardrailResult, RunContext, input_guardrail, output_guardrail
from bastion.core import RunFailed, UserError, UserMessage
from bastion.testing import ScriptedModel

from .conftest import brief


@input_guardrail
def no_secrets(ctx: RunContext[Any], text: str) -> GuardrailResult:
    if "password" in text:
        return GuardrailResult.block("mentions a password")
    return GuardrailResult.ok()


async def test_input_guardrail_block_fails_before_any_model_call() -> None:
    # covers A-23, C5, SPEC §3.1 scenario 25
    model = ScriptedModel(["never"])
    agent = Agent("a", model=model, guardrails=[no_secrets])
    events = [e async for e in agent.stream("my password is hunter2")]
    assert brief(events) == [
        "agent.start",
        "guardrail.tripped input block no_secrets",
        "agent.error guardrail_blocked",
        "agent.end failed",
    ]
    assert model.requests == []
    result = await agent.run("the password")
    with pytest.raises(RunFailed, match="mentions a password") as info:
        result.raise_for_status()
    assert info.value.code == "guardrail_blocked"


async def test_input_rewrite_changes_what_the_model_sees_and_warn_continues() -> None:
    # covers C5 (rewrite, warn)
    @input_guardrail
    def redact(ctx: RunContext[Any], text: str) -> GuardrailResult:
        return GuardrailResult.replace(text.replace("4111-1111", "[CARD]"), "card number")

    @input_guardrail(name="shouty")
    async def shouting(ctx: RunContext[Any], text: str) -> dict[str, object]:
        return {"pass": text.upper() != text, "action": "warn", "reason": "all caps"}

    model = ScriptedModel(["ok"])
    agent = Agent("a", model=model, guardrails=[redact, shouting])
    events = [e async for e in agent.stream("PAY WITH 4111-1111")]
    assert [line for line in brief(events) if line.startswith("guardrail")] == [
        "guardrail.tripped input rewrite redact",
        "guardrail.tripped input warn shouty",
    ]
    sent = model.requests[0].messages[-1]
    assert isinstance(sent, UserMessage)
    assert sent.content == "PAY WITH [CARD]"
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"


async def test_output_guardrails_block_and_rewrite() -> None:
    # covers A-24, C5 (output rewrite replaces result.output)
    @output_guardrail
    def polite(ctx: RunContext[Any], output: str) -> GuardrailResult | None:
        if "stupid" in output:
            return GuardrailResult.replace(output.replace("stupid", "unusual"))
        return None

    @output_guardrail
    def no_leaks(ctx: RunContext[Any], output: str) -> bool:
        return "SECRET" not in output

    agent = Agent(
        "a",
        model=ScriptedModel(["a stupid question", "the SECRET is 42"]),
        guardrails=[polite, no_leaks],
    )
    first = await agent.run("q1")
    assert first.output == "a unusual question"
    assert first.text == "a stupid question"  # the raw answer stays in the transcript
    second = await agent.run("q2")
    assert second.status == "failed"
    assert second.error is not None
    assert second.error.code == "guardrail_blocked"
    assert second.output is None


async def test_agentium_and_graphorin_dict_shapes_are_accepted() -> None:
    # covers C5 (dict forms {pass, reason} and {ok, action, message})
    assert GuardrailResult.coerce({"pass": False, "reason": "r"}, "g") == GuardrailResult.block("r")
    assert GuardrailResult.coerce({"ok": True}, "g").passed
    warned = GuardrailResult.coerce({"ok": False, "action": "warn", "message": "m"}, "g")
    assert (warned.action, warned.reason) == ("warn", "m")
    with pytest.raises(UserError, match="'pass' or 'ok'"):
        GuardrailResult.coerce({"verdict": 1}, "g")
    with pytest.raises(UserError, match="GuardrailResult"):
        GuardrailResult.coerce(42, "g")


async def test_plain_functions_are_not_guardrails() -> None:
    def not_decorated(ctx: RunContext[Any], text: str) -> bool:
        return True

    with pytest.raises(UserError, match="@input_guardrail"):
        Agent("a", model=ScriptedModel(["x"]), guardrails=[not_decorated])  # type: ignore[list-item]
