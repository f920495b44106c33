"""The pinned prefix on the wire: system prompt and tool definitions keep their bytes.

An agent run with compaction records the requests its loop really sends; each is then
serialised by every protocol's adapter. The leading system part and the tool definitions
must be the same bytes in every body, before and after the compaction, so vendors' prompt
caches keep hitting.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.context import SUMMARY_HEADER, ContextConfig
from bastion.core import (
    AssistantMessage,
    ModelRequest,
    SystemMessage,
    TextPart,
    ToolDefinition,
    UserMessage,
    text_of,
)
from bastion.testing import Call, ScriptedModel, Turn

from ._wire import PROTOCOLS, wire_model

INSTRUCTIONS = "You audit invoices. Be brief. Über-careful with totals: €, ¥ and ₹."


@tool(side_effect_class="read_only")
def fetch(n: int) -> str:
    """Fetch one invoice."""
    return f"invoice {n}: " + "line item " * 300


@tool(side_effect_class="read_only")
def total(currency: str, amounts: list[float]) -> float:
    """Add invoice amounts in one currency."""
    return sum(amounts)


async def _agent_tools() -> list[ToolDefinition]:
    """The tool definitions the agent sends."""
    model = ScriptedModel(["ok"])
    await Agent("auditor", model=model, tools=[fetch, total]).run("hi")
    return list(model.requests[0].tools)


async def _agent_requests() -> list[ModelRequest]:
    """What the loop sends across eight steps, with compactions on the way."""
    steps = [Turn(tool_calls=[Call("fetch", {"n": n})]) for n in range(8)]
    model = ScriptedModel([*steps, "All eight invoices are in order."])
    model.tokenizer = "o200k_base"
    summarizer = ScriptedModel(["Invoices fetched so far are in order."] * 8, name="summarizer")
    agent = Agent(
        "auditor",
        model=model,
        instructions=INSTRUCTIONS,
        tools=[fetch, total],
        context=ContextConfig(
            strategy="summarize",
            max_context_tokens=2_500,
            reserve_output_tokens=0,
            summarizer=summarizer,
            keep_last=2,
        ),
    )
    run = agent.stream("Audit the invoices.")
    compactions = [event async for event in run if event.type == "context.compacted"]
    assert run.result.status == "completed"
    assert compactions, "the run was meant to compact"
    return list(model.requests)


def _fragments(protocol: str, body: dict[str, Any]) -> list[object]:
    """The prefix of ``body``: its leading system part and its tool definitions."""
    if protocol == "anthropic":
        return [body["system"], body["tools"]]
    if protocol == "gemini":
        return [body["systemInstruction"], body["tools"]]
    items = body["input"] if protocol == "openai-responses" else body["messages"]
    leading: list[object] = []
    for item in items:
        if item.get("role") not in ("system", "developer"):
            break
        leading.append(item)
    return [*leading, body["tools"]]


def _as_sent(fragment: object, raw: bytes) -> bytes:
    """``fragment`` as the bytes it has in ``raw`` (it must be there, byte for byte)."""
    for options in (
        {"ensure_ascii": False, "separators": (",", ":")},
        {"ensure_ascii": True, "separators": (", ", ": ")},
        {"ensure_ascii": False, "separators": (", ", ": ")},
        {"ensure_ascii": True, "separators": (",", ":")},
    ):
        encoded = json.dumps(fragment, **options).encode()  # pyright: ignore[reportArgumentType]
        if encoded in raw:
            return encoded
    raise AssertionError(f"{fragment!r} is not in the body as sent")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_prefix_bytes_are_identical_across_steps_and_compactions(protocol: str) -> None:
    # covers G-76
    requests = await _agent_requests()
    model, wire = wire_model(protocol)
    for request in requests:
        await model.request(request)
    prefixes = [
        [_as_sent(f, raw) for f in _fragments(protocol, json.loads(raw))] for raw in wire.raw
    ]
    assert len(prefixes) == len(requests) >= 9
    assert all(p == prefixes[0] for p in prefixes)
    assert len(prefixes[0]) >= 2  # a system part and the tools, at least
    summarized = [
        i
        for i, request in enumerate(requests)
        if any(
            text_of(m.content).startswith(SUMMARY_HEADER)
            for m in request.messages
            if m.role == "user"
        )
    ]
    assert summarized, "no request carried a summary"
    assert SUMMARY_HEADER.encode() not in b"".join(prefixes[summarized[0]])


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_later_system_message_leaves_the_prefix_alone(protocol: str) -> None:
    # covers G-76
    first = [
        SystemMessage(content=INSTRUCTIONS),
        UserMessage(content="Audit invoice 1."),
        AssistantMessage(parts=[TextPart(text="Invoice 1 is fine.")]),
    ]
    later = [*first, SystemMessage(content="Note: totals are in euros."), UserMessage(content="2?")]
    model, wire = wire_model(protocol)
    tools = await _agent_tools()
    for messages in (first, later):
        await model.request(ModelRequest(messages=messages, tools=tools))
    before, after = (
        [_as_sent(f, raw) for f in _fragments(protocol, json.loads(raw))] for raw in wire.raw
    )
    assert before == after
    assert b"totals are in euros" in wire.raw[1]
