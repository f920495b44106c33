"""Abort modes: ``abort("now")`` and ``abort("after_turn")`` keep what the turn did.

Both leave a transcript every protocol accepts as it is, and the usage of each model call
the turn made is stored with its answer, so a reopened session (a new agent on the store)
reports the same messages and usage.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bastion import Agent, Session, tool
from bastion.context import PROTOCOL_RULES, repair_transcript
from bastion.core import Usage, UserError
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Tool


def _blocking(started: asyncio.Event, gate: asyncio.Event) -> Tool:
    @tool(side_effect_class="read_only")
    async def fetch(what: str) -> str:
        """Fetch something slowly."""
        started.set()
        await gate.wait()
        return f"fetched {what}"

    return fetch


def _agent(store: str, fetch: Tool) -> Agent:
    model = ScriptedModel([Turn(tool_calls=[Call("fetch", {"what": "x"}, id="c1")]), "Got x."])
    return Agent("helper", model=model, tools=[fetch], store=store)


async def test_after_turn_lets_the_turn_end_and_drops_what_waits(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/chat.db"
    started, gate = asyncio.Event(), asyncio.Event()
    agent = _agent(store, _blocking(started, gate))
    session = Session(agent, "chat")
    ends: list[str] = []
    session.on("turn_end", lambda e: ends.append(e.text))
    first = session.send("go")
    later = session.send("later", mode="queue")
    await started.wait()
    assert session.abort("after_turn")
    gate.set()
    await session.wait_for_idle()
    assert (first.status, later.status) == ("done", "aborted")
    assert ends == ["Got x."]
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.usage.requests == 2
    assert not session.abort("after_turn")  # idle, nothing waits

    reopened = await Session.resume(Agent("helper", model=ScriptedModel([]), store=store), "chat")
    assert reopened.usage == session.usage
    await agent.aclose()


async def test_now_stores_the_partial_turn_and_its_usage(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/chat.db"
    started, gate = asyncio.Event(), asyncio.Event()
    agent = _agent(store, _blocking(started, gate))
    session = Session(agent, "chat")
    sent = session.send("go")
    await started.wait()
    assert session.abort("now")
    await session.wait_for_idle()
    assert sent.status == "aborted"
    messages = session.messages
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    for rules in PROTOCOL_RULES.values():
        assert repair_transcript(messages, rules).repairs == ()
    one_call = session.usage
    assert one_call.requests == 1
    assert one_call.total_tokens > 0

    again = Agent("helper", model=ScriptedModel([]), store=store)
    reopened = await Session.resume(again, "chat")
    assert [m.role for m in reopened.messages] == ["user", "assistant", "tool"]
    assert reopened.usage == one_call
    assert isinstance(reopened.usage, Usage)
    with pytest.raises(UserError, match="'now' or 'after_turn'"):
        session.abort("later")  # pyright: ignore[reportArgumentType]
    await agent.aclose()
    await again.aclose()
