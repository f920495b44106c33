"""Handoff input filters as data: one frozen pydantic model per filter, one union.

A filter is a *descriptor*, not a function: it says what it does (``kind`` and its
settings) and round-trips through JSON, so a journaled handoff (or a session export)
records exactly which filter shaped the boundary and replaying it gives the same messages.
:func:`apply_filter` (``_apply.py``) runs a descriptor on a message list.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "BySensitivity",
    "Compose",
    "HandoffInputFilterDescriptor",
    "LastN",
    "LastUser",
    "StripReasoning",
    "StripSensitiveOutputs",
    "StripToolCalls",
    "Summary",
    "descriptor_adapter",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class LastN(BaseModel):
    """Keep the system messages and the last ``n`` other messages."""

    model_config = _FROZEN
    kind: Literal["last_n"] = "last_n"
    n: int = Field(ge=1)


class LastUser(BaseModel):
    """Keep the system messages and the latest user message."""

    model_config = _FROZEN
    kind: Literal["last_user"] = "last_user"


class Summary(BaseModel):
    """Replace the history before the last ``keep_last`` exchanges with a model's summary.

    ``model`` is a ``"provider:model"`` key; ``None``: the model of the run's agent.
    """

    model_config = _FROZEN
    kind: Literal["summary"] = "summary"
    model: str | None = None
    keep_last: int = Field(default=1, ge=0)
    instructions: str | None = None


class BySensitivity(BaseModel):
    """Drop tool outputs above ``max`` sensitivity (and, optionally, untrusted ones).

    The calls that produced dropped outputs are dropped with them, so the transcript never
    holds a call without its result.
    """

    model_config = _FROZEN
    kind: Literal["by_sensitivity"] = "by_sensitivity"
    max: Literal["public", "internal", "secret"] = "internal"
    untrusted: Literal["keep", "drop"] = "keep"


class StripReasoning(BaseModel):
    """Drop reasoning parts (and their signatures) from the model's answers."""

    model_config = _FROZEN
    kind: Literal["strip_reasoning"] = "strip_reasoning"


class StripSensitiveOutputs(BaseModel):
    """Replace the content of ``secret`` tool outputs with a short placeholder."""

    model_config = _FROZEN
    kind: Literal["strip_sensitive_outputs"] = "strip_sensitive_outputs"


class StripToolCalls(BaseModel):
    """Drop tool results and the tool calls of the model's answers."""

    model_config = _FROZEN
    kind: Literal["strip_tool_calls"] = "strip_tool_calls"


class Compose(BaseModel):
    """Apply ``filters`` in order (the last one is always ``StripReasoning``)."""

    model_config = _FROZEN
    kind: Literal["compose"] = "compose"
    filters: tuple[HandoffInputFilterDescriptor, ...]


HandoffInputFilterDescriptor: TypeAlias = Annotated[
    LastN
    | LastUser
    | Summary
    | BySensitivity
    | StripReasoning
    | StripSensitiveOutputs
    | StripToolCalls
    | Compose,
    Field(discriminator="kind"),
]
"""Any filter descriptor; ``kind`` tells which."""

Compose.model_rebuild()

_ADAPTER: TypeAdapter[HandoffInputFilterDescriptor] = TypeAdapter(HandoffInputFilterDescriptor)


def descriptor_adapter() -> TypeAdapter[HandoffInputFilterDescriptor]:
    """The adapter reading and writing any descriptor (``validate_json`` / ``dump_json``)."""
    return _ADAPTER
