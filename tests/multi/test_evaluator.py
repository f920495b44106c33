"""``evaluator_optimizer``: generator → evaluator loop (Graphorin §3.1 scenario 32, G-04, G-81)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from bastion import Agent
from bastion.core import ModelRequest, Overloaded, RunFailed, UserError, UserMessage
from bastion.multi import Evaluation, FreeForm, LLMJudge, evaluator_optimizer
from bastion.stores import open_store
from bastion.testing import FunctionModel, ScriptedModel, Turn


def prompt_of(request: ModelRequest) -> str:
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    assert isinstance(last.content, str)
    return last.content


class Loose(BaseModel):
    feedback: str


class Review(BaseModel):
    score: float
    passed: bool
    feedback: str = ""


@pytest.mark.parametrize("cap", [0, -1])
async def test_max_iterations_below_one_raises(cap: int) -> None:
    # covers G-81, §3.1 scenario 32 (iteration cap required; < 1 raises)
    with pytest.raises(UserError, match="max_iterations must be an int >= 1"):
        await evaluator_optimizer(
            generator=lambda task, feedback: "x",
            evaluator=lambda c, i: True,
            task="t",
            max_iterations=cap,
        )


async def test_it_stops_on_the_first_pass_with_free_form_criteria() -> None:
    # covers G-04, G-81, §3.1 scenario 32 (stops on the first passing evaluation)
    writer = Agent("writer", model=ScriptedModel(["draft one", "draft two", "never"]))
    critic_prompts: list[str] = []

    def critique(request: ModelRequest) -> str:
        critic_prompts.append(prompt_of(request))
        return "FAIL: too short" if len(critic_prompts) == 1 else "PASS\nGood."

    critic = Agent("critic", model=FunctionModel(critique))
    result = await evaluator_optimizer(
        generator=writer,
        evaluator=critic,
        rubric="At least two drafts deep.",
        task="Write a slogan.",
        max_iterations=5,
    )
    assert result.passed
    assert result.output == "draft two"
    assert [i.evaluation.passed for i in result.iterations] == [False, True]
    assert result.iterations[0].evaluation.feedback == "too short"
    assert "Criteria: At least two drafts deep." in critic_prompts[0]
    assert "<candidate>\ndraft one\n</candidate>" in critic_prompts[0]
    writer_model = writer.config.model
    assert isinstance(writer_model, ScriptedModel)
    assert "Feedback on attempt 1:\ntoo short" in prompt_of(writer_model.requests[1])
    assert result.usage.requests == 4


async def test_it_stops_at_the_cap_and_best_score_returns_the_highest_scoring_candidate() -> None:
    # covers G-81, §3.1 scenario 32 (cap; best_score selection)
    drafts = iter(["a", "b", "c"])
    scores = {"a": 3, "b": 7, "c": 5}

    result = await evaluator_optimizer(
        generator=lambda task, feedback: next(drafts),
        evaluator=lambda candidate, n: Evaluation(
            passed=False, score=scores[candidate], feedback="more"
        ),
        task="t",
        max_iterations=3,
        select="best_score",
    )
    assert not result.passed
    assert len(result.iterations) == 3
    assert result.output == "b"
    assert result.chosen.number == 2

    drafts = iter(["a", "b", "c"])
    last = await evaluator_optimizer(
        generator=lambda task, feedback: next(drafts),
        evaluator=lambda candidate, n: Evaluation(passed=False, score=scores[candidate]),
        task="t",
        max_iterations=3,
    )
    assert last.output == "c"


async def test_a_pydantic_model_rubric_reads_a_structured_evaluation() -> None:
    # covers G-81 (schema rubric)
    critic = Agent(
        "critic",
        model=ScriptedModel(
            [
                '{"score": 0.4, "passed": false, "feedback": "vague"}',
                '```json\n{"score": 0.9, "passed": true}\n```',
            ]
        ),
    )

    async def generate(task: str, feedback: str | None) -> str:
        return "v1" if feedback is None else f"v2 ({feedback})"

    result = await evaluator_optimizer(
        generator=generate, evaluator=critic, rubric=Review, task="t", max_iterations=3
    )
    assert result.output == "v2 (vague)"
    assert [i.evaluation.score for i in result.iterations] == [0.4, 0.9]

    direct = await evaluator_optimizer(
        generator=generate,
        evaluator=lambda c, n: Review(score=0.8, passed=True),
        rubric=Review,
        task="t",
        max_iterations=2,
    )
    assert direct.passed


async def test_an_llm_judge_rubric_scores_and_passes_at_the_threshold() -> None:
    # covers G-81 (LLM judge)
    judge_prompts: list[str] = []

    def judge(request: ModelRequest) -> str:
        judge_prompts.append(prompt_of(request))
        return "Decent.\nSCORE: 6" if len(judge_prompts) == 1 else "Great.\nSCORE: 9"

    result = await evaluator_optimizer(
        generator=lambda task, feedback: "x" if feedback is None else "y",
        evaluator=Agent("judge", model=FunctionModel(judge)),
        rubric=LLMJudge(criteria="Clarity.", scale=10, pass_score=8),
        task="t",
        max_iterations=4,
    )
    assert [i.evaluation.score for i in result.iterations] == [6.0, 9.0]
    assert result.output == "y"
    assert "Score it from 0 to 10" in judge_prompts[0]


async def test_unreadable_evaluations_and_bad_rubrics_are_refused() -> None:
    with pytest.raises(UserError, match="neither PASS nor FAIL"):
        await evaluator_optimizer(
            generator=lambda t, f: "x",
            evaluator=Agent("critic", model=ScriptedModel(["maybe"])),
            rubric=FreeForm("ok"),
            task="t",
            max_iterations=1,
        )
    with pytest.raises(UserError, match="needs a 'passed'"):
        await evaluator_optimizer(
            generator=lambda t, f: "x",
            evaluator=lambda c, n: True,
            rubric=Loose,
            task="t",
            max_iterations=1,
        )
    with pytest.raises(RunFailed, match="did not answer"):
        await evaluator_optimizer(
            generator=Agent(
                "writer", model=ScriptedModel([Turn(error=Overloaded("down"))]), retry=None
            ),
            evaluator=lambda c, n: True,
            task="t",
            max_iterations=1,
        )


async def test_every_iteration_is_journaled_and_a_rerun_resumes_after_them(tmp_path: Path) -> None:
    # covers G-81 (iterations journaled; a re-run does not redo finished iterations)
    generated: list[str] = []

    def generate(task: str, feedback: str | None) -> str:
        generated.append(f"draft {len(generated) + 1}")
        return generated[-1]

    verdicts = iter([False, False])

    def evaluate(candidate: str, n: int) -> bool:
        return next(verdicts)

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with open_store(url) as stores:
        first = await evaluator_optimizer(
            generator=generate,
            evaluator=evaluate,
            task="t",
            max_iterations=2,
            store=stores,
            run_id="loop-1",
        )
        entries = await stores.journal.read("loop-1")
    assert first.output == "draft 2"
    assert [e.kind for e in entries] == ["run_started", "tool_result", "tool_result", "run_ended"]
    async with open_store(url) as stores:
        again = await evaluator_optimizer(
            generator=generate,
            evaluator=evaluate,
            task="t",
            max_iterations=2,
            store=stores,
            run_id="loop-1",
        )
    assert generated == ["draft 1", "draft 2"]  # nothing generated again
    assert [i.restored for i in again.iterations] == [True, True]
    assert again.output == "draft 2"
