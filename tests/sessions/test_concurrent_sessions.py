"""Many sessions at once on one shared store, on every backend (issue 6; S-20).

200 sessions, each its own agent sharing one store that none of them opened, start together
and send two messages in turn (a tool call, then an answer). Every session must finish
without a store error (opening races, pool exhaustion), and the store must hold exactly what
each one did. PostgreSQL and Redis are the real servers (``BASTION_TEST_POSTGRES_DSN``,
``BASTION_TEST_REDIS_URL``), each test in its own schema or key prefix; a missing server
fails the test. ``benchmarks/sessions.py`` times the same work at 1,000 sessions.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion import Agent, Session, tool
from bastion.core import AssistantMessage, ToolMessage, UserMessage
from bastion.core._serde import message_adapter
from bastion.stores import Stores, open_store
from bastion.testing import Call, ScriptedModel, Turn, isolated_store

SESSIONS = 200
MESSAGES = 2


@tool(side_effect_class="read_only")
async def lookup(topic: str) -> str:
    """Look a topic up in the notes."""
    return f"notes on {topic}"


def _question(sid: str, turn: int) -> str:
    return f"what about {sid} {turn}?"


def _answer(sid: str, turn: int) -> str:
    return f"{sid} {turn}: noted."


def _script(sid: str) -> list[Turn | str]:
    script: list[Turn | str] = []
    for turn in range(MESSAGES):
        script += [
            Turn(tool_calls=[Call("lookup", {"topic": f"{sid} {turn}"})]),
            _answer(sid, turn),
        ]
    return script


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store(request.param, tmp_path) as url:
        yield url


async def _converse(stores: Stores, sid: str) -> list[str]:
    """One session sending its messages in turn; the answer of each turn."""
    answers: list[str] = []
    agent = Agent("many", model=ScriptedModel(_script(sid)), tools=[lookup], store=stores)
    session = Session(agent, sid)
    session.on("turn_end", lambda e: answers.append(e.text))
    for turn in range(MESSAGES):
        session.send(_question(sid, turn))
        await session.wait_for_idle()
    return answers


async def test_sessions_sharing_one_unopened_store_all_complete(store_url: str) -> None:
    # covers S-20
    stores = open_store(store_url)  # opened by the agents' first runs, all at once
    sids = [f"s{i}" for i in range(SESSIONS)]
    try:
        answers = await asyncio.gather(*(_converse(stores, sid) for sid in sids))
        assert answers == [[_answer(sid, t) for t in range(MESSAGES)] for sid in sids]
        adapter = message_adapter()
        for sid in sids:
            entries = await stores.sessions.entries(sid)
            assert [e.parent_id for e in entries[1:]] == [e.entry_id for e in entries[:-1]]
            messages = [adapter.validate_python(e.payload["message"]) for e in entries]
            kinds = [UserMessage, AssistantMessage, ToolMessage, AssistantMessage] * MESSAGES
            assert [type(m) for m in messages] == kinds
            assert [m.content for m in messages if isinstance(m, UserMessage)] == [
                _question(sid, t) for t in range(MESSAGES)
            ]
            assert [m.content for m in messages if isinstance(m, ToolMessage)] == [
                f"notes on {sid} {t}" for t in range(MESSAGES)
            ]
            assert [m.text for m in messages[3::4] if isinstance(m, AssistantMessage)] == [
                _answer(sid, t) for t in range(MESSAGES)
            ]
        page = await stores.journal.list_runs(limit=10 * SESSIONS * MESSAGES)
        assert len(page.runs) == SESSIONS * MESSAGES
        assert {r.status for r in page.runs} == {"completed"}
        for run in page.runs[:: SESSIONS // 10]:
            assert [e.kind for e in await stores.journal.read(run.run_id)] == [
                "run_started",
                "model_response",
                "tool_call_started",
                "tool_result",
                "model_response",
                "run_ended",
            ]
    finally:
        await stores.close()
