"""The OpenAI Chat Completions wire protocol (``POST {base}/chat/completions``, SSE).

Implements :class:`~bastion.providers.WireProtocol` for ``HttpModel``. The same class
serves every OpenAI-compatible vendor (Groq, OpenRouter, DeepSeek, vLLM, …): they differ
in base URL, key variable, vendor name and request profile (:class:`ChatParams`), which
are constructor arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from bastion.core import JsonObject, ModelError, ModelRequest
from bastion.providers._names import ToolNameMap
from bastion.providers._request import sse_bearer_headers

from ._errors import http_error
from ._parser import ChatCompletionsParser
from ._payload import build_payload, tool_names
from ._vendors import OPENAI, ChatParams

__all__ = ["ChatCompletionsProtocol"]


class ChatCompletionsProtocol:
    """OpenAI Chat Completions over SSE.

    Args:
        vendor: The vendor name used in error messages (``"openai"``, ``"groq"``…).
        default_base_url: The API base URL, up to and including ``/v1``.
        api_key_env: The environment variable holding the API key (``None``: no key).
        params: Which request fields the server accepts and how it spells them.
    """

    framing: Literal["sse", "ndjson"] = "sse"

    def __init__(
        self,
        *,
        vendor: str = "openai",
        default_base_url: str = "https://api.openai.com/v1",
        api_key_env: str | None = "OPENAI_API_KEY",
        params: ChatParams = OPENAI,
    ) -> None:
        self.vendor = vendor
        self.default_base_url = default_base_url
        self.api_key_env = api_key_env
        self.params = params

    def path(self, model: str) -> str:
        """``/chat/completions`` (the model is named in the body)."""
        return "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Bearer authentication when a key is set."""
        return sse_bearer_headers(api_key)

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
        """The JSON body, shaped by the server's profile (see ``_payload``).

        Raises:
            UserError: A message holds a part Chat Completions cannot carry, or
                ``tool_choice`` names a tool the request does not offer.
        """
        return build_payload(request, model, names, self.params)

    def parser(self, names: ToolNameMap) -> ChatCompletionsParser:
        """A parser for one answer (streamed, or whole with ``stream=False``)."""
        return ChatCompletionsParser(names, vendor=self.vendor)

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """Wire names for the request's tools and the tool calls in its history."""
        return tool_names(request)

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map an HTTP error: OpenAI error codes first, then the status."""
        return http_error(status, body, headers, vendor=self.vendor)

    def __repr__(self) -> str:
        return f"ChatCompletionsProtocol(vendor={self.vendor!r}, base={self.default_base_url!r})"
