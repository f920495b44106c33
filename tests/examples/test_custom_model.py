"""The custom-model example of docs/custom-models.md: it runs, and passes the conformance suite."""

from __future__ import annotations

import json
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx
from examples.custom_model import LineChatModel, main

from bastion.core import Model
from bastion.testing import SCENARIOS, ModelConformance, Scenario

ERRORS: dict[str, tuple[int, str, dict[str, str]]] = {
    "rate_limited": (429, "Too many requests", {"retry-after": "7"}),
    "overloaded": (529, "Overloaded", {}),
    "bad_request": (400, "messages: field required", {}),
    "authentication": (401, "Invalid API key", {}),
    "context_length": (400, "This model's maximum context length is 8192 tokens", {}),
}


class Cut(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"text": "Hel"}\n'
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def serve(scenario: Scenario, stream: bool) -> httpx.Response:
    if scenario in ERRORS:
        status, message, headers = ERRORS[scenario]
        return httpx.Response(status, headers=headers, json={"error": {"message": message}})
    if scenario == "broken_stream":
        return httpx.Response(200, stream=Cut())
    spec = SCENARIOS[scenario]
    calls = [
        {"id": f"c{i}", "name": name, "arguments": args}
        for i, (name, args) in enumerate(spec.tool_calls)
    ]
    done: dict[str, Any] = {"done": True, "tools_called": bool(calls)}
    if scenario != "no_usage":
        done["usage"] = {"in": 12, "out": 4}
    if not stream:
        return httpx.Response(200, json={"text": spec.text, "tools": calls, **done})
    events = [{"text": spec.text[:3]}, {"text": spec.text[3:]}, *({"tool": c} for c in calls)]
    lines = "".join(json.dumps(e) + "\n" for e in [*events, done])
    return httpx.Response(200, content=lines.encode())


_SENT: weakref.WeakKeyDictionary[Model, list[str]] = weakref.WeakKeyDictionary()


class TestLineChatModel(ModelConformance):
    supports_reasoning = False

    def make_model(self, *scenarios: Scenario) -> Model:
        queue = list(scenarios)
        bodies: list[str] = []

        def handler(request: httpx.Request) -> httpx.Response:
            bodies.append(request.content.decode())
            return serve(queue.pop(0), json.loads(request.content)["stream"])

        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        model = LineChatModel("line-1", base_url="http://linechat.local", client=client)
        _SENT[model] = bodies
        return model

    def sent(self, model: Model) -> str:
        return _SENT[model][-1]


async def test_the_example_runs(capsys: Any) -> None:
    # covers issue 12 (custom models: a documented, runnable example)
    await main()
    assert capsys.readouterr().out == "The sum is 5. · 32 tokens\n"
