"""S6: provider adapter overhead per streamed chunk, against the vendors' own SDKs.

``python -m benchmarks.providers`` replays a 2,000-chunk answer per wire protocol through
httpx's ``MockTransport`` (one network read per event, as a server sends them) and times:

* **parse + map**: draining ``model.stream(request)`` (SSE/NDJSON decoding, JSON parsing,
  mapping to stream chunks);
* **+ event**: draining ``agent.stream(...)`` on the same model (adds the loop's event);
* **SDK**: the vendor's official SDK iterating the same bytes, where one is installed
  (``openai``, ``anthropic``, ``ollama``); Gemini has none in the bench environment.

Target (issue 3): ≤ 15 µs per chunk, reported with the ratio to the SDK.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bastion import Agent
from bastion.core import Model, ModelRequest, UserMessage
from bastion.providers import resolve_model

CHUNKS = 2_000
REPEATS = 7
TARGET_US = 15.0


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> list[bytes]:
    out: list[bytes] = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "").encode() + f"data: {text}\n\n".encode())
    return out


def _openai_chat(n: int) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, chunk({"role": "assistant", "content": ""}))
    ]
    events += [(None, chunk({"content": f"w{i} "})) for i in range(n)]
    events.append((None, chunk({}, "stop")))
    usage = {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": n + 10}
    events.append((None, {**chunk({}), "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return _sse(events)


def _anthropic(n: int) -> list[bytes]:
    start: dict[str, Any] = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", start),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    events += [
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f"w{i} "},
            },
        )
        for i in range(n)
    ]
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": n},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def _openai_responses(n: int) -> list[bytes]:
    item: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    response: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "status": "in_progress",
        "model": "gpt-4.1-mini",
        "output": [],
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (
            "response.created",
            {"type": "response.created", "sequence_number": 0, "response": response},
        ),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": item,
            },
        ),
    ]
    events += [
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "sequence_number": 2 + i,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": f"w{i} ",
            },
        )
        for i in range(n)
    ]
    text = "".join(f"w{i} " for i in range(n))
    done_item: dict[str, Any] = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    completed: dict[str, Any] = {
        **response,
        "status": "completed",
        "output": [done_item],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": n,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": n + 10,
        },
    }
    events += [
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "sequence_number": n + 2,
                "output_index": 0,
                "item": done_item,
            },
        ),
        (
            "response.completed",
            {"type": "response.completed", "sequence_number": n + 3, "response": completed},
        ),
    ]
    return _sse(events)


def _ollama(n: int) -> list[bytes]:
    lines: list[dict[str, Any]] = [
        {
            "model": "qwen2.5",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": f"w{i} "},
            "done": False,
        }
        for i in range(n)
    ]
    lines.append(
        {
            "model": "qwen2.5",
            "created_at": "2026-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1,
            "load_duration": 1,
            "prompt_eval_count": 10,
            "prompt_eval_duration": 1,
            "eval_count": n,
            "eval_duration": 1,
        }
    )
    return [json.dumps(line).encode() + b"\n" for line in lines]


def _gemini(n: int) -> list[bytes]:
    def response(text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "index": 0,
        }
        if finish:
            candidate["finishReason"] = finish
        body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}
        if finish:
            body["usageMetadata"] = {
                "promptTokenCount": 10,
                "candidatesTokenCount": n,
                "totalTokenCount": n + 10,
            }
        return body

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, response(f"w{i} ")) for i in range(n - 1)
    ]
    events.append((None, response(f"w{n - 1} ", "STOP")))
    return _sse(events)


def _transport(body: list[bytes], content_type: str, http: Any = httpx) -> Any:
    """A MockTransport of ``http`` (httpx, or the httpx2 fork the OpenAI/Anthropic SDKs use)."""

    async def handler(request: Any) -> Any:
        async def pieces() -> AsyncIterator[bytes]:
            for piece in body:
                yield piece

        return http.Response(200, headers={"content-type": content_type}, content=pieces())

    return http.MockTransport(handler)


def _sdk_client(body: list[bytes], content_type: str) -> Any:
    import httpx2

    return httpx2.AsyncClient(transport=_transport(body, content_type, httpx2))


@dataclass(frozen=True, slots=True)
class Case:
    """One wire protocol: its model string, its stream body, its SDK (if any)."""

    protocol: str
    spec: str
    body: Callable[[int], list[bytes]]
    content_type: str
    sdk: Callable[[list[bytes], str], Awaitable[int]] | None


async def _openai_sdk(body: list[bytes], content_type: str) -> int:
    from openai import AsyncOpenAI

    client = _sdk_client(body, content_type)
    sdk = AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=client, max_retries=0)
    stream = await sdk.chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": "go"}], stream=True
    )
    count = 0
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            count += 1
    return count


async def _responses_sdk(body: list[bytes], content_type: str) -> int:
    from openai import AsyncOpenAI

    client = _sdk_client(body, content_type)
    sdk = AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=client, max_retries=0)
    stream = await sdk.responses.create(model="gpt-4.1-mini", input="go", stream=True)
    count = 0
    async for event in stream:
        if event.type == "response.output_text.delta":
            count += 1
    return count


async def _anthropic_sdk(body: list[bytes], content_type: str) -> int:
    from anthropic import AsyncAnthropic

    client = _sdk_client(body, content_type)
    sdk = AsyncAnthropic(api_key="x", base_url="http://mock", http_client=client, max_retries=0)
    stream = await sdk.messages.create(
        model="claude-sonnet-4-5-20250929",
        max_tokens=4096,
        messages=[{"role": "user", "content": "go"}],
        stream=True,
    )
    count = 0
    async for event in stream:
        if event.type == "content_block_delta":
            count += 1
    return count


async def _ollama_sdk(body: list[bytes], content_type: str) -> int:
    from ollama import AsyncClient

    sdk = AsyncClient(host="http://mock:11434", transport=_transport(body, content_type))
    count = 0
    async for part in await sdk.chat(  # pyright: ignore[reportUnknownMemberType]
        model="qwen2.5", messages=[{"role": "user", "content": "go"}], stream=True
    ):
        if part.message.content:
            count += 1
    return count


CASES = (
    Case(
        "OpenAI Chat Completions",
        "openai:gpt-4.1-mini",
        _openai_chat,
        "text/event-stream",
        _openai_sdk,
    ),
    Case(
        "OpenAI Responses",
        "openai-responses:gpt-4.1-mini",
        _openai_responses,
        "text/event-stream",
        _responses_sdk,
    ),
    Case(
        "Anthropic Messages",
        "anthropic:claude-sonnet-4-5-20250929",
        _anthropic,
        "text/event-stream",
        _anthropic_sdk,
    ),
    Case("Ollama /api/chat", "ollama:qwen2.5", _ollama, "application/x-ndjson", _ollama_sdk),
    Case(
        "Gemini streamGenerateContent",
        "gemini:gemini-2.5-flash",
        _gemini,
        "text/event-stream",
        None,
    ),
)


def _model(case: Case, client: httpx.AsyncClient) -> Model:
    return resolve_model(case.spec, api_key="x", http_client=client, base_url="http://mock")


async def _time(run: Callable[[], Awaitable[int]], expected: int) -> float:
    await run()  # warm-up
    samples: list[float] = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        got = await run()
        samples.append(time.perf_counter() - start)
        assert got == expected, f"expected {expected} text pieces, got {got}"
    return statistics.median(samples) / expected * 1e6


async def measure(case: Case) -> dict[str, float | None]:
    """µs per chunk for the adapter, the adapter + agent events, and the SDK."""
    body = case.body(CHUNKS)
    client = httpx.AsyncClient(transport=_transport(body, case.content_type))
    model = _model(case, client)
    request = ModelRequest(messages=[UserMessage(content="go")])

    async def adapter() -> int:
        count = 0
        async for chunk in model.stream(request):
            count += chunk.type == "text"
        return count

    agent = Agent("bench", model=model, retry=None)

    async def events() -> int:
        count = 0
        async for event in agent.stream("go"):
            count += event.type == "text.delta"
        return count

    figures: dict[str, float | None] = {
        "adapter": await _time(adapter, CHUNKS),
        "events": await _time(events, CHUNKS),
        "sdk": None,
    }
    if case.sdk is not None:
        sdk = case.sdk
        figures["sdk"] = await _time(lambda: sdk(body, case.content_type), CHUNKS)
    await client.aclose()
    return figures


def main() -> int:
    """Print the S6 table (Markdown)."""
    rows: list[str] = []
    for case in CASES:
        try:
            figures = asyncio.run(measure(case))
        except Exception as exc:  # one protocol failing must not hide the others' figures
            rows.append(f"| {case.protocol} | failed: {type(exc).__name__}: {exc} | | | | |")
            continue
        adapter, events, sdk = figures["adapter"], figures["events"], figures["sdk"]
        assert adapter is not None
        assert events is not None
        ratio = f"{adapter / sdk:.2f}x" if sdk else "no SDK installed"
        verdict = "met" if events <= TARGET_US else "**missed**"
        sdk_text = f"{sdk:.1f}" if sdk else "-"
        rows.append(
            f"| {case.protocol} | {adapter:.1f} | {events:.1f} | {sdk_text} | {ratio} | {verdict} |"
        )
    print(
        f"**S6 provider adapters** ({CHUNKS:,} chunks, median of {REPEATS}; µs per chunk)\n\n"
        "| protocol | parse + map | + agent event | official SDK | adapter / SDK | ≤ 15 µs |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows)
    )
    return 1 if any("failed" in row or "missed" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
