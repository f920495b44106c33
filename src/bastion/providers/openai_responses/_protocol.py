"""The OpenAI Responses wire protocol (``POST /responses``) and its model factory.

Connection and auth live here; message mapping in ``_request``, stream parsing in
``_parser``. Imported by the registry for ``"openai-responses:<model>"`` strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Unpack

from bastion.core import JsonObject, ModelError, ModelRequest, StreamChunk
from bastion.providers._http import HttpModel, HttpModelOptions
from bastion.providers._names import ToolNameMap
from bastion.providers._profiles import profile_for
from bastion.providers._request import sse_bearer_headers

from ._errors import VENDOR, http_error
from ._parser import ResponsesParser
from ._request import build_payload

__all__ = ["PROVIDER", "ResponsesProtocol", "openai_responses_model"]

PROVIDER = "openai-responses"


class ResponsesProtocol:
    """OpenAI's Responses API, stateless: ``store: false``, reasoning sent back encrypted.

    Streams by default; ``ModelSettings(stream=False)`` sends ``"stream": false`` and parses
    the whole ``response`` object into the same chunks.

    Args:
        encrypted_reasoning: Request reasoning items' ``encrypted_content`` so they can be
            sent back on the next step (without it, a stateless conversation's re-sent
            reasoning items are not found). ``None`` (default) asks for it when the model's
            profile says it reasons (the o-series, the gpt-5 family) or ``settings.extra``
            configures ``reasoning``, unless ``settings.extra`` turns ``store`` on.
    """

    vendor = VENDOR
    framing: Literal["sse", "ndjson"] = "sse"
    default_base_url = "https://api.openai.com/v1"
    api_key_env: str | None = "OPENAI_API_KEY"
    base_url_env: str = "OPENAI_BASE_URL"

    def __init__(self, *, encrypted_reasoning: bool | None = None) -> None:
        self.encrypted_reasoning = encrypted_reasoning

    def path(self, model: str) -> str:
        """``/responses``, whatever the model."""
        return "/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Bearer authentication, and SSE accepted."""
        return sse_bearer_headers(api_key)

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
        """The JSON body for ``request``.

        Raises:
            UserError: A message holds content the Responses API cannot take.
        """
        encrypted = self.encrypted_reasoning
        if encrypted is None:
            extra = request.settings.extra or {}
            stored = extra.get("store") is True  # the server keeps the items: no need
            reasons = profile_for(PROVIDER, model).reasoning or "reasoning" in extra
            encrypted = reasons and not stored
        return build_payload(request, model, names, encrypted_reasoning=encrypted)

    def parser(self, names: ToolNameMap) -> ResponsesParser:
        """A parser for one streamed answer."""
        return ResponsesParser(names)

    def whole_path(self, model: str) -> str:
        """``/responses``: the same endpoint answers ``"stream": false`` with one object."""
        return "/responses"

    def whole_chunks(self, body: object, names: ToolNameMap) -> list[StreamChunk]:
        """A non-streamed ``response`` object → the chunks its stream would have given.

        Raises:
            ModelError: The response failed or is malformed.
        """
        return ResponsesParser(names).whole(body)

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """Wire names matching OpenAI's ``^[a-zA-Z0-9_-]{1,64}$``."""
        return ToolNameMap(t.name for t in request.tools)

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map an HTTP error: OpenAI's ``error.code`` first, then the status."""
        return http_error(status, body, headers)


def openai_responses_model(
    name: str, *, encrypted_reasoning: bool | None = None, **options: Unpack[HttpModelOptions]
) -> HttpModel:
    """Return an OpenAI model spoken to through the Responses API (``"openai-responses:<name>"``).

    Args:
        name: The model name (``"o4-mini"``, ``"gpt-4.1"``).
        encrypted_reasoning: See :class:`ResponsesProtocol`.
        **options: :class:`HttpModel` options (``base_url`` default
            ``https://api.openai.com/v1``, ``api_key`` default ``OPENAI_API_KEY``, …).
    """
    return HttpModel(
        name,
        protocol=ResponsesProtocol(encrypted_reasoning=encrypted_reasoning),
        provider=PROVIDER,
        **options,
    )
