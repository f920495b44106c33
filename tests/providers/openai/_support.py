"""Shared helpers for the Chat Completions tests: a recording mock server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

TEXT_SSE = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class OneShot(httpx.AsyncByteStream):
    """A response body streamed in one piece."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._body


class Recorder:
    """A MockTransport handler: records requests, answers with scripted (status, body) pairs.

    Bodies starting with ``data:`` or ``:`` are served as an SSE stream, others as JSON.
    The last answer repeats once the script runs out.
    """

    def __init__(self, *answers: bytes | tuple[int, bytes]) -> None:
        self.answers = [a if isinstance(a, tuple) else (200, a) for a in answers] or [
            (200, TEXT_SSE)
        ]
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status, body = self.answers[min(len(self.requests), len(self.answers)) - 1]
        kind = "text/event-stream" if body.startswith((b"data:", b":")) else "application/json"
        # A stream, not content=: HttpModel reads the body with aiter_raw(), which refuses a
        # response whose content was given (and so already read) up front.
        return httpx.Response(status, headers={"content-type": kind}, stream=OneShot(body))

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))

    def json(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)
