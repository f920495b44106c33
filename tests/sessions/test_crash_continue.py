"""A session turn cut by a crash is continued by the next process: not lost, not repeated.

A worker runs a session turn of three model calls and is SIGKILLed inside the second tool
(``look``). The next process, after the turn lease expired, either reopens the session
(``resume_session``) or sends the next message on a new handle: the crashed turn's run is
continued from its journal (the two journaled model calls and the side-effecting ``note``
are not repeated; ``look``, which never finished, runs again), the turn ends with the
uninterrupted turn's answer, and the session's transcript is exactly the uninterrupted one.
Against a SQLite file and PostgreSQL (one schema per case).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.core import new_id
from bastion.stores import open_store
from tests._processes import kill_at, run_json
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_crash_worker.py")
DSN = postgres_dsn()
MODES = ("resume", "send")


async def _run(store: str, workdir: Path, mode: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = await run_json(WORKER, store, str(workdir), mode)
    return found


async def _start_and_kill(store: str, workdir: Path) -> None:
    await kill_at(WORKER, store, str(workdir), "start", line="waiting")


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


TURN = [
    "user:Go.",
    "assistant:Noting.:c1",
    "tool:c1:noted a",
    "assistant::c2",
    "tool:c2:a garden",
    "assistant:Done: noted a | a garden:",
]


async def _check(store: str, straight_store: str, root: Path, mode: str) -> None:
    straight = root / "straight"
    straight.mkdir()
    expected = await _run(straight_store, straight, "straight")
    assert expected["messages"] == TURN

    workdir = root / mode
    workdir.mkdir()
    await _start_and_kill(store, workdir)
    assert _lines(workdir / "model_calls") == ["call", "call"]
    assert _lines(workdir / "effects") == ["note:a", "look"]

    after = await _run(store, workdir, mode)
    # The journaled model calls and the finished side effect are not repeated.
    assert _lines(workdir / "model_calls") == ["call"] * (3 if mode == "resume" else 4)
    assert _lines(workdir / "effects") == ["note:a", "look", "look"]
    if mode == "resume":
        assert after["messages"] == TURN
        assert after["events"] == [
            "tool_result:c2:a garden",
            "message:assistant",
            "turn_end:Done: noted a | a garden",
        ]
    else:  # the crashed turn ends first, then the new message is a turn of its own
        assert after["messages"] == [*TURN, "user:Next.", "assistant:Next done.:"]
        assert after["events"][-3:] == ["message:user", "message:assistant", "turn_end:Next done."]
        assert "tool_result:c2:a garden" in after["events"]

    async with open_store(store) as stores:  # what a third process reads
        entries = await stores.sessions.entries("chat")
        runs = {str(e.payload["run"]) for e in entries if "run" in e.payload}
        records = [await stores.journal.get_run(run) for run in runs]
    assert len(runs) == (1 if mode == "resume" else 2)
    assert all(r is not None and r.status == "completed" for r in records)


async def test_sqlite(tmp_path: Path) -> None:
    for mode in MODES:
        root = tmp_path / mode
        root.mkdir()
        await _check(f"sqlite:///{root}/bastion.db", f"sqlite:///{root}/straight.db", root, mode)


@pytest.fixture
async def postgres_urls() -> AsyncIterator[list[tuple[str, str]]]:
    import psycopg
    from psycopg import sql

    schemas = [new_id("bastion_session_crash") for _ in range(4)]
    sep = "&" if "?" in DSN else "?"
    urls = [f"{DSN}{sep}schema={schema}" for schema in schemas]
    yield [(urls[0], urls[1]), (urls[2], urls[3])]
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        for schema in schemas:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


async def test_postgres(postgres_urls: list[tuple[str, str]], tmp_path: Path) -> None:
    for mode, (store, straight) in zip(MODES, postgres_urls, strict=True):
        root = tmp_path / mode
        root.mkdir()
        await _check(store, straight, root, mode)


async def test_what_the_journal_missed_is_forked_off(tmp_path: Path) -> None:
    """A message the session stored but the run's journal did not: the chain forks before it.

    The continued run's journal is the truth; the session's extra message stays in the store
    on a dead branch, the transcript read from the store is the run's.
    """
    from bastion.core import AssistantMessage, Message, SystemMessage, ToolCall, UserMessage
    from bastion.core import ToolMessage as Result
    from bastion.sessions._transcript import Transcript

    async with open_store(f"sqlite:///{tmp_path}/fork.db") as stores:

        async def store():
            return stores.sessions

        async def announce(message: Message) -> None:
            pass

        call = ToolCall(id="c1", name="look", arguments="{}")
        asked = AssistantMessage(tool_calls=[call])
        transcript = Transcript("chat", store, announce, lambda: None)
        await transcript.add(UserMessage(content="Go."), run="run-1")
        await transcript.add(asked)
        await transcript.add(Result(tool_call_id="c1", tool_name="look", content="lost"))

        live: list[Message] = [
            SystemMessage(content="Be brief."),
            UserMessage(content="Go."),
            asked,
        ]
        transcript.follow(continuing=True)
        transcript.bind(live)  # the journal holds the call, not its result
        assert [m.role for m in transcript.messages] == ["user", "assistant"]
        assert [getattr(m, "content", None) for m in transcript.dropped] == ["lost"]
        live.append(Result(tool_call_id="c1", tool_name="look", content="seen"))
        await transcript.sync()

        entries = await stores.sessions.entries("chat")
        reread = Transcript("chat", store, announce, lambda: None)
        reread.load(entries)
    assert len(entries) == 4  # the dropped result stays, on a dead branch
    assert reread.run_id == "run-1"
    contents = [
        m.content if isinstance(m, (UserMessage, Result)) else m.role for m in reread.messages
    ]
    assert contents == ["Go.", "assistant", "seen"]
