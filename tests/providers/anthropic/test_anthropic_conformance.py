"""The model conformance suite against the shipped Anthropic adapter, over MockTransport.

Each scenario of ``bastion.testing.SCENARIOS`` is written once as Messages API content
blocks; the mock server sends them as the SSE stream of the API reference (``message_start``,
``content_block_*``, ``message_delta``, ``message_stop``) or, for a request with
``"stream": false``, as one ``message`` object; errors use the reference's error bodies.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bastion.core import Model
from bastion.providers.anthropic import anthropic_model
from bastion.testing import SCENARIOS, ModelConformance, Scenario

Block = dict[str, Any]
USAGE = {"input_tokens": 21, "output_tokens": 9}
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+y9fmb8MWRq=="

ERRORS: dict[str, tuple[int, str, str, dict[str, str]]] = {
    "rate_limited": (429, "rate_limit_error", "Number of requests exceeded.", {"retry-after": "7"}),
    "overloaded": (529, "overloaded_error", "Overloaded", {}),
    "bad_request": (400, "invalid_request_error", "messages.0.content: Field required", {}),
    "authentication": (401, "authentication_error", "invalid x-api-key", {}),
    "context_length": (
        400,
        "invalid_request_error",
        "prompt is too long: 208310 tokens > 200000 maximum",
        {},
    ),
}


def blocks(scenario: Scenario) -> list[Block]:
    spec = SCENARIOS[scenario]
    content: list[Block] = []
    if spec.reasoning:
        content.append({"type": "thinking", "thinking": spec.reasoning, "signature": SIGNATURE})
    if spec.text:
        content.append({"type": "text", "text": spec.text})
    for i, (name, args) in enumerate(spec.tool_calls):
        content.append({"type": "tool_use", "id": f"toolu_0{i}", "name": name, "input": args})
    return content


def event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def block_events(index: int, block: Block) -> list[bytes]:
    kind = block["type"]
    if kind == "text":
        start: Block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"][:3]}]
        deltas.append({"type": "text_delta", "text": block["text"][3:]})
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    else:
        start = {**block, "input": {}}
        arguments = json.dumps(block["input"])
        deltas = [
            {"type": "input_json_delta", "partial_json": arguments[:5]},
            {"type": "input_json_delta", "partial_json": arguments[5:]},
        ]
    return [
        event("content_block_start", {"index": index, "content_block": start}),
        *(event("content_block_delta", {"index": index, "delta": d}) for d in deltas),
        event("content_block_stop", {"index": index}),
    ]


def message(scenario: Scenario, usage: dict[str, int] | None) -> dict[str, Any]:
    content = blocks(scenario)
    tools = any(b["type"] == "tool_use" for b in content)
    body: dict[str, Any] = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use" if tools else "end_turn",
        "stop_sequence": None,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def sse(scenario: Scenario, usage: dict[str, int] | None) -> list[bytes]:
    whole = message(scenario, usage)
    start: dict[str, Any] = {**whole, "content": [], "stop_reason": None}
    if usage is not None:
        start["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": 1}
    pieces = [event("message_start", {"message": start})]
    for index, block in enumerate(whole["content"]):
        pieces += block_events(index, block)
    delta: dict[str, Any] = {"delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None}}
    if usage is not None:
        delta["usage"] = {"output_tokens": usage["output_tokens"]}
    pieces += [event("message_delta", delta), event("message_stop", {})]
    return pieces


class Broken(httpx.AsyncByteStream):
    """The first pieces of an answer, then the connection ends."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def answer(scenario: Scenario, stream: bool) -> httpx.Response:
    if scenario in ERRORS:
        status, kind, text, headers = ERRORS[scenario]
        body = {"type": "error", "error": {"type": kind, "message": text}}
        return httpx.Response(status, headers=headers, json=body)
    sse_headers = {"content-type": "text/event-stream"}
    if scenario == "broken_stream":
        pieces = sse("text", USAGE)[:3]
        if not stream:
            pieces = [json.dumps(message("text", USAGE)).encode()[:40]]
        return httpx.Response(200, headers=sse_headers, stream=Broken(pieces))
    usage = None if scenario == "no_usage" else USAGE
    if not stream:
        return httpx.Response(200, json=message(scenario, usage))
    return httpx.Response(200, headers=sse_headers, content=b"".join(sse(scenario, usage)))


_SENT: weakref.WeakKeyDictionary[Model, list[str]] = weakref.WeakKeyDictionary()


class TestAnthropicAdapter(ModelConformance):
    def make_model(self, *scenarios: Scenario) -> Model:
        queue = list(scenarios)
        bodies: list[str] = []

        def handler(request: httpx.Request) -> httpx.Response:
            bodies.append(request.content.decode())
            stream = json.loads(request.content).get("stream", True) is not False
            return answer(queue.pop(0), stream)

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        model = anthropic_model("claude-sonnet-4-5", api_key="k", http_client=client)
        _SENT[model] = bodies
        return model

    def sent(self, model: Model) -> str:
        return _SENT[model][-1]
