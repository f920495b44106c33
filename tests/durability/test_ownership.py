"""Live owners on one store: chats written by several processes, runs owned by a live process.

Real worker processes (``_owner_worker.py``) on SQLite, PostgreSQL and Redis (each test in
its own file, schema or key prefix). A missing server fails the tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from bastion.core import AssistantMessage, Message, ToolMessage, UserMessage
from bastion.sessions import Session
from bastion.stores import RunBusy, SessionEntry, open_store, session_lease_key
from tests._services import postgres_dsn, redis_url

from ._owner_worker import build_agent

WORKER = Path(__file__).with_name("_owner_worker.py")
DSN = postgres_dsn()
REDIS = redis_url()
CUT_SHORT = "Tool call not run: the turn was aborted."


async def _start(store: str, *args: str) -> asyncio.subprocess.Process:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        store,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    if not line:
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        raise AssertionError(f"worker exited early with status {await proc.wait()}: {err}")
    return line.decode().strip()


async def _go(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    await proc.stdin.drain()


def _texts(messages: Sequence[Message]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append(f"user:{m.content}")
        elif isinstance(m, AssistantMessage):
            out.append(f"assistant:{m.text}" if m.text else "assistant:calls")
        elif isinstance(m, ToolMessage):
            out.append(f"tool:{m.content}")
    return out


def _assert_chain(entries: Sequence[SessionEntry]) -> None:
    assert [e.parent_id for e in entries] == [None, *(e.entry_id for e in entries[:-1])]


async def test_two_processes_on_one_chat_never_fork_and_lose_nothing(store_url: str) -> None:
    # covers S-20
    """Two processes send to one chat at once: one chain, every turn whole, in each one's order."""
    procs = [await _start(store_url, "chat", "chat-1", name, "4") for name in ("a", "b")]
    assert [await _line(p) for p in procs] == ["done", "done"]
    assert [await p.wait() for p in procs] == [0, 0]
    async with open_store(store_url) as stores:
        entries = await stores.sessions.entries("chat-1")
    _assert_chain(entries)
    agent = build_agent(store_url)
    try:
        reopened = await Session.resume(agent, "chat-1")
        texts = _texts(reopened.messages)
    finally:
        await agent.aclose()
    assert len(texts) == 32  # 8 turns of 4 messages: nothing lost, nothing doubled
    turns = [texts[i : i + 4] for i in range(0, 32, 4)]
    for turn in turns:  # turns never interleave: one owner at a time
        asked = turn[0].removeprefix("user:")
        assert turn == [
            f"user:{asked}",
            "assistant:calls",
            f"tool:noted {asked}",
            f"assistant:re: {asked} (noted {asked})",
        ]
    for name in ("a", "b"):
        mine = [t[0] for t in turns if t[0].startswith(f"user:{name}-")]
        assert mine == [f"user:{name}-{i}" for i in range(4)]


async def test_a_chat_reopened_while_its_turn_runs_elsewhere_waits_for_it(store_url: str) -> None:
    # covers S-03, S-20
    """A handle opened mid-turn sees the call open, yet never answers it as cut short."""
    worker = await _start(store_url, "hold-turn", "chat-2")
    assert await _line(worker) == "in-tool"  # the worker's tool is running now
    agent = build_agent(store_url)
    try:
        reopened: Session = await Session.resume(agent, "chat-2")
        assert _texts(reopened.messages) == ["user:slow", "assistant:calls"]  # open call
        stores = await agent.stores()
        lease = await stores.leases.get(session_lease_key("chat-2"))
        assert lease is not None
        assert f"pid{worker.pid}:" in lease.owner
        reopened.send("next")  # waits for the turn lease, then reads the chat again
        await _go(worker)
        assert json.loads(await _line(worker)) == "re: slow (went)"
        assert await worker.wait() == 0
        await reopened.wait_for_idle()
        expected = [
            "user:slow",
            "assistant:calls",
            "tool:went",
            "assistant:re: slow (went)",
            "user:next",
            "assistant:calls",
            "tool:noted next",
            "assistant:re: next (noted next)",
        ]
        assert _texts(reopened.messages) == expected
        entries = await stores.sessions.entries("chat-2")
        _assert_chain(entries)
        assert CUT_SHORT not in json.dumps([e.payload for e in entries])
        assert await stores.leases.get(session_lease_key("chat-2")) is None  # released
    finally:
        await agent.aclose()


async def test_a_live_owners_run_cannot_be_resumed_and_ends_well(store_url: str) -> None:
    # covers ARCHITECTURE §5 (resume by id; racing resumers: exactly one wins)
    """Resuming a run whose process is alive is refused, naming the owner; the owner finishes."""
    worker = await _start(store_url, "hold-run")
    run_id = await _line(worker)
    assert await _line(worker) == "in-tool"
    agent = build_agent(store_url)
    try:
        with pytest.raises(RunBusy) as busy:
            await agent.resume(run_id)
        assert busy.value.run_id == run_id
        message = str(busy.value)
        assert f"Run {run_id!r} is running elsewhere" in message
        assert f"pid{worker.pid}:" in message
        assert "held for " in message
        await _go(worker)
        assert json.loads(await _line(worker)) == {
            "status": "completed",
            "output": "re: slow (went)",
        }
        assert await worker.wait() == 0
        stores = await agent.stores()
        kinds = [e.kind for e in await stores.journal.read(run_id)]
        assert kinds.count("tool_result") == 1
        assert kinds[-1] == "run_ended"
        again = await agent.resume(run_id)  # ended and released: replays its end
        assert (again.status, again.output) == ("completed", "re: slow (went)")
    finally:
        await agent.aclose()
