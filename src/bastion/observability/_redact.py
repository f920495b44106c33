"""Message content for spans: the GenAI JSON shapes, with secrets redacted.

Content is only built when the instrumentation captures it. What is hidden:

- values under secret-named keys (``password``, ``api_key``, ``token``, ``authorization``,
  ``secret``, ``credential``, ``private_key``, ``cookie``...) in JSON arguments and results;
- well-known credential shapes in any text (``Bearer ...``, ``sk-...``, AWS access keys,
  ``ghp_...`` tokens, PEM private keys);
- the whole output of a tool the run marks ``secret`` (a ``ToolMessage`` whose
  ``sensitivity`` is ``"secret"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import cast

from bastion.core import (
    AssistantMessage,
    JsonObject,
    JsonValue,
    Message,
    SystemMessage,
    TextPart,
    ToolMessage,
    text_of,
)

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
SECRET_KEYS = re.compile(
    r"pass(?:word|wd|phrase)?|secret|token|api[_-]?key|authori[sz]ation|credential|"
    r"private[_-]?key|cookie|session[_-]?key|access[_-]?key",
    re.IGNORECASE,
)
SECRET_VALUES = re.compile(
    r"(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
)


class Redactor:
    """Hides secrets in captured content; ``extra_keys`` adds secret key names."""

    __slots__ = ("_keys",)

    def __init__(self, extra_keys: Sequence[str] = ()) -> None:
        pattern = SECRET_KEYS.pattern
        if extra_keys:
            pattern += "|" + "|".join(re.escape(k) for k in extra_keys)
        self._keys = re.compile(pattern, re.IGNORECASE)

    def text(self, text: str) -> str:
        """``text`` with credential shapes replaced."""
        return SECRET_VALUES.sub(REDACTED, text)

    def value(self, value: JsonValue) -> JsonValue:
        """A JSON value with secret-named keys and credential shapes replaced."""
        if isinstance(value, dict):
            return {
                k: REDACTED if self._keys.search(str(k)) else self.value(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def json_text(self, text: str) -> JsonValue:
        """A string that may hold JSON, parsed (when it does) and redacted."""
        try:
            parsed = cast("JsonValue", json.loads(text))
        except ValueError:
            return self.text(text)
        return self.value(parsed)

    def messages(self, messages: Sequence[Message]) -> str:
        """The conversation as GenAI input messages (JSON), redacted."""
        return json.dumps([self._message(m) for m in messages], ensure_ascii=False)

    def _message(self, message: Message) -> JsonObject:
        if isinstance(message, ToolMessage):
            secret = message.sensitivity == "secret"
            response = REDACTED if secret else self.json_text(text_of(message.content))
            part = {"type": "tool_call_response", "id": message.tool_call_id}
            return {"role": "tool", "parts": [{**part, "response": response}]}
        if isinstance(message, AssistantMessage):
            return {"role": "assistant", "parts": self.assistant_parts(message)}
        if isinstance(message, SystemMessage):
            return {"role": "system", "parts": [self._text(message.content)]}
        return {"role": "user", "parts": [self._text(text_of(message.content))]}

    def assistant_parts(self, message: AssistantMessage) -> list[JsonObject]:
        """The text and tool calls of an assistant message, as GenAI parts."""
        parts = [self._text(p.text) for p in message.parts if isinstance(p, TextPart)]
        parts.extend(self.tool_call(c.id, c.name, c.arguments) for c in message.tool_calls)
        return parts

    def tool_call(self, call_id: str, name: str, arguments: str) -> JsonObject:
        """One tool call part, its arguments redacted."""
        args = self.json_text(arguments)
        return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}

    def _text(self, text: str) -> JsonObject:
        return {"type": "text", "content": self.text(text)}
