"""The Anthropic Messages wire protocol: endpoint, headers, body, parser and error codes.

:class:`MessagesProtocol` is what :class:`~bastion.providers.HttpModel` drives; the body is
built by ``_payload``, the stream parsed by ``_parser``, errors mapped by ``_errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from bastion.core import ModelError, ModelRequest
from bastion.providers._http import StreamParser
from bastion.providers._names import ToolNameMap

from ._errors import error_from_body
from ._parser import MessagesParser
from ._payload import build_payload

__all__ = ["ANTHROPIC_VERSION", "MessagesProtocol"]

ANTHROPIC_VERSION = "2023-06-01"


class _Names(ToolNameMap):
    """A tool-name map that also knows the wire name of the structured-output tool.

    The parser is made from the name map alone, so the map carries what it must stream as
    text rather than as a tool call.
    """

    __slots__ = ("output_tool",)

    def __init__(self, names: Iterable[str], output: str | None) -> None:
        super().__init__([*names, *([output] if output is not None else [])])
        self.output_tool = self.wire(output) if output is not None else None


class MessagesProtocol:
    """Anthropic's Messages API (``POST /v1/messages``, streamed as server-sent events)."""

    vendor: str = "anthropic"
    framing: Literal["sse", "ndjson"] = "sse"
    default_base_url: str = "https://api.anthropic.com"
    api_key_env: str | None = "ANTHROPIC_API_KEY"

    def path(self, model: str) -> str:
        """The Messages endpoint (the model goes in the body)."""
        return "/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """``x-api-key``, the API version and the content type."""
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> dict[str, Any]:
        """The streaming request body (see ``_payload``)."""
        return build_payload(request, model, names)

    def parser(self, names: ToolNameMap) -> StreamParser:
        """A parser for one streamed answer."""
        output_tool = names.output_tool if isinstance(names, _Names) else None
        return MessagesParser(names, output_tool)

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """Wire names for the request's tools and its structured-output tool."""
        output = request.output.name if request.output is not None else None
        return _Names((t.name for t in request.tools), output)

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map an HTTP error: Anthropic's error type first, then the status."""
        return error_from_body(status, body, headers)
