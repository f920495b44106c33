"""Follow-up suggestions: what the user might ask next, written by a small model call.

``RunOptions(suggestions=Suggestions(count=3))`` asks, once a run completes, the agent's model
(or ``Suggestions.model``) for ``count`` short next user messages; the run yields them as an
``agent.suggestions`` event and keeps them in ``result.suggestions``. Off by default. This
module holds the configuration and the request and parsing; the agent makes the call (it
passes the run's governor and counts in the run's usage).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bastion.core import (
    AssistantMessage,
    Message,
    Model,
    ModelRequest,
    SystemMessage,
    UserError,
    UserMessage,
)

__all__ = ["SUGGEST_INSTRUCTIONS", "Suggestions", "parse_suggestions", "suggestion_request"]

SUGGEST_INSTRUCTIONS = (
    "Suggest what the user may ask next in this conversation. Reply with exactly {count} "
    "short messages written as the user would write them, one per line, no numbering."
)
"""The system prompt of the suggestion call (``{count}`` is filled in)."""

_MAX = 10
_TURNS = 6  # the last user and assistant turns the suggester reads
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestions:
    """Follow-up suggestions after each completed run.

    Attributes:
        count: How many suggestions to ask for (1 to 10).
        model: The model that writes them (a model or ``"vendor:model"``); default: the
            agent's own.
    """

    count: int = 3
    model: Model | str | None = None

    def __post_init__(self) -> None:
        count = self.count
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= _MAX:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"Suggestions(count={count!r}): expected 1 to {_MAX}.")


def suggestion_request(messages: Sequence[Message], count: int) -> ModelRequest:
    """The request asking for ``count`` suggestions after ``messages`` (text turns only)."""
    turns: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage) and message.text:
            turns.append(f"[user] {message.text}")
        elif isinstance(message, AssistantMessage) and message.text:
            turns.append(f"[assistant] {message.text}")
    return ModelRequest(
        messages=[
            SystemMessage(content=SUGGEST_INSTRUCTIONS.format(count=count)),
            UserMessage(content="\n".join(turns[-_TURNS:])),
        ]
    )


def parse_suggestions(text: str, count: int) -> list[str]:
    """The suggestions in a reply: one per non-empty line, bullets and numbers removed."""
    lines = (_BULLET.sub("", line).strip() for line in text.splitlines())
    return [line for line in lines if line][:count]
