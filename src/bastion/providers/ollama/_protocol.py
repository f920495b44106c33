"""``OllamaChatProtocol``: the :class:`~bastion.providers.WireProtocol` of ``/api/chat``.

Owns the connection facts (base URL from ``OLLAMA_HOST``, optional bearer token for hosted
or proxied Ollama) and wires the payload builder, stream parser and error mapping.
Resolved by the registry as ``bastion.providers.ollama:ollama_model``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal, Unpack

from bastion.core import JsonObject, ModelError, ModelRequest
from bastion.providers._http import HttpModel, HttpModelOptions, StreamParser
from bastion.providers._names import ToolNameMap

from ._errors import http_error
from ._payload import build_payload
from ._stream import OllamaStreamParser

__all__ = ["OllamaChatProtocol", "ollama_base_url", "ollama_model"]

_DEFAULT_HOST = "http://localhost:11434"
_DEFAULT_PORT = 11434


def ollama_base_url(host: str | None = None) -> str:
    """The base URL for an ``OLLAMA_HOST`` value (default: the environment variable).

    Like the Ollama CLI, accepts ``host``, ``host:port`` or a full URL; a missing scheme
    means ``http`` and a missing port on a bare host means 11434.
    """
    value = (host if host is not None else os.environ.get("OLLAMA_HOST", "")).strip()
    if not value:
        return _DEFAULT_HOST
    if "://" in value:
        return value.rstrip("/")
    authority, slash, path = value.partition("/")
    if ":" not in authority.rpartition("]")[2]:
        authority = f"{authority}:{_DEFAULT_PORT}"
    return f"http://{authority}{slash}{path}".rstrip("/")


class OllamaChatProtocol:
    """Ollama's native chat API: ``POST /api/chat`` with an NDJSON stream.

    Args:
        host: The Ollama server (default: ``OLLAMA_HOST``, else ``http://localhost:11434``).
    """

    vendor: str = "ollama"
    framing: Literal["sse", "ndjson"] = "ndjson"
    api_key_env: str | None = None

    def __init__(self, host: str | None = None) -> None:
        self.default_base_url: str = ollama_base_url(host)

    def path(self, model: str) -> str:
        """The chat endpoint (the model goes in the body)."""
        return "/api/chat"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """A bearer token when one is given (hosted or proxied Ollama); none otherwise."""
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
        """The JSON body for ``request``.

        Raises:
            UserError: The conversation holds content Ollama cannot take.
        """
        return build_payload(request, model, names)

    def parser(self, names: ToolNameMap) -> StreamParser:
        """A parser for one streamed answer."""
        return OllamaStreamParser(names)

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """Tool names made safe for the wire; the models' chat templates expect identifiers."""
        return ToolNameMap(t.name for t in request.tools)

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map an HTTP error answer of Ollama."""
        return http_error(status, body, headers)


def ollama_model(name: str, **options: Unpack[HttpModelOptions]) -> HttpModel:
    """An Ollama model, e.g. ``ollama_model("qwen2.5:7b-instruct")``.

    Args:
        name: The Ollama model name, tag included.
        **options: :class:`~bastion.providers.HttpModel` arguments (``base_url``,
            ``api_key``, ``http_client``, ``timeout``…). ``base_url`` defaults to
            ``OLLAMA_BASE_URL``, then ``OLLAMA_HOST``, then ``http://localhost:11434``.
    """
    return HttpModel(name, protocol=OllamaChatProtocol(), provider="ollama", **options)
