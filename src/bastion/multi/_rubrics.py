"""Rubrics of ``evaluator_optimizer``: what the evaluator is asked, and how its answer is read.

- free-form (:class:`FreeForm`, or a plain string): criteria an LLM evaluator reads; it
  answers ``PASS`` or ``FAIL`` on the first line, then its feedback;
- a pydantic model: the evaluation is parsed into it (JSON text, or the evaluator's typed
  output); ``passed`` (bool) and/or ``score`` (number), ``feedback`` (str) are read;
- :class:`LLMJudge`: an LLM scores the candidate ``SCORE: <n>`` out of ``scale``; it passes
  at ``pass_score``.

A function evaluator may also return an :class:`Evaluation` or a bool. Used by ``_evaluator``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

from bastion.core import UserError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "Evaluation",
    "FreeForm",
    "LLMJudge",
    "Rubric",
    "check_rubric",
    "evaluation_prompt",
    "read_evaluation",
]

_SCORE = re.compile(r"SCORE:\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_VERDICT = re.compile(r"^\W*(PASS|FAIL)\b", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True, slots=True)
class Evaluation:
    """An evaluator's verdict on one candidate."""

    passed: bool
    score: float | None = None
    feedback: str = ""


@dataclass(frozen=True, slots=True)
class FreeForm:
    """Free-form criteria for an LLM evaluator (it answers PASS / FAIL and feedback)."""

    criteria: str


@dataclass(frozen=True, kw_only=True, slots=True)
class LLMJudge:
    """An LLM judge scoring each candidate from 0 to ``scale``; it passes at ``pass_score``."""

    criteria: str
    scale: int = 10
    pass_score: float = 8

    def __post_init__(self) -> None:
        if isinstance(self.scale, bool) or not isinstance(self.scale, int) or self.scale < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"LLMJudge(scale={self.scale!r}): give an int >= 1.")
        if not 0 <= self.pass_score <= self.scale:
            raise UserError(
                f"LLMJudge(pass_score={self.pass_score!r}): give a number from 0 to {self.scale}."
            )


Rubric: TypeAlias = "str | FreeForm | LLMJudge | type[BaseModel]"
CheckedRubric: TypeAlias = "FreeForm | LLMJudge | type[BaseModel]"
"""A rubric as :func:`check_rubric` returns it (a string becomes a :class:`FreeForm`)."""


def _is_model(value: object) -> TypeGuard[type[BaseModel]]:
    """``value`` is a pydantic model class (told by its ``model_validate``, not imported)."""
    return isinstance(value, type) and hasattr(value, "model_validate")


def check_rubric(rubric: object) -> CheckedRubric:
    """The rubric ``rubric`` stands for.

    Raises:
        UserError: Not a rubric.
    """
    if isinstance(rubric, str):
        return FreeForm(rubric)
    if isinstance(rubric, FreeForm | LLMJudge):
        return rubric
    if _is_model(rubric):
        fields = rubric.model_fields
        if "passed" not in fields and "score" not in fields:
            raise UserError(
                f"Rubric model {rubric.__name__} needs a 'passed' (bool) or 'score' (number) field."
            )
        return rubric
    raise UserError(
        f"Unknown rubric {rubric!r}: give criteria (a string or FreeForm), a pydantic model "
        "with passed/score and feedback, or LLMJudge(criteria=...)."
    )


def evaluation_prompt(rubric: CheckedRubric, task: str, candidate: str) -> str:
    """What an LLM evaluator is asked about ``candidate``."""
    head = (
        "Evaluate a candidate answer to this task.\n\n"
        f"Task: {task}\n\n<candidate>\n{candidate}\n</candidate>\n\n"
    )
    if isinstance(rubric, FreeForm):
        criteria = f"Criteria: {rubric.criteria}\n\n" if rubric.criteria else ""
        return f"{head}{criteria}Answer PASS or FAIL on the first line, then your feedback."
    if isinstance(rubric, LLMJudge):
        return (
            f"{head}Criteria: {rubric.criteria}\n\nScore it from 0 to {rubric.scale}: give "
            "your feedback, then the score on the last line as: SCORE: <n>"
        )
    schema = json.dumps(rubric.model_json_schema())
    return f"{head}Answer with a JSON object matching this schema:\n{schema}"


def read_evaluation(rubric: CheckedRubric, answer: object) -> Evaluation:
    """The evaluation an evaluator's ``answer`` gives under ``rubric``.

    Raises:
        UserError: The answer cannot be read as an evaluation.
    """
    if isinstance(answer, Evaluation):
        return answer
    if isinstance(answer, bool):
        return Evaluation(passed=answer)
    if isinstance(rubric, type) and not isinstance(answer, str | rubric):
        raise UserError(f"The evaluator returned {answer!r}, not a {rubric.__name__} or its JSON.")
    if isinstance(rubric, type):
        value = rubric.model_validate_json(_unfenced(answer)) if isinstance(answer, str) else answer
        return _from_model(value)
    text = str(answer)
    if isinstance(rubric, LLMJudge):
        found = _SCORE.findall(text)
        if not found:
            raise UserError(f"The judge's answer has no 'SCORE: <n>': {text[-200:]!r}")
        score = float(found[-1])
        feedback = _SCORE.sub("", text).strip()
        return Evaluation(passed=score >= rubric.pass_score, score=score, feedback=feedback)
    verdict = _VERDICT.match(text)
    if verdict is None:
        raise UserError(f"The evaluator's answer starts with neither PASS nor FAIL: {text[:200]!r}")
    feedback = text[verdict.end() :].strip(" \n:-")
    found = _SCORE.findall(text)
    return Evaluation(
        passed=verdict.group(1).upper() == "PASS",
        score=float(found[-1]) if found else None,
        feedback=feedback,
    )


def _from_model(value: object) -> Evaluation:
    score = getattr(value, "score", None)
    passed = getattr(value, "passed", None)
    if passed is None:
        passed = bool(score is not None and score >= getattr(value, "pass_score", 0.5))
    return Evaluation(
        passed=bool(passed),
        score=float(score) if isinstance(score, int | float) else None,
        feedback=str(getattr(value, "feedback", "") or ""),
    )


def _unfenced(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    return stripped
