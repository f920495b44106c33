"""Checks on what a caller hands to ``Agent.stream`` / ``run``, before anything runs.

Called by ``Agent.stream``: a value of the wrong type would otherwise travel into the
transcript and fail the run much later (as ``internal_error``) or, for a mapping, be read
as an empty message.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.core import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserError,
    UserMessage,
)

__all__ = ["check_history", "check_user_input"]

_PARTS = (TextPart, ImagePart, AudioPart, FilePart)
_MESSAGES = (SystemMessage, UserMessage, AssistantMessage, ToolMessage)
_ACCEPTED = (
    "a string, a list of content parts (TextPart, ImagePart, AudioPart, FilePart), "
    "a RunState to resume, or None with message_history"
)


def check_user_input(value: object) -> None:
    """Raise UserError unless ``value`` is text, a list of user content parts, or ``None``."""
    if value is None or isinstance(value, str):
        return
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        items: Sequence[object] = value  # pyright: ignore[reportUnknownVariableType]
        for index, part in enumerate(items):
            if not isinstance(part, _PARTS):
                raise UserError(
                    f"Run input item {index} is {_describe(part)}, not a content part. "
                    f"The input must be {_ACCEPTED}."
                )
        return
    raise UserError(f"Run input is {_describe(value)}. The input must be {_ACCEPTED}.")


def check_history(value: object) -> None:
    """Raise UserError unless ``value`` is ``None`` or a sequence of messages."""
    if value is None:
        return
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Sequence):
        raise UserError(
            f"message_history is {_describe(value)}; give a list of messages "
            "(SystemMessage, UserMessage, AssistantMessage, ToolMessage)."
        )
    items: Sequence[object] = value  # pyright: ignore[reportUnknownVariableType]
    for index, message in enumerate(items):
        if not isinstance(message, _MESSAGES):
            raise UserError(
                f"message_history[{index}] is {_describe(message)}, not a message; use "
                "SystemMessage, UserMessage, AssistantMessage or ToolMessage."
            )


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"
