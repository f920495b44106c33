"""The parsers of model answers in multi-agent merges, fuzzed: any text gives a clear result.

A judge's ``PICK: <n>``, an evaluator's PASS / FAIL / SCORE, and a team router's member
name are read from free text a model wrote; whatever it wrote, the reader returns a valid
value or raises ``UserError`` (never another exception, never an out-of-range pick).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bastion import Agent
from bastion.core import UserError
from bastion.multi import Team
from bastion.multi._judge import parse_pick
from bastion.multi._rubrics import FreeForm, LLMJudge, read_evaluation
from bastion.testing import ScriptedModel

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)


def _pick_text(before: str, number: int, after: str) -> str:
    return f"{before}PICK: {number}{after}"


def _verdict_text(head: str, rest: str) -> str:
    return head + rest


PICKY = st.builds(_pick_text, TEXT, st.integers(-5, 50), TEXT)
VERDICTS = st.builds(_verdict_text, st.sampled_from(["PASS", "fail ", "SCORE: 7\n"]), TEXT)


@given(st.one_of(TEXT, PICKY), st.integers(1, 10))
def test_a_pick_is_a_candidate_number_or_none(text: str, count: int) -> None:
    number = parse_pick(text, count)
    assert number is None or 1 <= number <= count


@given(st.one_of(TEXT, VERDICTS))
def test_an_evaluation_is_read_or_refused_clearly(text: str) -> None:
    for rubric in (FreeForm("c"), LLMJudge(criteria="c")):
        try:
            evaluation = read_evaluation(rubric, text)
        except UserError:
            continue
        assert isinstance(evaluation.passed, bool)
        assert evaluation.score is None or isinstance(evaluation.score, float)


MEMBERS = [Agent(n, model=ScriptedModel([])) for n in ("Billing", "tech", "general-help")]
TEAM = Team("desk", members=MEMBERS, model=ScriptedModel([]), fallback="tech")


@given(TEXT)
def test_a_route_always_lands_on_a_member(text: str) -> None:
    member: Any = TEAM._pick(text)  # pyright: ignore[reportPrivateUsage]
    assert member in MEMBERS


def test_route_matching_is_case_insensitive_and_falls_back() -> None:
    assert TEAM._pick(" BILLING. ") is MEMBERS[0]  # pyright: ignore[reportPrivateUsage]
    assert TEAM._pick("send it to General-Help please") is MEMBERS[2]  # pyright: ignore[reportPrivateUsage]
    assert TEAM._pick("nobody") is MEMBERS[1]  # pyright: ignore[reportPrivateUsage]
