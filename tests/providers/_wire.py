"""One recording endpoint for every shipped protocol: the request bodies, as sent.

Tests that must hold for every wire protocol (reasoning settings, the pinned prefix, valid
transcripts) build a model per protocol with :func:`wire_model` and read back the JSON
bodies the adapter serialised, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bastion.providers import HttpModel
from bastion.providers.anthropic import anthropic_model
from bastion.providers.gemini import gemini_model
from bastion.providers.ollama import ollama_model
from bastion.providers.openai import openai_chat_model, openai_compatible_model
from bastion.providers.openai_responses import openai_responses_model

TRANSCRIPTS = Path(__file__).parent / "transcripts"

Factory = Callable[[httpx.AsyncClient], HttpModel]

FACTORIES: dict[str, tuple[Factory, str]] = {
    "openai-chat": (
        lambda c: openai_chat_model("gpt-4.1", api_key="k", http_client=c),
        "openai/text.sse",
    ),
    "openai-responses": (
        lambda c: openai_responses_model("gpt-4.1", api_key="k", http_client=c),
        "openai_responses/text.sse",
    ),
    "anthropic": (
        lambda c: anthropic_model("claude-sonnet-4-20250514", api_key="k", http_client=c),
        "anthropic/text.sse",
    ),
    "gemini": (
        lambda c: gemini_model("gemini-2.5-flash", api_key="k", http_client=c),
        "gemini/text.sse",
    ),
    "ollama": (lambda c: ollama_model("llama3.2", http_client=c), "ollama/text.ndjson"),
}
"""Each protocol's model factory and the text answer its endpoint replies with."""

PROTOCOLS = tuple(FACTORIES)


class _Body(httpx.AsyncByteStream):
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body


@dataclass
class Wire:
    """A scripted endpoint that always answers the same text and keeps every request body."""

    answer: bytes
    raw: list[bytes] = field(default_factory=list[bytes])

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.raw.append(request.content)
        kind = "application/x-ndjson" if self.answer.startswith(b"{") else "text/event-stream"
        return httpx.Response(200, headers={"content-type": kind}, stream=_Body(self.answer))

    def body(self, index: int = -1) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.raw[index])
        return data

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


def wire_model(protocol: str) -> tuple[HttpModel, Wire]:
    """A model speaking ``protocol`` whose requests land in the returned :class:`Wire`."""
    factory, answer = FACTORIES[protocol]
    wire = Wire((TRANSCRIPTS / answer).read_bytes())
    return factory(wire.client()), wire


def preset_model(preset: str) -> tuple[HttpModel, Wire]:
    """An ``openai-compatible`` preset's model on a recording endpoint."""
    wire = Wire((TRANSCRIPTS / "openai/text.sse").read_bytes())
    model = openai_compatible_model(
        f"{preset}:some-model", api_key="k", base_url="http://test/v1", http_client=wire.client()
    )
    return model, wire
