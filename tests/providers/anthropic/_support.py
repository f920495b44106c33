"""Helpers for the Anthropic adapter tests: transcripts and a recording mock transport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from bastion.providers import HttpModel
from bastion.providers.anthropic import anthropic_model

TRANSCRIPTS = Path(__file__).parent.parent / "transcripts" / "anthropic"


def transcript(name: str) -> bytes:
    """The exact SSE body of a recorded-shape transcript."""
    return (TRANSCRIPTS / f"{name}.sse").read_bytes()


class Chunked(httpx.AsyncByteStream):
    """A response body delivered in the given pieces, as a network would."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self._pieces = list(pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


class Server:
    """A scripted Anthropic endpoint: answers in order and records each request body."""

    def __init__(self, *answers: httpx.Response | bytes) -> None:
        self._answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []
        self.urls: list[str] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        self.headers.append(request.headers)
        self.urls.append(str(request.url))
        answer = self._answers.pop(0)
        if isinstance(answer, httpx.Response):
            return answer
        return sse(answer)

    def model(self, name: str = "claude-sonnet-4-20250514", **options: Any) -> HttpModel:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self.handler))
        return anthropic_model(name, api_key="sk-ant-test", http_client=client, **options)


def sse(body: bytes, pieces: Sequence[bytes] | None = None) -> httpx.Response:
    """A 200 event-stream response with ``body`` (optionally split into ``pieces``)."""
    return httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=Chunked(pieces if pieces is not None else [body]),
    )
