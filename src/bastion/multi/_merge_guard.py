"""The merge guard of a judge merge: each child's trust, and the judge's position bias.

Before a judge sees the children's outputs, :meth:`MergeGuard.assess` scores each child:

- provenance: a child that read untrusted content (a tool output from outside, such as a
  web page or an MCP server) loses ``untrusted_penalty``;
- instructions: an output in which the security package's injection catalogue
  (``bastion.security.find_injections``) finds instruction-like text loses
  ``instruction_penalty``, and is *excluded* from the judge's candidates (``on_instructions=
  "exclude"``, the default) or shown to the judge only as quoted data between the
  untrusted-data markers (``"quote"``).

A candidate whose score is below ``min_trust`` is excluded as well. Every candidate that is
still shown but is not fully trusted is quoted as data. So a child whose output carries
injected instructions cannot steer the merge: the judge never reads them as instructions.

Bias: with ``check_position`` the judge is asked twice, the candidates in registration order
and reversed; when it picks a different child each time (it follows a position, not the
content), :class:`GuardReport` says ``position_bias=True`` and the merge keeps the more
trusted of the two picks (the earlier-registered on a tie).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bastion.core import UserError
from bastion.security import find_injections

if TYPE_CHECKING:
    from ._fanout_types import ChildResult

__all__ = ["GuardReport", "MergeGuard", "TrustScore"]


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustScore:
    """How far the merge trusts one child's output.

    Attributes:
        child: The child's name.
        score: From 0 (no trust) to 1 (full trust).
        reasons: Why it lost trust (``untrusted_source``, ``instructions:<pattern id>``).
        excluded: The judge did not see it.
        quoted: The judge saw it only as quoted data.
    """

    child: str
    score: float
    reasons: tuple[str, ...] = ()
    excluded: bool = False
    quoted: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class GuardReport:
    """What the merge guard found.

    Attributes:
        trust: Each completed child's trust score, in registration order.
        position_bias: The judge picked by position (the position-swap check disagreed).
        picks: The children the judge picked in registration order and reversed (the
            second is ``None`` when the check did not run).
    """

    trust: tuple[TrustScore, ...]
    position_bias: bool = False
    picks: tuple[str | None, str | None] = (None, None)

    @property
    def excluded(self) -> tuple[str, ...]:
        """The children the judge did not see."""
        return tuple(t.child for t in self.trust if t.excluded)

    def score(self, child: str) -> float:
        """The trust score of ``child`` (0 when it has none: it did not complete)."""
        return next((t.score for t in self.trust if t.child == child), 0.0)


@dataclass(frozen=True, kw_only=True, slots=True)
class MergeGuard:
    """Trust scoring and bias detection for ``Judge`` merges (see the module docstring).

    Attributes:
        untrusted_penalty: Trust lost by a child that read untrusted content.
        instruction_penalty: Trust lost by an output with instruction-like text.
        on_instructions: ``exclude`` such outputs from the judge, or ``quote`` them as data.
        min_trust: Candidates scoring below this are excluded.
        check_position: Ask the judge a second time with the candidates reversed.
    """

    untrusted_penalty: float = 0.3
    instruction_penalty: float = 0.6
    on_instructions: Literal["exclude", "quote"] = "exclude"
    min_trust: float = 0.0
    check_position: bool = True

    def __post_init__(self) -> None:
        for name in ("untrusted_penalty", "instruction_penalty", "min_trust"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise UserError(f"MergeGuard({name}={value!r}): give a number from 0 to 1.")
        if self.on_instructions not in ("exclude", "quote"):
            raise UserError(
                f"MergeGuard(on_instructions={self.on_instructions!r}): use 'exclude' or 'quote'."
            )

    def assess(self, children: tuple[ChildResult, ...], texts: dict[str, str]) -> GuardReport:
        """Score the completed children whose rendered outputs are ``texts`` (by name)."""
        scores: list[TrustScore] = []
        for child in children:
            if not child.ok:
                continue
            reasons: list[str] = []
            score = 1.0
            if child.untrusted:
                score -= self.untrusted_penalty
                reasons.append("untrusted_source")
            hits = find_injections(texts[child.name])
            if hits:
                score -= self.instruction_penalty
                reasons.extend(sorted({f"instructions:{h.pattern_id}" for h in hits}))
            score = max(score, 0.0)
            excluded = score < self.min_trust or (bool(hits) and self.on_instructions == "exclude")
            scores.append(
                TrustScore(
                    child=child.name,
                    score=round(score, 4),
                    reasons=tuple(reasons),
                    excluded=excluded,
                    quoted=not excluded and bool(reasons),
                )
            )
        return GuardReport(trust=tuple(scores))
