"""Handoff input filters: what of a conversation crosses to the agent taking it over.

Each function returns a serialisable descriptor (a frozen pydantic model, see
``HandoffInputFilterDescriptor``), not a closure, so a journaled handoff records exactly
which filter shaped the boundary and a replay reproduces it byte for byte::

    from bastion import filters

    keep = filters.compose(filters.last_n(6), filters.strip_tool_calls())
    messages = await filters.apply_filter(keep, history)

At a handoff, ``strip_reasoning()`` is always applied last, whatever the filter.
"""

from __future__ import annotations

from typing import Literal

from bastion.core import Model, UserError

from ._apply import SECRET_PLACEHOLDER, FilterContext, FilterSummarizer, apply_filter
from ._descriptors import (
    BySensitivity,
    Compose,
    HandoffInputFilterDescriptor,
    LastN,
    LastUser,
    StripReasoning,
    StripSensitiveOutputs,
    StripToolCalls,
    Summary,
    descriptor_adapter,
)

__all__ = [
    "SECRET_PLACEHOLDER",
    "BySensitivity",
    "Compose",
    "FilterContext",
    "FilterSummarizer",
    "HandoffInputFilterDescriptor",
    "LastN",
    "LastUser",
    "StripReasoning",
    "StripSensitiveOutputs",
    "StripToolCalls",
    "Summary",
    "apply_filter",
    "by_sensitivity",
    "compose",
    "default_handoff_filter",
    "descriptor_adapter",
    "from_json",
    "is_filter",
    "last_n",
    "last_user",
    "strip_reasoning",
    "strip_sensitive_outputs",
    "strip_tool_calls",
    "summary",
    "to_json",
]

_KINDS = (
    LastN,
    LastUser,
    Summary,
    BySensitivity,
    StripReasoning,
    StripSensitiveOutputs,
    StripToolCalls,
    Compose,
)
_LEVELS = ("public", "internal", "secret")


def last_n(n: int) -> LastN:
    """Keep the system messages and the last ``n`` other messages.

    Raises:
        UserError: ``n`` is not an integer >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"filters.last_n(n) needs an integer n >= 1, got {n!r}.")
    return LastN(n=n)


def last_user() -> LastUser:
    """Keep the system messages and the latest user message."""
    return LastUser()


def summary(
    *, model: Model | str | None = None, keep_last: int = 1, instructions: str | None = None
) -> Summary:
    """Replace the history before the last ``keep_last`` exchanges with a summary.

    The summary is a model call of the run (governed, its usage counted in the run's):
    ``model`` (a ``Model`` or ``"provider:model"`` key; a ``Model`` is recorded by its key and
    resolved again by that key on replay), else the model of the agent handing off.
    ``instructions`` replace the summarizer's default instructions.

    Raises:
        UserError: ``keep_last`` is negative, or ``model`` is neither a model nor a key.
    """
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"filters.summary(keep_last=...) must be an integer >= 0, got {keep_last!r}."
        )
    key = model.key if isinstance(model, Model) else model
    if key is not None and (not isinstance(key, str) or ":" not in key):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"filters.summary(model=...) must be a Model or a 'provider:model' key, got {model!r}."
        )
    return Summary(model=key, keep_last=keep_last, instructions=instructions)


def by_sensitivity(
    max: Literal["public", "internal", "secret"] = "internal",
    *,
    untrusted: Literal["keep", "drop"] = "keep",
) -> BySensitivity:
    """Drop tool outputs labelled above ``max`` (the tool's ``sensitivity`` or provenance).

    With ``untrusted="drop"`` outputs whose provenance is untrusted (web, MCP, files...)
    are dropped too. The calls that produced dropped outputs go with them.

    Raises:
        UserError: An unknown level or ``untrusted`` value.
    """
    if max not in _LEVELS:
        raise UserError(f"filters.by_sensitivity(max=...) must be one of {_LEVELS}, got {max!r}.")
    if untrusted not in ("keep", "drop"):
        raise UserError(
            f"filters.by_sensitivity(untrusted=...) must be 'keep' or 'drop', got {untrusted!r}."
        )
    return BySensitivity(max=max, untrusted=untrusted)


def strip_reasoning() -> StripReasoning:
    """Drop the reasoning parts (with their signatures) of the model's answers."""
    return StripReasoning()


def strip_sensitive_outputs() -> StripSensitiveOutputs:
    """Replace the content of ``secret`` tool outputs with a placeholder (calls stay paired)."""
    return StripSensitiveOutputs()


def strip_tool_calls() -> StripToolCalls:
    """Drop tool results and the tool calls of the model's answers."""
    return StripToolCalls()


def compose(*filters: HandoffInputFilterDescriptor) -> Compose:
    """Apply ``filters`` in order, then ``strip_reasoning()`` (always appended once).

    Nested compositions are flattened.

    Raises:
        UserError: An argument is not a filter descriptor.
    """
    flat: list[HandoffInputFilterDescriptor] = []
    for item in filters:
        if not is_filter(item):
            raise UserError(
                f"filters.compose() takes filter descriptors (filters.last_n(...), ...), got "
                f"{item!r}."
            )
        flat.extend(item.filters if isinstance(item, Compose) else (item,))
    while flat and isinstance(flat[-1], StripReasoning):
        flat.pop()
    return Compose(filters=(*flat, StripReasoning()))


def default_handoff_filter() -> Compose:
    """What crosses a handoff unless it says otherwise: the last 10 messages, no secrets."""
    return compose(last_n(10), strip_sensitive_outputs())


def is_filter(value: object) -> bool:
    """Whether ``value`` is a filter descriptor."""
    return isinstance(value, _KINDS)


def to_json(descriptor: HandoffInputFilterDescriptor) -> str:
    """The descriptor as JSON text (read back with :func:`from_json`)."""
    return descriptor_adapter().dump_json(descriptor).decode()


def from_json(text: str | bytes) -> HandoffInputFilterDescriptor:
    """A descriptor written by :func:`to_json`.

    Raises:
        UserError: The text is not a filter descriptor.
    """
    from pydantic import ValidationError

    try:
        return descriptor_adapter().validate_json(text)
    except ValidationError as exc:
        raise UserError(f"Not a handoff filter descriptor: {exc}") from None
