"""S6b: the non-streaming path (``ModelSettings(stream=False)``) of the native adapters.

``python -m benchmarks.providers_whole`` answers the same 2,000-piece reply as S6 twice per
wire protocol through httpx's ``MockTransport``: streamed (S6's body, one network read per
event) and as one whole JSON body (the Responses ``response`` object, the Anthropic
``Message``, one Gemini ``generateContent`` response with 2,000 parts), and times
``model.request(...)`` on each: HTTP, decoding, mapping to chunks, assembling the response.
Figures are CPU µs of the process per piece of the answer (``time.process_time``: the
benchmark machine is shared, and CPU time does not count the waits for other processes).
Target (issue 12): the non-streaming path adds at most 1 µs per piece to the streamed one.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bastion.core import ModelRequest, ModelSettings, UserMessage
from bastion.providers import resolve_model

from .providers import (
    CHUNKS,
    REPEATS,
    _anthropic,
    _gemini,
    _openai_responses,
    _transport,
)

TARGET_US = 1.0


def _events(body: list[bytes]) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for piece in body
        for line in piece.decode().splitlines()
        if line.startswith("data: ")
    ]


def _responses_whole(n: int) -> dict[str, Any]:
    last = _events(_openai_responses(n))[-1]
    return last["response"]


def _anthropic_whole(n: int) -> dict[str, Any]:
    events = _events(_anthropic(n))
    message = dict(events[0]["message"])
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    message["content"] = [{"type": "text", "text": text}]
    message["stop_reason"] = "end_turn"
    message["usage"] = {"input_tokens": 10, "output_tokens": n}
    return message


def _gemini_whole(n: int) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"parts": [{"text": f"w{i} "} for i in range(n)], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": n},
        "modelVersion": "gemini-2.5-flash",
    }


@dataclass(frozen=True, slots=True)
class Case:
    """One wire protocol: its model string, its streamed and its whole-body answer."""

    protocol: str
    spec: str
    stream: Callable[[int], list[bytes]]
    whole: Callable[[int], dict[str, Any]]


CASES = (
    Case("OpenAI Responses", "openai-responses:gpt-4.1-mini", _openai_responses, _responses_whole),
    Case(
        "Anthropic Messages",
        "anthropic:claude-sonnet-4-5-20250929",
        _anthropic,
        _anthropic_whole,
    ),
    Case("Gemini", "gemini:gemini-2.5-flash", _gemini, _gemini_whole),
)
EXPECTED = "".join(f"w{i} " for i in range(CHUNKS))


async def _per_piece(case: Case, transport: httpx.AsyncBaseTransport, stream: bool) -> float:
    async with httpx.AsyncClient(transport=transport) as client:
        model = resolve_model(case.spec, api_key="x", http_client=client, base_url="http://mock")
        settings = ModelSettings(stream=None if stream else False)
        request = ModelRequest(messages=[UserMessage(content="go")], settings=settings)
        await model.request(request)  # warm-up
        samples: list[float] = []
        for _ in range(REPEATS):
            start = time.process_time()
            response = await model.request(request)
            samples.append(time.process_time() - start)
            assert response.message.text == EXPECTED, "the answer lost text"
    return statistics.median(samples) / CHUNKS * 1e6


async def measure(case: Case) -> tuple[float, float]:
    """µs per piece of the answer: streamed, then whole."""
    content = json.dumps(case.whole(CHUNKS)).encode()

    def whole(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=content)

    streamed = _transport(case.stream(CHUNKS), "text/event-stream")
    return (
        await _per_piece(case, streamed, stream=True),
        await _per_piece(case, httpx.MockTransport(whole), stream=False),
    )


def main() -> int:
    """Print the S6b table (Markdown)."""
    rows: list[str] = []
    for case in CASES:
        streamed, whole = asyncio.run(measure(case))
        verdict = "met" if whole - streamed <= TARGET_US else "**missed**"
        rows.append(
            f"| {case.protocol} | {streamed:.2f} | {whole:.2f} | {whole - streamed:+.2f} | "
            f"{verdict} |"
        )
    print(
        f"**S6b non-streaming path** ({CHUNKS:,}-piece answer, median of {REPEATS}; "
        "CPU µs per piece, `model.request`)\n\n"
        "| protocol | streamed | whole body | whole - streamed | adds ≤ 1 µs |\n"
        "|---|---|---|---|---|\n" + "\n".join(rows)
    )
    return 1 if any("missed" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
