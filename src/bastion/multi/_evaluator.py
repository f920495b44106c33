"""``evaluator_optimizer``: a generator writes, an evaluator judges, until it passes or the cap.

Each iteration: the generator gets the task (and, after the first, the evaluator's feedback
on its last candidate); the evaluator judges the candidate against the rubric; the loop
stops at the first passing evaluation or after ``max_iterations``. ``select="best_score"``
returns the highest-scoring candidate instead of the last one.

Rubrics (``_rubrics``): free-form criteria for an LLM evaluator (a string or
:class:`FreeForm`), a pydantic model the evaluation is parsed into (with ``passed`` and/or
``score``, and ``feedback``), or an :class:`LLMJudge` that scores on a scale.

With a store and a ``run_id`` every finished iteration is journaled (``_composite``) before
the next begins: running the loop again with the same ``run_id`` (after a crash, in
another process) takes the journaled iterations and goes on from the next one.
Generator and evaluator calls run through ``_multi_child.run_child``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from bastion.core import RunFailed, SystemClock, Usage, UserError, new_id

from ._composite import CompositeLog, Part
from ._fanout_types import FanOutChild
from ._multi_child import ChildHandle, run_child
from ._rubrics import (
    CheckedRubric,
    Evaluation,
    Rubric,
    check_rubric,
    evaluation_prompt,
    read_evaluation,
)

if TYPE_CHECKING:
    from bastion.agent import AgentLike
    from bastion.core import JsonObject
    from bastion.stores import Stores

__all__ = ["EvaluatorResult", "Generator", "Evaluator", "Iteration", "evaluator_optimizer"]

GeneratorFunction: TypeAlias = Callable[[str, "str | None"], object]
"""``fn(task, feedback)``: the candidate (its ``str()``), or an awaitable of it."""
EvaluatorFunction: TypeAlias = Callable[[str, int], object]
"""``fn(candidate, iteration)``: an Evaluation, a bool or the rubric's model (or an awaitable)."""
Generator: TypeAlias = "AgentLike | GeneratorFunction"
"""An agent, or ``fn(task, feedback)`` (sync or async) returning the candidate."""
Evaluator: TypeAlias = "AgentLike | EvaluatorFunction"
"""An agent, or ``fn(candidate, iteration)``: an Evaluation, a bool or the rubric's model."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Iteration:
    """One generator → evaluator round.

    Attributes:
        number: From 1.
        candidate: What the generator wrote.
        evaluation: What the evaluator said.
        usage: What both spent.
        restored: Read back from the journal of an earlier attempt.
    """

    number: int
    candidate: str
    evaluation: Evaluation
    usage: Usage
    restored: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class EvaluatorResult:
    """The outcome of an evaluator-optimizer loop.

    Attributes:
        output: The selected candidate (the passing one, else per ``select``).
        passed: An evaluation passed.
        iterations: Every iteration, in order.
        chosen: The iteration whose candidate is ``output``.
        usage: Usage of every generator and evaluator call.
        run_id: The loop's journal run id (``None`` without a store).
    """

    output: str
    passed: bool
    iterations: tuple[Iteration, ...]
    chosen: Iteration
    usage: Usage
    run_id: str | None = None


async def evaluator_optimizer(
    *,
    generator: Generator,
    evaluator: Evaluator,
    task: str,
    max_iterations: int,
    rubric: Rubric = "",
    select: Literal["last", "best_score"] = "last",
    store: Stores | None = None,
    run_id: str | None = None,
) -> EvaluatorResult:
    """Generate, evaluate and regenerate with feedback until a pass or ``max_iterations``.

    Args:
        generator: An agent, or ``fn(task, feedback)`` (sync or async) returning text.
        evaluator: An agent (an LLM evaluator, asked with the rubric), or
            ``fn(candidate, iteration)`` returning an :class:`Evaluation`, a bool, or an
            instance of the rubric's model.
        task: What the generator is asked.
        max_iterations: The cap (required, >= 1).
        rubric: Free-form criteria (a string or :class:`FreeForm`), a pydantic model the
            evaluation is parsed into, or an :class:`LLMJudge`.
        select: With no passing candidate: the ``last`` one, or the one with the
            ``best_score`` (the earliest on a tie). A passing candidate always wins.
        store: Journal every iteration here (opened by the caller).
        run_id: The loop's id in the store; running again with it resumes after the
            journaled iterations.

    Raises:
        UserError: An option is invalid (nothing has been run).
    """
    _check(generator, evaluator, task, max_iterations, select)
    checked = check_rubric(rubric)
    log = None
    if store is not None:
        log = await CompositeLog.open(
            store,
            run_id or new_id("evalopt"),
            name="evaluator_optimizer",
            kind="evaluator_optimizer",
            metadata={"task": task, "max_iterations": max_iterations},
        )
    iterations = _restored(log)
    feedback = iterations[-1].evaluation.feedback if iterations else None
    while len(iterations) < max_iterations and not any(i.evaluation.passed for i in iterations):
        number = len(iterations) + 1
        candidate, spent = await _generate(generator, task, feedback, number)
        evaluation, judged = await _evaluate(evaluator, checked, task, candidate, number)
        iteration = Iteration(
            number=number, candidate=candidate, evaluation=evaluation, usage=spent + judged
        )
        if log is not None:
            await log.record(_part(iteration), model="evaluator_optimizer")
        iterations.append(iteration)
        feedback = evaluation.feedback
    return await _finish(log, tuple(iterations), select)


def _check(generator: object, evaluator: object, task: object, cap: object, select: object) -> None:
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise UserError(f"evaluator_optimizer: max_iterations must be an int >= 1, got {cap!r}.")
    if not isinstance(task, str) or not task:
        raise UserError(f"evaluator_optimizer: task must be a non-empty string, got {task!r}.")
    for role, value in (("generator", generator), ("evaluator", evaluator)):
        if not callable(getattr(value, "stream", None)) and not callable(value):
            raise UserError(
                f"evaluator_optimizer: {role} must be an agent or a function, got {value!r}."
            )
    if select not in ("last", "best_score"):
        raise UserError(f"evaluator_optimizer: select={select!r}; use 'last' or 'best_score'.")


async def _finish(
    log: CompositeLog | None, iterations: tuple[Iteration, ...], select: str
) -> EvaluatorResult:
    passing = [i for i in iterations if i.evaluation.passed]
    if passing:
        chosen = passing[0]
    elif select == "best_score":
        chosen = max(
            iterations,
            key=lambda i: (
                i.evaluation.score if i.evaluation.score is not None else float("-inf"),
                -i.number,
            ),
        )
    else:
        chosen = iterations[-1]
    usage = Usage()
    for iteration in iterations:
        usage += iteration.usage
    if log is not None:
        await log.finish("completed", chosen.candidate, usage)
    return EvaluatorResult(
        output=chosen.candidate,
        passed=bool(passing),
        iterations=iterations,
        chosen=chosen,
        usage=usage,
        run_id=log.run_id if log is not None else None,
    )


async def _ask(agent: AgentLike, prompt: str) -> tuple[str, object, Usage]:
    """One agent call through ``run_child``: its text, output and usage."""
    outcome = await run_child(
        FanOutChild(agent, prompt), 0, ChildHandle(), None, None, SystemClock(), {}
    )
    if not outcome.ok:
        why = outcome.error.message if outcome.error else outcome.status
        raise RunFailed(
            f"evaluator_optimizer: agent {agent.name!r} did not answer: {why}", code="agent_failed"
        )
    return outcome.text, outcome.output, outcome.usage


async def _settled(value: object) -> object:
    """A function's return value, awaited when it is awaitable (an async function's)."""
    if inspect.isawaitable(value):
        return await value
    return value


async def _generate(
    generator: Generator, task: str, feedback: str | None, number: int
) -> tuple[str, Usage]:
    if hasattr(generator, "stream"):
        agent: AgentLike = generator  # pyright: ignore[reportAssignmentType]
        prompt = (
            task
            if feedback is None
            else f"{task}\n\nFeedback on attempt {number - 1}:\n{feedback}\n\nImprove it."
        )
        text, output, usage = await _ask(agent, prompt)
        return (output if isinstance(output, str) else text), usage
    function: GeneratorFunction = generator  # pyright: ignore[reportAssignmentType]
    return str(await _settled(function(task, feedback))), Usage()


async def _evaluate(
    evaluator: Evaluator,
    rubric: CheckedRubric,
    task: str,
    candidate: str,
    number: int,
) -> tuple[Evaluation, Usage]:
    if hasattr(evaluator, "stream"):
        agent: AgentLike = evaluator  # pyright: ignore[reportAssignmentType]
        text, output, usage = await _ask(agent, evaluation_prompt(rubric, task, candidate))
        return read_evaluation(
            rubric, output if output is not None and not isinstance(output, str) else text
        ), usage
    function: EvaluatorFunction = evaluator  # pyright: ignore[reportAssignmentType]
    return read_evaluation(rubric, await _settled(function(candidate, number))), Usage()


def _part(iteration: Iteration) -> Part:
    evaluation = iteration.evaluation
    record: JsonObject = {
        "candidate": iteration.candidate,
        "passed": evaluation.passed,
        "score": evaluation.score,
        "feedback": evaluation.feedback,
    }
    key = f"iteration:{iteration.number}"
    return Part(
        key=key, name=key, record=record, usage=iteration.usage, is_error=not evaluation.passed
    )


def _restored(log: CompositeLog | None) -> list[Iteration]:
    if log is None:
        return []
    iterations: list[Iteration] = []
    while (part := log.done.get(f"iteration:{len(iterations) + 1}")) is not None:
        record = part.record
        score = record.get("score")
        evaluation = Evaluation(
            passed=bool(record.get("passed")),
            score=float(score) if isinstance(score, int | float) else None,
            feedback=str(record.get("feedback") or ""),
        )
        iterations.append(
            Iteration(
                number=len(iterations) + 1,
                candidate=str(record.get("candidate")),
                evaluation=evaluation,
                usage=part.usage,
                restored=True,
            )
        )
    return iterations
