"""Shared helpers for the Gemini adapter tests: transcripts and a recording mock transport."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bastion.providers import HttpModel
from bastion.providers.gemini import gemini_model

TRANSCRIPTS = Path(__file__).parent.parent / "transcripts" / "gemini"


def transcript(name: str) -> bytes:
    """The exact bytes of a recorded answer."""
    return (TRANSCRIPTS / name).read_bytes()


class Pieces(httpx.AsyncByteStream):
    """A body delivered in pieces, cut at the given offsets (as a network would)."""

    def __init__(self, body: bytes, cuts: Sequence[int]) -> None:
        bounds = [0, *sorted({c for c in cuts if 0 < c < len(body)}), len(body)]
        self.pieces = [body[a:b] for a, b in itertools.pairwise(bounds)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


@dataclass
class Server:
    """A scripted Gemini endpoint: answers in order, and every request it received."""

    answers: Sequence[tuple[int, bytes]]
    split: Sequence[int] = ()
    requests: list[httpx.Request] = field(default_factory=list[httpx.Request])

    def handle(self, request: httpx.Request) -> httpx.Response:
        status, body = self.answers[len(self.requests)]
        self.requests.append(request)
        kind = "text/event-stream" if status < 400 else "application/json"
        return httpx.Response(
            status, stream=Pieces(body, self.split), headers={"content-type": kind}
        )

    def body(self, index: int = -1) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.requests[index].content)
        return data


def model_for(
    *answers: str | tuple[int, str | bytes],
    name: str = "gemini-2.5-flash",
    split: Sequence[int] = (),
) -> tuple[HttpModel, Server]:
    """A Gemini model whose HTTP answers are the named transcripts (or ``(status, body)``)."""
    scripted: list[tuple[int, bytes]] = []
    for answer in answers:
        if isinstance(answer, str):
            scripted.append((200, transcript(answer)))
        else:
            status, body = answer
            scripted.append((status, body if isinstance(body, bytes) else transcript(body)))
    server = Server(scripted, split)
    client = httpx.AsyncClient(transport=httpx.MockTransport(server.handle))
    return gemini_model(name, api_key="test-key", http_client=client), server
