"""Scripted agents and SSE helpers for the server tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.testing import Call, FunctionModel, Turn


@dataclass(frozen=True, kw_only=True, slots=True)
class Sse:
    """One received Server-Sent Event."""

    id: int
    event: str
    data: dict[str, Any]


async def read_sse(response: httpx.Response, *, stop_after: str | None = None) -> list[Sse]:
    """Read events until the stream ends (or right after the first ``stop_after`` event)."""
    if response.status_code != 200:
        await response.aread()
        raise AssertionError(f"{response.status_code}: {response.text}")
    assert response.headers["content-type"].startswith("text/event-stream")
    found: list[Sse] = []
    async for sse in parse_sse(response.aiter_lines()):
        found.append(sse)
        if sse.event == stop_after:
            break
    return found


async def parse_sse(lines: AsyncIterator[str]) -> AsyncIterator[Sse]:
    """The events of an SSE body, line by line."""
    fields: dict[str, str] = {}
    async for line in lines:
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if fields:
            yield Sse(id=int(fields["id"]), event=fields["event"], data=json.loads(fields["data"]))
        fields = {}


def ids(events: Sequence[Sse]) -> list[int]:
    """The ids of the events, in order."""
    return [e.id for e in events]


SENT: list[str] = []


@tool(side_effect_class="side_effecting", needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: The recipient.
        body: The text.
    """
    SENT.append(to)
    return f"sent to {to}"


def mailer(gate: asyncio.Event | None = None) -> Agent[None, str]:
    """Looks something up (waiting on ``gate`` when given), asks to send an email, reports."""

    @tool(side_effect_class="read_only")
    async def look_up(name: str) -> str:
        """Find a contact's address.

        Args:
            name: Who.
        """
        if gate is not None:
            await gate.wait()
        return f"{name.lower()}@example.com"

    def turn(request: ModelRequest) -> Turn:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(text="Looking Bob up first.", tool_calls=[Call("look_up", {"name": "Bob"})])
        if len(results) == 1:
            body = {"to": results[0].text, "body": "Hi Bob"}
            return Turn(text="Sending it now.", tool_calls=[Call("send_email", body)])
        return Turn(text=f"Done: {results[-1].text}")

    return Agent("mailer", model=FunctionModel(turn), tools=[look_up, send_email])
