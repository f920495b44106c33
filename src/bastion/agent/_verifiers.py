"""Verifiers: checks run on the final answer before the run accepts it.

A verifier is a function (sync or async) of ``(ctx, output)``, or an object with such a
``verify`` method. It returns a :class:`Verdict`, a bool, a string or ``None``:

- ``None`` or ``True``: passed;
- ``False``: failed, with a generic feedback;
- a string: failed, the string is the feedback the model reads;
- ``Verdict(passed=..., feedback=..., usage=...)``: the full form (a verifier that asks a
  model reports that call's usage, which counts in the run's usage).

A verifier that raises counts as passed: a broken check must not trap the run in a loop of
rounds; its ``verifier.result`` event carries the error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from bastion.core import RunContext, Usage, UserError

__all__ = [
    "Verdict",
    "Verification",
    "VerifierCheck",
    "VerifierLike",
    "checked",
    "verifier_name",
]


@dataclass(kw_only=True, slots=True, frozen=True)
class Verdict:
    """A verifier's judgement of the final answer.

    Attributes:
        passed: Whether the answer is accepted.
        feedback: What the model is told when it is not (appended as a user message).
        usage: Tokens the verifier spent (e.g. an LLM judge); added to the run's usage.
        model: The model ``usage`` is attributed to (default ``verifier:<name>``).
    """

    passed: bool
    feedback: str = ""
    usage: Usage | None = None
    model: str | None = None

    @classmethod
    def ok(cls) -> Verdict:
        """Passed."""
        return cls(passed=True)

    @classmethod
    def fail(cls, feedback: str) -> Verdict:
        """Failed; the model reads ``feedback`` and answers again."""
        return cls(passed=False, feedback=feedback)


@runtime_checkable
class VerifierCheck(Protocol):
    """A verifier as an object: ``name`` (optional) and a sync or async ``verify``."""

    def verify(self, ctx: RunContext[Any], output: Any, /) -> object:
        """Judge ``output``; returns what a verifier function returns (see the module)."""
        ...


VerifierLike: TypeAlias = Callable[[RunContext[Any], Any], object] | VerifierCheck


@dataclass(kw_only=True, slots=True, frozen=True)
class Verification:
    """The verifiers of an agent and how many feedback rounds they may ask for.

    Example::

        def cites_a_source(ctx, answer):
            return None if "http" in answer else "Cite at least one source URL."

        agent = Agent("a", model=model,
                      verifiers=Verification(checks=[cites_a_source], max_rounds=2))

    ``Output(T, verifiers=[...])`` is short for ``Verification(checks=[...])``.

    Attributes:
        checks: The verifiers, run in order on every final answer.
        max_rounds: How many times failing feedback may send the model back (each round is
            one more model call). Once spent, ``on_exhausted`` decides.
        on_exhausted: ``accept`` (default): the last answer is the output; ``fail``: the run
            fails with code ``verification_failed``.
    """

    checks: Sequence[VerifierLike]
    max_rounds: int = 2
    on_exhausted: Literal["accept", "fail"] = "accept"

    def __post_init__(self) -> None:
        checks: object = self.checks
        if isinstance(checks, (str, bytes)) or not isinstance(checks, Sequence):
            raise UserError(f"Verification.checks must be a list of verifiers, got {checks!r}.")
        object.__setattr__(self, "checks", tuple(self.checks))
        for check in self.checks:
            if not (callable(check) or isinstance(check, VerifierCheck)):
                raise UserError(
                    f"Verifier {check!r} is neither a function of (ctx, output) nor an "
                    "object with a verify(ctx, output) method."
                )
        rounds: object = self.max_rounds
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
            raise UserError(f"Verification.max_rounds must be an int >= 0, got {rounds!r}.")
        if self.on_exhausted not in ("accept", "fail"):
            raise UserError(
                f"Verification.on_exhausted must be 'accept' or 'fail', got {self.on_exhausted!r}."
            )

    @classmethod
    def of(cls, value: Verification | Sequence[VerifierLike] | None) -> Verification | None:
        """An ``Output``'s ``verifiers`` as a :class:`Verification` (``None``: none)."""
        if value is None or isinstance(value, Verification):
            return value
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"verifiers must be a list of verifiers or a Verification, got {value!r}."
            )
        return cls(checks=value) if value else None


def verifier_name(check: VerifierLike) -> str:
    """The name events and usage use for ``check``."""
    name = getattr(check, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(check, "__name__", None) or type(check).__name__


async def checked(check: VerifierLike, ctx: RunContext[object], output: object) -> Verdict:
    """Run one verifier and normalise its answer (exceptions propagate to the caller)."""
    judge: Callable[[RunContext[Any], Any], object] = (
        check.verify if isinstance(check, VerifierCheck) else check
    )
    value = judge(ctx, output)
    if inspect.isawaitable(value):
        value = await value
    return _verdict(value, verifier_name(check))


def _verdict(value: object, name: str) -> Verdict:
    if value is None or value is True:
        return _PASSED
    if value is False:
        return Verdict.fail(f"The answer did not pass the check {name!r}. Revise it.")
    if isinstance(value, str):
        return Verdict.fail(value) if value else _PASSED
    if isinstance(value, Verdict):
        return value
    raise UserError(
        f"Verifier {name!r} returned {value!r}; return a Verdict, a bool, a feedback string "
        "or None."
    )


_PASSED = Verdict(passed=True)
