"""A Model for a wire protocol Bastion does not ship, used by an agent (docs/custom-models.md).

The made-up "LineChat" protocol: ``POST {base_url}/chat`` with ``{"messages": [...],
"tools": [...], "stream": bool}``; a streamed answer is NDJSON, one event a line
(``{"text": ...}``, ``{"tool": {"id", "name", "arguments"}}``, ``{"done": ..., "usage"}``);
a whole answer is one JSON object with the same fields. Run it offline with
``python examples/custom_model.py``: a MockTransport plays the server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from bastion import Agent, tool
from bastion.core import (
    ConnectionFailed,
    FinishChunk,
    MalformedResponse,
    Model,
    ModelRequest,
    ModelTimeout,
    StreamChunk,
    TextChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    Usage,
)
from bastion.providers import error_from_status


class LineChatModel(Model):
    """A LineChat model: one ``stream()`` that honours ``settings.stream`` and maps errors."""

    provider = "linechat"

    def __init__(self, name: str, *, base_url: str, client: httpx.AsyncClient) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.client = client

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """Send ``request``; yield text, tool-call and finish chunks."""
        streamed = request.settings.stream is not False
        body = {
            "model": self.name,
            "messages": [_message(m) for m in request.messages],
            "tools": [{"name": t.name, "parameters": t.parameters} for t in request.tools],
            "stream": streamed,
        }
        timeout = request.settings.timeout or 60.0
        try:
            async with self.client.stream(
                "POST", f"{self.base_url}/chat", json=body, timeout=timeout
            ) as response:
                if response.status_code >= 400:  # 429 → RateLimited, 5xx → Overloaded, …
                    text = (await response.aread()).decode()
                    raise error_from_status(
                        response.status_code, text, response.headers, vendor="linechat"
                    )
                if streamed:
                    async for line in response.aiter_lines():
                        if line.strip():
                            for chunk in _chunks(_json(line)):
                                yield chunk
                else:
                    for chunk in _chunks(_json((await response.aread()).decode())):
                        yield chunk
        except httpx.TimeoutException as exc:
            raise ModelTimeout(f"linechat did not answer within {timeout} s") from exc
        except httpx.TransportError as exc:
            raise ConnectionFailed(f"Could not reach linechat at {self.base_url}: {exc}") from exc


def _message(message: Any) -> dict[str, Any]:
    return {"role": message.role, "content": getattr(message, "text", "")}


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise MalformedResponse(f"linechat sent invalid JSON: {text[:80]!r}") from exc
    if not isinstance(value, dict):
        raise MalformedResponse(f"linechat sent {text[:80]!r}, not an object")
    return value  # pyright: ignore[reportUnknownVariableType]


def _chunks(event: dict[str, Any]) -> list[StreamChunk]:
    """One NDJSON event (or the whole answer, which has every field) → chunks."""
    chunks: list[StreamChunk] = []
    if event.get("text"):
        chunks.append(TextChunk(text=str(event["text"])))
    for call in event.get("tools") or ([event["tool"]] if "tool" in event else []):
        call_id = str(call["id"])
        chunks.append(ToolCallStartChunk(id=call_id, name=str(call["name"])))
        chunks.append(ToolCallDeltaChunk(id=call_id, arguments_delta=json.dumps(call["arguments"])))
        chunks.append(ToolCallEndChunk(id=call_id))
    if event.get("done"):
        usage: dict[str, Any] = event.get("usage") or {}
        chunks.append(
            FinishChunk(
                finish_reason="tool_calls" if event.get("tools_called") else "stop",
                usage=Usage(
                    prompt_tokens=int(usage.get("in", 0)),
                    completion_tokens=int(usage.get("out", 0)),
                    requests=1,
                    unreported_requests=0 if usage else 1,  # no usage: "not reported"
                ),
            )
        )
    return chunks


def fake_server(request: httpx.Request) -> httpx.Response:
    """A LineChat server: asks for ``add`` once, then answers with the tool's result."""
    body = json.loads(request.content)
    last = body["messages"][-1]
    events: list[dict[str, Any]]
    if last["role"] == "tool":
        events = [{"text": f"The sum is {last['content']}."}]
    else:
        call = {"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}
        events = [{"tool": call}, {"tools_called": True}]
    events.append({"done": True, "usage": {"in": 12, "out": 4}})
    if body["stream"]:
        lines = "".join(json.dumps(e) + "\n" for e in events)
        return httpx.Response(200, content=lines.encode())
    whole: dict[str, Any] = {}
    for event in events:  # the whole answer: every field of every event
        whole.update({k: v for k, v in event.items() if k != "tool"})
        if "tool" in event:
            whole.setdefault("tools", []).append(event["tool"])
    return httpx.Response(200, json=whole)


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def main() -> None:
    client = httpx.AsyncClient(transport=httpx.MockTransport(fake_server))
    model = LineChatModel("line-1", base_url="http://linechat.local", client=client)
    agent = Agent("calculator", model=model, tools=[add])
    result = await agent.run("What is 2 + 3?")
    print(result.output, "·", result.usage.describe_tokens())


if __name__ == "__main__":
    asyncio.run(main())
