"""Property tests: opaque reasoning survives three tool-loop steps byte-exact, any chunking.

A generated conversation (reasoning + a tool call per step) is streamed in arbitrary pieces,
parsed, and sent back on the next request; every opaque field the server gave must come
back unchanged on every later request (OpenRouter ``reasoning_details``, DeepSeek
``reasoning_content``, Mistral thinking chunks), streamed or not.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import (
    Message,
    ModelRequest,
    ModelSettings,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from bastion.providers.openai import openai_compatible_model

WEATHER = ToolDefinition(name="get_weather", description="Weather.", parameters={"type": "object"})
END = (
    b'data: {"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
_FIELD = {"reasoning.text": "text", "reasoning.summary": "summary", "reasoning.encrypted": "data"}
texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)


@st.composite
def detail_entries(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The whole ``reasoning_details`` of one answer, as OpenRouter documents the entries."""
    entries: list[dict[str, Any]] = []
    for index in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(st.sampled_from(sorted(_FIELD)))
        entry: dict[str, Any] = {"type": kind, _FIELD[kind]: draw(texts)}
        entry["format"] = draw(st.sampled_from(["anthropic-claude-v1", "openai-responses-v1"]))
        entry["index"] = index
        if draw(st.booleans()):
            entry["id"] = draw(texts)
        if kind == "reasoning.text" and draw(st.booleans()):
            entry["signature"] = draw(texts)
        entries.append(entry)
    return entries


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)] or [""]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
    data = {"object": "chat.completion.chunk", "choices": [choice]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _call(step: int) -> list[bytes]:
    call = {"index": 0, "id": f"call_{step}", "type": "function"}
    return [
        _chunk({"tool_calls": [{**call, "function": {"name": "get_weather", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": 1}'}}]}),
        _chunk({}, "tool_calls"),
    ]


def openrouter_stream(entries: list[dict[str, Any]], cuts: list[int], step: int) -> bytes:
    """The entries streamed as OpenRouter does: text-like fields in pieces, the rest once."""
    events: list[bytes] = []
    for entry in entries:
        field = _FIELD[entry["type"]]
        pieces = _split(entry[field], cuts)
        for n, piece in enumerate(pieces):
            if n == 0:  # the first piece opens the entry: every field but the signature
                part = {k: piece if k == field else v for k, v in entry.items()}
                part.pop("signature", None)
            else:
                part = {"type": entry["type"], field: piece, "index": entry["index"]}
            delta: dict[str, Any] = {"reasoning_details": [part]}
            if entry["type"] == "reasoning.text" and piece:
                delta["reasoning"] = piece
            events.append(_chunk(delta))
        if "signature" in entry:
            signed = {"type": entry["type"], "signature": entry["signature"]}
            events.append(_chunk({"reasoning_details": [{**signed, "index": entry["index"]}]}))
    return b"".join([*events, *_call(step), b"data: [DONE]\n\n"])


def deepseek_stream(reasoning: str, cuts: list[int], step: int) -> bytes:
    events = [_chunk({"content": None, "reasoning_content": p}) for p in _split(reasoning, cuts)]
    return b"".join([*events, *_call(step), b"data: [DONE]\n\n"])


class Pieces(httpx.AsyncByteStream):
    def __init__(self, body: bytes, cuts: list[int]) -> None:
        self._body = body
        self._cuts = cuts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        points = sorted({c % (len(self._body) + 1) for c in self._cuts} | {0, len(self._body)})
        for a, b in itertools.pairwise(points):
            yield self._body[a:b]


def run_three_steps(spec: str, answers: list[bytes], cuts: list[int]) -> list[Any]:
    """Three tool-loop steps and a final answer; return the four request bodies."""
    sent: list[Any] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        body = answers[len(sent) - 1] if len(sent) <= len(answers) else END
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=Pieces(body, cuts))

    async def loop() -> None:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
        model = openai_compatible_model(spec, api_key="k", http_client=client)
        history: list[Message] = [UserMessage(content="go")]
        for _ in range(len(answers) + 1):
            request = ModelRequest(messages=list(history), tools=[WEATHER])
            response = await model.request(request)
            history.append(response.message)
            history.extend(
                ToolMessage(tool_call_id=call.id, tool_name=call.name, content="1")
                for call in response.message.tool_calls
            )
        await client.aclose()

    asyncio.run(loop())
    return sent


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(detail_entries(), min_size=3, max_size=3),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
)
def test_openrouter_reasoning_details_survive_three_steps_byte_exact(
    steps: list[list[dict[str, Any]]], cuts: list[int]
) -> None:
    # covers G-63
    answers = [openrouter_stream(entries, cuts, n) for n, entries in enumerate(steps)]
    sent = run_three_steps("openrouter:anthropic/claude-sonnet-4.5", answers, cuts)
    final = sent[-1]["messages"]
    assistants = [m for m in final if m["role"] == "assistant"]
    assert len(assistants) == 3
    for message, entries in zip(assistants, steps, strict=True):
        assert json.dumps(message["reasoning_details"]) == json.dumps(entries)
    # Each earlier request carried the same bytes for the turns it had.
    for n, body in enumerate(sent[1:], start=1):
        earlier = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [m["reasoning_details"] for m in earlier] == steps[:n]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(texts.filter(bool), min_size=3, max_size=3),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
)
def test_deepseek_reasoning_content_survives_three_steps_byte_exact(
    steps: list[str], cuts: list[int]
) -> None:
    # covers G-63
    answers = [deepseek_stream(text, cuts, n) for n, text in enumerate(steps)]
    sent = run_three_steps("deepseek:deepseek-reasoner", answers, cuts)
    assistants = [m for m in sent[-1]["messages"] if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in assistants] == steps
    assert [m["tool_calls"][0]["id"] for m in assistants] == ["call_0", "call_1", "call_2"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=detail_entries(), cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_streamed_and_whole_answers_assemble_the_same_response(
    entries: list[dict[str, Any]], cuts: list[int]
) -> None:
    #
    streamed = openrouter_stream(entries, cuts, 0)
    whole = json.dumps(
        {
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "reasoning": "".join(
                            e["text"] for e in entries if e["type"] == "reasoning.text"
                        ),
                        "reasoning_details": entries,
                        "tool_calls": [
                            {
                                "id": "call_0",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"q": 1}'},
                            }
                        ],
                    },
                }
            ],
        }
    ).encode()

    async def both() -> tuple[Any, Any]:
        results: list[Any] = []
        for body, stream in ((streamed, True), (whole, False)):

            def handle(request: httpx.Request, body: bytes = body) -> httpx.Response:
                return httpx.Response(200, stream=Pieces(body, cuts))

            client = httpx.AsyncClient(transport=httpx.MockTransport(handle))
            model = openai_compatible_model("openrouter:m", api_key="k", http_client=client)
            request = ModelRequest(
                messages=[UserMessage(content="go")],
                tools=[WEATHER],
                settings=ModelSettings(stream=stream),
            )
            results.append(await model.request(request))
            await client.aclose()
        return results[0], results[1]

    streamed_response, whole_response = asyncio.run(both())
    assert streamed_response.message == whole_response.message
    assert streamed_response.finish_reason == whole_response.finish_reason
