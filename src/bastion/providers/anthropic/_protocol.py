"""The Anthropic Messages wire protocol: endpoint, headers, body, parser and error codes.

:class:`MessagesProtocol` is what :class:`~bastion.providers.HttpModel` drives; the body is
built by ``_payload``, the stream parsed by ``_parser``, errors mapped by ``_errors``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from bastion.core import JsonObject, ModelError, ModelRequest, StreamChunk
from bastion.providers._names import ToolNameMap

from ._cache import PromptCache
from ._errors import error_from_body
from ._parser import MessagesParser
from ._payload import build_payload

__all__ = ["ANTHROPIC_VERSION", "STRUCTURED_OUTPUT_MODELS", "MessagesProtocol"]

ANTHROPIC_VERSION = "2023-06-01"
# Model-name prefixes with structured outputs (``output_config.format``, strict tools),
# per Anthropic's structured-outputs page; other models get the forced output tool.
STRUCTURED_OUTPUT_MODELS = (
    "claude-opus-4-5",
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-sonnet-4-5",
    "claude-sonnet-4-6",
    "claude-haiku-4-5",
    "claude-mythos",
)


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
    """Anthropic's Messages API (``POST /v1/messages``, streamed as server-sent events).

    ``ModelSettings(stream=False)`` sends ``"stream": false`` and parses the whole
    ``Message`` into the same chunks.

    Args:
        native_output: Ask for structured output as ``output_config.format`` (True), or
            through a forced output tool (False). ``None`` (default): native for the models
            in :data:`STRUCTURED_OUTPUT_MODELS`, the tool for the others.
        cache: Prompt-cache breakpoints to put on every request (none by default).
    """

    vendor: str = "anthropic"
    framing: Literal["sse", "ndjson"] = "sse"
    default_base_url: str = "https://api.anthropic.com"
    api_key_env: str | None = "ANTHROPIC_API_KEY"

    def __init__(
        self, *, native_output: bool | None = None, cache: PromptCache | None = None
    ) -> None:
        self.native_output = native_output
        self.cache = cache

    def structured_outputs(self, model: str) -> bool:
        """Whether requests to ``model`` use native structured output."""
        if self.native_output is not None:
            return self.native_output
        return model.startswith(STRUCTURED_OUTPUT_MODELS)

    def path(self, model: str) -> str:
        """The Messages endpoint (the model goes in the body)."""
        return "/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """``x-api-key``, the API version and the content type."""
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
        """The request body (see ``_payload``)."""
        return build_payload(
            request,
            model,
            names,
            native_output=self.structured_outputs(model),
            cache=self.cache,
        )

    def parser(self, names: ToolNameMap) -> MessagesParser:
        """A parser for one streamed answer."""
        output_tool = names.output_tool if isinstance(names, _Names) else None
        return MessagesParser(names, output_tool)

    def whole_path(self, model: str) -> str:
        """The Messages endpoint, which answers ``"stream": false`` with one message."""
        return "/v1/messages"

    def whole_chunks(self, body: object, names: ToolNameMap) -> list[StreamChunk]:
        """A non-streamed ``Message`` → the chunks its stream would have given.

        Raises:
            ModelError: The body is an error, or malformed.
        """
        return self.parser(names).whole(body)

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """Wire names for the request's tools and its structured-output tool."""
        output = request.output.name if request.output is not None else None
        return _Names((t.name for t in request.tools), output)

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map an HTTP error: Anthropic's error type first, then the status."""
        return error_from_body(status, body, headers)
