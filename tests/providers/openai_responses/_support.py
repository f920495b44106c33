"""Helpers for the Responses adapter tests: transcripts and a model on a MockTransport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx

from bastion.providers import HttpModel
from bastion.providers.openai_responses import openai_responses_model

TRANSCRIPTS = Path(__file__).parent.parent / "transcripts" / "openai_responses"


def transcript(name: str) -> bytes:
    """The exact SSE body of a recorded transcript."""
    return (TRANSCRIPTS / f"{name}.sse").read_bytes()


class Chunks(httpx.AsyncByteStream):
    """A response body delivered in the given pieces (as a network would split it)."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self._pieces = list(pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


def sse(body: bytes | Sequence[bytes]) -> httpx.Response:
    """A 200 event-stream response with ``body`` (whole, or in pieces)."""
    pieces = [body] if isinstance(body, bytes) else body
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Chunks(pieces))


@dataclass
class Server:
    """A scripted OpenAI: answers each POST with the next response, records the bodies."""

    responses: list[httpx.Response]
    bodies: list[dict[str, Any]] = field(default_factory=list)
    headers: list[Mapping[str, str]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(cast("dict[str, Any]", json.loads(request.content)))
        self.headers.append(request.headers)
        self.urls.append(str(request.url))
        return self.responses.pop(0)


def model_for(
    *responses: httpx.Response, name: str = "gpt-4.1", **kwargs: Any
) -> tuple[HttpModel, Server]:
    """A Responses model whose HTTP calls reach a :class:`Server` scripted with ``responses``."""
    server = Server(list(responses))
    handler: Callable[[httpx.Request], httpx.Response] = server
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = openai_responses_model(name, api_key="sk-test", http_client=client, **kwargs)
    return model, server
