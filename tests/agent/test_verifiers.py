"""Verifiers: checks of the final answer that send feedback back to the model."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from bastion import Agent, GuardrailResult, RunContext, Usage, UserMessage, output_guardrail
from bastion.agent import Output, Verdict, Verification
from bastion.core import UserError
from bastion.testing import ScriptedModel
from tests.agent.conftest import brief


async def test_scenario_36_verifier_feedback_loops() -> None:
    # covers §3.1 scenario 36 (failing check: feedback as a user message, the loop goes on)
    def cites_a_source(ctx: RunContext[Any], answer: str) -> str | None:
        return None if "http" in answer else "Cite at least one source URL."

    model = ScriptedModel(["Paris.", "https://en.wikipedia.org/wiki/Paris"])
    agent = Agent("a", model=model, output_type=Output(str, verifiers=[cites_a_source]))
    events = [e async for e in agent.stream("Capital of France?")]
    assert brief(events) == [
        "agent.start",
        "step.start 1",
        "text.delta 'Paris.'",
        "text.complete",
        "step.end 1 stop",
        "verifier.result",
        "step.start 2",
        "text.delta 'https://en.wikipedia.org/wiki/Paris'",
        "text.complete",
        "step.end 2 stop",
        "verifier.result",
        "agent.end completed",
    ]
    results = [e for e in events if e.type == "verifier.result"]
    assert [(r.verifier, r.passed, r.round, r.feedback) for r in results] == [
        ("cites_a_source", False, 1, "Cite at least one source URL."),
        ("cites_a_source", True, 2, ""),
    ]
    second = model.requests[1].messages
    assert second[-1] == UserMessage(
        content="Your answer was checked and needs revision: Cite at least one source URL."
    )
    end = events[-1]
    assert end.type == "agent.end"
    assert end.output == "https://en.wikipedia.org/wiki/Paris"
    assert end.usage.requests == 2  # the rejected answer's call counts too
    result = await Agent(
        "b",
        model=ScriptedModel(["x", "http://y"]),
        output_type=Output(str, verifiers=[cites_a_source]),
    ).run("go")
    assert result.steps == 2
    assert result.usage.requests == 2
    assert result.state is not None
    assert result.state.verifier_rounds == 1


async def test_scenario_36_round_cap_then_accept_or_fail() -> None:
    # covers §3.1 scenario 36 (up to max_verifier_rounds)
    def never(ctx: RunContext[Any], answer: str) -> bool:
        return False

    model = ScriptedModel(["one", "two", "three", "four"])
    agent = Agent(
        "a",
        model=model,
        output_type=Output(str, verifiers=Verification(checks=[never], max_rounds=2)),
    )
    result = await agent.run("go")
    assert result.status == "completed"
    assert result.output == "three"  # 1 answer + 2 rounds of feedback, then accepted
    assert len(model.requests) == 3
    assert model.requests[1].messages[-1] == UserMessage(
        content="Your answer was checked and needs revision: "
        "The answer did not pass the check 'never'. Revise it."
    )
    strict = Agent(
        "b",
        model=ScriptedModel(["one", "two"]),
        output_type=Output(
            str, verifiers=Verification(checks=[never], max_rounds=1, on_exhausted="fail")
        ),
    )
    failed = await strict.run("go")
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.code == "verification_failed"
    assert failed.output is None


async def test_scenario_36_a_raising_verifier_counts_as_passed_and_is_reported() -> None:
    # covers §3.1 scenario 36 (a throwing verifier counts as passed)
    def broken(ctx: RunContext[Any], answer: str) -> bool:
        raise RuntimeError("checker offline")

    agent = Agent("a", model=ScriptedModel(["fine"]), output_type=Output(str, verifiers=[broken]))
    events = [e async for e in agent.stream("go")]
    (result,) = [e for e in events if e.type == "verifier.result"]
    assert result.passed
    assert result.error == "RuntimeError: checker offline"
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"
    assert events[-1].output == "fine"


async def test_async_and_object_verifiers_report_their_usage() -> None:
    # covers §3.1 scenario 36 (every verifier runs; all feedback in one message; usage counts)
    class Judge:
        name = "judge"

        async def verify(self, ctx: RunContext[Any], answer: str) -> Verdict:
            spent = Usage(prompt_tokens=7, completion_tokens=3)
            if "2" in answer:
                return Verdict(passed=True, usage=spent, model="test:judge")
            return Verdict(passed=False, feedback="Give the number.", usage=spent)

    async def short(ctx: RunContext[Any], answer: str) -> bool | str:
        return len(answer) < 10 or "Be brief."

    model = ScriptedModel(["one plus one is two", "2"])
    result = await Agent("a", model=model, output_type=Output(str, verifiers=[Judge(), short])).run(
        "1+1?"
    )
    assert result.output == "2"
    assert model.requests[1].messages[-1] == UserMessage(
        content="Your answer was checked and needs revision:\n- Give the number.\n- Be brief."
    )
    assert result.usage_by_model["verifier:judge"] == Usage(prompt_tokens=7, completion_tokens=3)
    assert result.usage_by_model["test:judge"] == Usage(prompt_tokens=7, completion_tokens=3)
    model_usage = result.usage_by_model["test:scripted"]
    assert result.usage.prompt_tokens == model_usage.prompt_tokens + 14


class Answer(BaseModel):
    city: str


async def test_verifiers_see_the_parsed_output_and_guardrails_see_only_the_accepted_one() -> None:
    # covers §3.1 scenario 36 with scenario 26 (order: parse, verify, output guardrails)
    seen_by_verifier: list[object] = []
    seen_by_guardrail: list[object] = []

    def is_capital(ctx: RunContext[Any], answer: Answer) -> str | None:
        seen_by_verifier.append(answer)
        return None if answer.city == "Paris" else f"{answer.city} is not the capital."

    @output_guardrail
    def shout(ctx: RunContext[Any], answer: Answer) -> GuardrailResult:
        seen_by_guardrail.append(answer)
        return GuardrailResult.replace(Answer(city=answer.city.upper()))

    model = ScriptedModel(['{"city": "Lyon"}', "not json", '{"city": "Paris"}'])
    agent = Agent(
        "a",
        model=model,
        output_type=Output(Answer, mode="prompted", verifiers=[is_capital]),
        guardrails=[shout],
    )
    result = await agent.run("Capital of France?")
    assert result.status == "completed"
    assert seen_by_verifier == [Answer(city="Lyon"), Answer(city="Paris")]
    assert seen_by_guardrail == [Answer(city="Paris")]
    assert result.output == Answer(city="PARIS")


def test_bad_verifier_configuration_fails_before_any_run() -> None:
    # covers STYLE: a bad config raises UserError naming what is wrong
    with pytest.raises(UserError, match="max_rounds must be an int >= 0"):
        Verification(checks=[], max_rounds=-1)
    with pytest.raises(UserError, match="neither a function"):
        Agent("a", model=ScriptedModel([]), output_type=Output(str, verifiers=[42]))  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="verifiers must be a list"):
        Agent("a", model=ScriptedModel([]), output_type=Output(str, verifiers="check"))  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="on_exhausted"):
        Verification(checks=[], on_exhausted="retry")  # pyright: ignore[reportArgumentType]
