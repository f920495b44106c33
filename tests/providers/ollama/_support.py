"""Shared helpers for the Ollama adapter tests: transcripts and mock transports."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from bastion.core import ModelRequest, UserMessage
from bastion.providers import HttpModel
from bastion.providers.ollama import ollama_model

TRANSCRIPTS = Path(__file__).parent.parent / "transcripts" / "ollama"


def transcript(name: str) -> bytes:
    """The exact bytes of a recorded transcript."""
    return (TRANSCRIPTS / name).read_bytes()


class Chunked(httpx.AsyncByteStream):
    """A response body delivered in the given network chunks."""

    def __init__(self, chunks: Sequence[bytes]) -> None:
        self._chunks = list(chunks)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


class Recorder:
    """A MockTransport handler answering from a list of bodies, recording each request."""

    def __init__(
        self, *bodies: bytes | Sequence[bytes], status: int = 200, content_type: str = ""
    ) -> None:
        self._bodies = list(bodies)
        self.status = status
        self.content_type = content_type or "application/x-ndjson"
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = self._bodies.pop(0)
        chunks = [body] if isinstance(body, bytes) else body
        return httpx.Response(
            self.status,
            headers={"content-type": self.content_type},
            stream=Chunked(chunks),
        )

    def json(self, index: int = -1) -> Any:
        """The JSON body of a recorded request."""
        return json.loads(self.requests[index].content)


def model_with(
    handler: Callable[[httpx.Request], httpx.Response], name: str = "llama3.2", **kwargs: Any
) -> HttpModel:
    """An Ollama model whose HTTP goes to ``handler``."""
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return ollama_model(name, http_client=client, **kwargs)


def ask(text: str = "Why is the sky blue?") -> ModelRequest:
    """A one-message request."""
    return ModelRequest(messages=[UserMessage(content=text)])
