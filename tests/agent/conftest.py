"""Shared helpers for agent tests: compact views of event streams."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from bastion.core import AgentEvent
from bastion.providers import HttpModel
from bastion.providers.openai import openai_chat_model


def kinds(events: Sequence[AgentEvent]) -> list[str]:
    """The event types, in order."""
    return [e.type for e in events]


def brief(events: Sequence[AgentEvent]) -> list[str]:
    """One line per event with the field that identifies it, for exact sequence pins."""
    lines: list[str] = []
    for e in events:
        match e.type:
            case "text.delta" | "reasoning.delta":
                lines.append(f"{e.type} {e.delta!r}")
            case "tool.call.start" | "tool.call.end" | "tool.execute.start" | "tool.execute.end":
                lines.append(f"{e.type} {e.tool_name}#{e.tool_call_id}")
            case "tool.execute.error":
                lines.append(f"{e.type} {e.tool_name}#{e.tool_call_id} {e.kind}")
            case "step.start":
                lines.append(f"step.start {e.step}")
            case "step.end":
                lines.append(f"step.end {e.step} {e.finish_reason}")
            case "agent.end":
                lines.append(f"agent.end {e.status}")
            case "agent.error":
                lines.append(f"agent.error {e.code}")
            case "guardrail.tripped":
                lines.append(f"guardrail.tripped {e.stage} {e.action} {e.guardrail}")
            case "agent.model.fellback":
                lines.append(f"agent.model.fellback {e.previous_model} -> {e.next_model}")
            case "agent.model.retry":
                lines.append(f"agent.model.retry {e.model} #{e.attempt} {e.delay}")
            case "tool.approval.requested":
                lines.append(f"{e.type} {e.tool_name}#{e.tool_call_id}")
            case "tool.approval.resolved":
                verdict = "granted" if e.granted else "denied"
                lines.append(f"{e.type} {e.tool_name}#{e.tool_call_id} {verdict}")
            case _:
                lines.append(e.type)
    return lines


def chat_model_answering(text: str) -> tuple[HttpModel, list[dict[str, Any]]]:
    """An OpenAI Chat Completions model over MockTransport that streams ``text`` to every
    call, and the list the JSON body of each request is recorded in."""
    bodies: list[dict[str, Any]] = []
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}],
    }
    answer = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=answer)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return openai_chat_model("gpt-4.1-mini", api_key="k", http_client=client), bodies
