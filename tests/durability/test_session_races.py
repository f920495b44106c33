"""Property: processes racing on shared chats with steer, queue, waits and aborts never fork them.

Hypothesis draws what each of two worker processes (``_owner_worker.py fuzz``) does to each
of two shared sessions; the processes play it at once on SQLite, PostgreSQL and Redis. Then
every session's transcript must be one chain of entries; every message a process saw
``done`` appears exactly once, an aborted one at most once, a steered or queued one after
the ones its process sent before it in the same mode; and the transcript is valid for a
model (each call answered once, right after the message that made it). Bounded (two
examples of at most four operations per session and process) so the suite stays fast.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import AssistantMessage, Message, ToolMessage, UserMessage, new_id
from bastion.sessions import Session

from ._owner_worker import build_agent
from .test_ownership import _line, _start

PROCESSES = 2
SESSIONS = 2

_OP = st.one_of(
    st.tuples(st.just("send"), st.sampled_from(["steer", "queue"])),
    st.just(("abort",)),
    st.just(("wait",)),
)
_PLANS = st.lists(
    st.lists(st.lists(_OP, min_size=1, max_size=4), min_size=SESSIONS, max_size=SESSIONS),
    min_size=PROCESSES,
    max_size=PROCESSES,
)


def _plan(ops: Sequence[Sequence[tuple[str, ...]]], proc: int, sessions: list[str]) -> str:
    """The JSON plan of one process: texts name the process, session, mode and order."""
    plan: dict[str, list[list[str]]] = {}
    for s, session_ops in enumerate(ops):
        steps: list[list[str]] = []
        for n, op in enumerate(session_ops):
            if op[0] == "send":
                steps.append(["send", f"p{proc}.s{s}.{op[1]}.{n}", op[1]])
            else:
                steps.append([op[0]])
        plan[sessions[s]] = steps
    return json.dumps(plan)


def _check_valid(messages: Sequence[Message]) -> None:
    """Each call of an assistant message is answered once, before anything else follows."""
    open_calls: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls, message
            open_calls.remove(message.tool_call_id)
            continue
        assert not open_calls, f"calls {open_calls} left unanswered before {message!r}"
        if isinstance(message, AssistantMessage):
            open_calls = [call.id for call in message.tool_calls]
    assert not open_calls


async def _check(store_url: str, sessions: list[str], statuses: dict[str, str]) -> None:
    agent = build_agent(store_url)
    try:
        stores = await agent.stores()
        for sid in sessions:
            entries = await stores.sessions.entries(sid)
            assert [e.parent_id for e in entries] == [None, *(e.entry_id for e in entries[:-1])]
            reopened: Session = await Session.resume(agent, sid) if entries else Session(agent, sid)
            _check_valid(reopened.messages)
            users = [str(m.content) for m in reopened.messages if isinstance(m, UserMessage)]
            counts = Counter(users)
            assert all(n == 1 for n in counts.values()), counts
            s = sid.rsplit("-", 1)[1]
            for text, status in statuses.items():
                if f".{s}." not in text:
                    continue
                assert status in ("done", "aborted"), (text, status)
                if status == "done":
                    assert text in counts, f"{text!r} was done but is not in the transcript"
            assert set(users) <= set(statuses)
            for p in range(PROCESSES):  # a process's messages of one mode keep their order
                for mode in ("steer", "queue"):
                    mine = [u for u in users if u.startswith(f"p{p}.{s}.{mode}.")]
                    assert mine == sorted(mine, key=lambda u: int(u.rsplit(".", 1)[1]))
    finally:
        await agent.aclose()


@pytest.mark.timeout(180)  # real processes on a shared machine; about 30 s per backend
@settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(plans=_PLANS)
async def test_racing_processes_keep_every_chat_one_valid_chain(
    store_url: str, plans: list[list[list[tuple[str, ...]]]]
) -> None:
    # covers S-07, S-20
    """Every accepted message once, in a legal order, in one valid chain per chat."""
    run = new_id("fuzz")
    sessions = [f"{run}-s{s}" for s in range(SESSIONS)]
    procs = [
        await _start(store_url, "fuzz", _plan(ops, p, sessions)) for p, ops in enumerate(plans)
    ]
    answers = await asyncio.gather(*(_line(p) for p in procs))
    assert [await p.wait() for p in procs] == [0] * PROCESSES
    statuses: dict[str, str] = {}
    for answer in answers:
        statuses.update(json.loads(answer))
    await _check(store_url, sessions, statuses)
