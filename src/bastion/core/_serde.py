"""JSON round-trip of the protocol types through pydantic ``TypeAdapter``s.

The adapters are built on first use, not at import, so ``import bastion`` stays fast.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated

from ._events import AgentEvent
from ._messages import AssistantPart, Message, UserPart
from ._model import StreamChunk
from ._usage import Usage

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "dump_event",
    "dump_messages",
    "event_adapter",
    "load_event",
    "load_messages",
    "message_adapter",
    "messages_adapter",
    "part_adapter",
    "stream_chunk_adapter",
    "stream_chunks_adapter",
    "usage_adapter",
]


@cache
def message_adapter() -> TypeAdapter[Message]:
    """Return the adapter for one :data:`Message` (discriminated by ``role``)."""
    from pydantic import Field, TypeAdapter

    return TypeAdapter[Message](Annotated[Message, Field(discriminator="role")])


@cache
def messages_adapter() -> TypeAdapter[list[Message]]:
    """Return the adapter for a list of messages."""
    from pydantic import Field, TypeAdapter

    return TypeAdapter[list[Message]](list[Annotated[Message, Field(discriminator="role")]])


@cache
def part_adapter() -> TypeAdapter[UserPart | AssistantPart]:
    """Return the adapter for one content part (discriminated by ``type``)."""
    from pydantic import Field, TypeAdapter

    return TypeAdapter[UserPart | AssistantPart](
        Annotated[UserPart | AssistantPart, Field(discriminator="type")]
    )


@cache
def event_adapter() -> TypeAdapter[AgentEvent]:
    """Return the adapter for one :data:`AgentEvent` (discriminated by ``type``)."""
    from pydantic import Field, TypeAdapter

    return TypeAdapter[AgentEvent](Annotated[AgentEvent, Field(discriminator="type")])


@cache
def stream_chunk_adapter() -> TypeAdapter[StreamChunk]:
    """Return the adapter for one model :data:`StreamChunk`."""
    from pydantic import Field, TypeAdapter

    return TypeAdapter[StreamChunk](Annotated[StreamChunk, Field(discriminator="type")])


@cache
def stream_chunks_adapter() -> TypeAdapter[list[StreamChunk]]:
    """Return the adapter for a list of model :data:`StreamChunk` (a recorded answer)."""
    from pydantic import Field, TypeAdapter

    return TypeAdapter[list[StreamChunk]](list[Annotated[StreamChunk, Field(discriminator="type")]])


@cache
def usage_adapter() -> TypeAdapter[Usage]:
    """Return the adapter for :class:`Usage`."""
    from pydantic import TypeAdapter

    return TypeAdapter(Usage)


def dump_event(event: AgentEvent) -> bytes:
    """Serialize an event to JSON."""
    return event_adapter().dump_json(event)


def load_event(data: str | bytes) -> AgentEvent:
    """Parse an event from JSON."""
    return event_adapter().validate_json(data)


def dump_messages(messages: list[Message]) -> bytes:
    """Serialize a conversation to JSON."""
    return messages_adapter().dump_json(messages)


def load_messages(data: str | bytes) -> list[Message]:
    """Parse a conversation from JSON."""
    return messages_adapter().validate_json(data)
