"""What crosses the workflow/activity boundary, as JSON text.

Activities take and return ``str``: Temporal's default converter then stores plain JSON in the
workflow history, and Bastion's own adapters (the journal's) decide the shape of each value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, TypeAdapter
from pydantic_core import to_json

from bastion.core import (
    Message,
    ModelRequest,
    ModelSettings,
    OutputSpec,
    StreamChunk,
    ToolDefinition,
    stream_chunks_adapter,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "decode_chunks",
    "decode_request",
    "encode_chunks",
    "encode_request",
    "encode_value",
]


@dataclass(kw_only=True, slots=True)
class _WireRequest:
    """A :class:`ModelRequest` with its message union discriminated, for one adapter."""

    messages: list[Annotated[Message, Field(discriminator="role")]]
    tools: list[ToolDefinition] = field(default_factory=list[ToolDefinition])
    output: OutputSpec | None = None
    settings: ModelSettings = field(default_factory=ModelSettings)


@cache
def _request_adapter() -> TypeAdapter[_WireRequest]:
    return TypeAdapter(_WireRequest)


def encode_request(request: ModelRequest) -> str:
    """The request as JSON text."""
    wire = _WireRequest(
        messages=list(request.messages),
        tools=list(request.tools),
        output=request.output,
        settings=request.settings,
    )
    return _request_adapter().dump_json(wire).decode()


def decode_request(text: str) -> ModelRequest:
    """The request :func:`encode_request` wrote."""
    wire = _request_adapter().validate_json(text)
    return ModelRequest(
        messages=wire.messages, tools=wire.tools, output=wire.output, settings=wire.settings
    )


def encode_chunks(chunks: Sequence[StreamChunk]) -> str:
    """A model's streamed answer as JSON text."""
    return stream_chunks_adapter().dump_json(list(chunks)).decode()


def decode_chunks(text: str) -> list[StreamChunk]:
    """The chunks :func:`encode_chunks` wrote."""
    return stream_chunks_adapter().validate_json(text)


def encode_value(value: object) -> str:
    """A tool's arguments or return value as JSON text (models and dataclasses as objects)."""
    return to_json(value, fallback=str).decode()
