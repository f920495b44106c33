"""Input and output guardrails with pass / block / warn / rewrite.

A guardrail is a function (sync or async) of ``(ctx, value)``: the input text for input
guardrails, the parsed output for output guardrails. It may return a
:class:`GuardrailResult`, a bool (False blocks), None (passes), or the dict shapes
``{"pass": bool, "reason": str}`` / ``{"ok": bool, "action": ..., "message": ...}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, overload

from bastion.core import RunContext, UserError

from ._hooks import maybe_await
from ._narrow import as_json_object

__all__ = [
    "GuardrailResult",
    "InputGuardrail",
    "OutputGuardrail",
    "input_guardrail",
    "output_guardrail",
]

GuardrailAction: TypeAlias = Literal["block", "warn", "rewrite"]
GuardrailFunction: TypeAlias = Callable[[RunContext[Any], Any], object]


@dataclass(kw_only=True, slots=True, frozen=True)
class GuardrailResult:
    """A guardrail's verdict.

    Attributes:
        passed: True when nothing is wrong.
        action: When not passed: ``block`` ends the run, ``warn`` only reports, ``rewrite``
            replaces the value with ``rewrite``.
        reason: Why, in words for a human.
        rewrite: The replacement value for ``rewrite``.
    """

    passed: bool
    action: GuardrailAction = "block"
    reason: str = ""
    rewrite: object = None

    @classmethod
    def ok(cls) -> GuardrailResult:
        """Pass."""
        return cls(passed=True)

    @classmethod
    def block(cls, reason: str) -> GuardrailResult:
        """Stop the run with status ``failed`` and code ``guardrail_blocked``."""
        return cls(passed=False, action="block", reason=reason)

    @classmethod
    def warn(cls, reason: str) -> GuardrailResult:
        """Report (``guardrail.tripped``) and continue."""
        return cls(passed=False, action="warn", reason=reason)

    @classmethod
    def replace(cls, value: object, reason: str = "") -> GuardrailResult:
        """Continue with ``value`` instead of the checked value."""
        return cls(passed=False, action="rewrite", reason=reason, rewrite=value)

    @classmethod
    def coerce(cls, value: object, guardrail: str) -> GuardrailResult:
        """Normalize what a guardrail function returned."""
        if value is None or value is True:
            return _PASS
        if value is False:
            return cls.block(f"blocked by guardrail {guardrail!r}")
        if isinstance(value, GuardrailResult):
            return value
        mapping = as_json_object(value)
        if mapping is not None:
            return cls._from_mapping(mapping, guardrail)
        raise UserError(
            f"Guardrail {guardrail!r} returned {value!r}; return a GuardrailResult, a bool, "
            "None, or a dict with 'pass'/'ok'."
        )

    @classmethod
    def _from_mapping(cls, value: Mapping[str, object], guardrail: str) -> GuardrailResult:
        passed = value.get("pass", value.get("ok", value.get("passed")))
        if passed is None:
            raise UserError(f"Guardrail {guardrail!r} returned a dict without 'pass' or 'ok'.")
        if passed:
            return _PASS
        action = value.get("action", "block")
        if action not in ("block", "warn", "rewrite"):
            raise UserError(f"Guardrail {guardrail!r} returned unknown action {action!r}.")
        reason = str(value.get("reason", value.get("message", "")))
        return cls(passed=False, action=action, reason=reason, rewrite=value.get("rewrite"))


_PASS = GuardrailResult(passed=True)


@dataclass(kw_only=True, slots=True, frozen=True)
class _Guardrail:
    name: str
    function: GuardrailFunction

    async def check(self, ctx: RunContext[object], value: object) -> GuardrailResult:
        """Run the guardrail and normalize its verdict."""
        return GuardrailResult.coerce(await maybe_await(self.function(ctx, value)), self.name)


class InputGuardrail(_Guardrail):
    """Checks the user's input (as text) before the first model call."""


class OutputGuardrail(_Guardrail):
    """Checks the run's final output (parsed, when ``output_type`` is structured)."""


GuardrailFn: TypeAlias = Callable[[RunContext[Any], Any], object]
"""A guardrail function: sync, or async (its awaitable is awaited)."""


@overload
def input_guardrail(function: GuardrailFn, /) -> InputGuardrail: ...
@overload
def input_guardrail(*, name: str | None = None) -> Callable[[GuardrailFn], InputGuardrail]: ...
def input_guardrail(
    function: GuardrailFn | None = None, /, *, name: str | None = None
) -> InputGuardrail | Callable[[GuardrailFn], InputGuardrail]:
    """Make an input guardrail from ``fn(ctx, text)``."""

    def build(fn: GuardrailFn) -> InputGuardrail:
        return InputGuardrail(name=name or getattr(fn, "__name__", "input_guardrail"), function=fn)

    return build(function) if function is not None else build


@overload
def output_guardrail(function: GuardrailFn, /) -> OutputGuardrail: ...
@overload
def output_guardrail(*, name: str | None = None) -> Callable[[GuardrailFn], OutputGuardrail]: ...
def output_guardrail(
    function: GuardrailFn | None = None, /, *, name: str | None = None
) -> OutputGuardrail | Callable[[GuardrailFn], OutputGuardrail]:
    """Make an output guardrail from ``fn(ctx, output)``."""

    def build(fn: GuardrailFn) -> OutputGuardrail:
        return OutputGuardrail(
            name=name or getattr(fn, "__name__", "output_guardrail"), function=fn
        )

    return build(function) if function is not None else build
