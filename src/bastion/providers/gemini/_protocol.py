"""``GeminiProtocol``: the Gemini API's ``streamGenerateContent`` as a :class:`WireProtocol`.

Wires the message mapping (``_payload``), the stream parser (``_parser``) and the error
mapping (``_errors``); ``gemini_model`` builds an :class:`HttpModel` on it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal, Unpack

from bastion.core import (
    AssistantMessage,
    JsonObject,
    ModelError,
    ModelRequest,
    StreamChunk,
    ToolMessage,
)
from bastion.providers._http import HttpModel, HttpModelOptions
from bastion.providers._names import ToolNameMap

from ._errors import error_from_body
from ._parser import GeminiStreamParser
from ._payload import build_payload

__all__ = ["GeminiProtocol", "gemini_model"]

# Gemini function names: a letter or underscore, then letters, digits, _ . : -, at most 64.
_WIRE_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")


class GeminiProtocol:
    """The Gemini API (``generativelanguage.googleapis.com``), streamed as SSE.

    ``ModelSettings(stream=False)`` posts the same body to ``generateContent`` and parses
    the one whole response into the same chunks.
    """

    vendor = "gemini"
    framing: Literal["sse", "ndjson"] = "sse"
    default_base_url = "https://generativelanguage.googleapis.com"
    api_key_env: str | None = "GEMINI_API_KEY"

    def path(self, model: str) -> str:
        """``/v1beta/models/<model>:streamGenerateContent?alt=sse``."""
        return f"/v1beta/models/{model.removeprefix('models/')}:streamGenerateContent?alt=sse"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """The ``x-goog-api-key`` header (none without a key)."""
        return {"x-goog-api-key": api_key} if api_key else {}

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
        """The ``GenerateContentRequest`` body for ``request``."""
        return build_payload(request, names)

    def parser(self, names: ToolNameMap) -> GeminiStreamParser:
        """A parser for one streamed answer."""
        return GeminiStreamParser(names)

    def whole_path(self, model: str) -> str:
        """``/v1beta/models/<model>:generateContent``: one whole answer."""
        return f"/v1beta/models/{model.removeprefix('models/')}:generateContent"

    def whole_chunks(self, body: object, names: ToolNameMap) -> list[StreamChunk]:
        """A ``generateContent`` answer → the chunks its stream would have given.

        Raises:
            ModelError: The body is an error, a blocked prompt, or malformed.
        """
        return GeminiStreamParser(names).whole(body)

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """Wire names for the request's tools and the tools named in its history."""
        names = [t.name for t in request.tools]
        for message in request.messages:
            if isinstance(message, AssistantMessage):
                names.extend(call.name for call in message.tool_calls)
            elif isinstance(message, ToolMessage):
                names.append(message.tool_name)
        return ToolNameMap(dict.fromkeys(names), pattern=_WIRE_NAME, max_length=64)

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map a Google error response (``error.status`` first, then the HTTP status)."""
        return error_from_body(status, body, headers)


def gemini_model(name: str, **options: Unpack[HttpModelOptions]) -> HttpModel:
    """Return a Gemini model (``"gemini:<name>"``).

    The key is ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``. The other
    options are :class:`HttpModel`'s.
    """
    if options.get("api_key") is None and not os.environ.get("GEMINI_API_KEY"):
        options["api_key"] = os.environ.get("GOOGLE_API_KEY")
    return HttpModel(name, protocol=GeminiProtocol(), provider="gemini", **options)
