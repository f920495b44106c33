"""Messages and content parts: the one normalized conversation format.

Every provider adapter converts to and from these types; stores, the server and exporters
serialize them through :mod:`bastion.core._serde`. Parts are discriminated by ``type``,
messages by ``role``. Vendor extras (reasoning signatures, encrypted content, response ids)
live in ``provider_details`` and are carried byte-exact, never interpreted outside
``providers/``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self, TypeAlias

__all__ = [
    "AssistantMessage",
    "AssistantPart",
    "AudioPart",
    "FilePart",
    "ImagePart",
    "Message",
    "ReasoningPart",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolMessage",
    "UserContent",
    "UserMessage",
    "UserPart",
    "text_of",
]


class _InlineData:
    """Media given inline as standard base64 text (``data``) or by ``url``.

    Base64 text is what every provider API and browser expects, so parts serialize as they
    are; :meth:`from_bytes` and :meth:`to_bytes` convert.
    """

    __slots__ = ()
    data: str | None
    url: str | None

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str) -> Self:
        """Make a part from raw bytes."""
        return cls(data=base64.b64encode(data).decode("ascii"), media_type=media_type)  # pyright: ignore[reportCallIssue]

    def to_bytes(self) -> bytes:
        """Decode ``data``.

        Raises:
            ValueError: The part has no inline data (it is given by URL).
        """
        if self.data is None:
            raise ValueError(f"{type(self).__name__} has no inline data (url={self.url!r}).")
        return base64.b64decode(self.data)


@dataclass(kw_only=True, slots=True)
class TextPart:
    """Plain text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(kw_only=True, slots=True)
class ImagePart(_InlineData):
    """An image, inline as base64 text or by URL (``png``, ``jpeg``, ``gif``, ``webp``)."""

    data: str | None = None
    url: str | None = None
    media_type: str | None = None
    type: Literal["image"] = "image"


@dataclass(kw_only=True, slots=True)
class AudioPart(_InlineData):
    """Audio, inline as base64 text or by URL (``mp3``, ``wav``, ``ogg``, ``webm``)."""

    data: str | None = None
    url: str | None = None
    media_type: str | None = None
    type: Literal["audio"] = "audio"


@dataclass(kw_only=True, slots=True)
class FilePart(_InlineData):
    """A document (PDF, text, …), inline as base64 text or by URL."""

    media_type: str
    data: str | None = None
    url: str | None = None
    filename: str | None = None
    type: Literal["file"] = "file"

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, filename: str | None = None) -> Self:
        """Make a part from raw bytes."""
        return cls(
            data=base64.b64encode(data).decode("ascii"), media_type=media_type, filename=filename
        )


@dataclass(kw_only=True, slots=True)
class ReasoningPart:
    """Model reasoning ("thinking").

    ``signature`` and ``provider_details`` are opaque vendor data (Anthropic signatures,
    OpenAI encrypted reasoning) that must be sent back unchanged on the next step.
    """

    text: str = ""
    signature: str | None = None
    redacted: bool = False
    provider_details: dict[str, Any] | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(kw_only=True, slots=True)
class ToolCall:
    """A model's request to call a tool.

    ``arguments`` is the raw JSON text the model produced, kept verbatim (it may be
    malformed: the executor reports that back to the model as a tool error).
    """

    id: str
    name: str
    arguments: str = "{}"
    provider_details: dict[str, Any] | None = None
    type: Literal["tool_call"] = "tool_call"

    def args(self) -> Any:
        """Parse ``arguments`` as JSON; raises ``ValueError`` if it is not valid JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


UserPart: TypeAlias = TextPart | ImagePart | AudioPart | FilePart
AssistantPart: TypeAlias = TextPart | ReasoningPart | ImagePart | AudioPart | FilePart
UserContent: TypeAlias = str | Sequence[UserPart]


@dataclass(kw_only=True, slots=True)
class SystemMessage:
    """Instructions to the model."""

    content: str
    role: Literal["system"] = "system"


@dataclass(kw_only=True, slots=True)
class UserMessage:
    """A turn of the user: text, or a list of parts for multimodal input."""

    content: str | list[UserPart]
    name: str | None = None
    role: Literal["user"] = "user"

    @property
    def text(self) -> str:
        """The text of the message, parts joined."""
        return text_of(self.content)


@dataclass(kw_only=True, slots=True)
class AssistantMessage:
    """A model's answer: text and reasoning parts, and the tool calls it asked for."""

    parts: list[AssistantPart] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    model: str | None = None
    provider_details: dict[str, Any] | None = None
    role: Literal["assistant"] = "assistant"

    @property
    def text(self) -> str:
        """The answer's text, without reasoning."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def reasoning(self) -> str:
        """The reasoning text, when the model exposed it."""
        return "".join(p.text for p in self.parts if isinstance(p, ReasoningPart))


@dataclass(kw_only=True, slots=True)
class ToolMessage:
    """The result of one tool call, as the model will read it.

    ``sensitivity`` is the tier of the tool that produced it: a model that does
    not accept that tier never receives the conversation.
    """

    tool_call_id: str
    tool_name: str
    content: str | list[UserPart]
    is_error: bool = False
    sensitivity: Literal["public", "internal", "secret"] = "public"
    role: Literal["tool"] = "tool"

    @property
    def text(self) -> str:
        """The result's text, parts joined."""
        return text_of(self.content)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def text_of(content: str | Sequence[object] | Mapping[str, object]) -> str:
    """Return the text of a content value: a string, or the text parts of a list, joined."""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))
