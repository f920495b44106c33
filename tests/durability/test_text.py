"""Any Python string survives every persistent store, and a store error never leaves a run
``running``.

A file name decoded with ``surrogateescape`` holds lone surrogates, which have no UTF-8 form:
payloads keep them exactly (as JSON ``\\udcXX`` escapes); identifiers and artifact text, which
a store keeps as plain text, refuse them with a UserError before anything is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bastion import Agent, Session, tool
from bastion.core import RunStatus, ToolMessage, UserError
from bastion.stores import JournalEntry, JournalStore, NewEntry, open_store
from bastion.stores._types import decode_object, encode_object
from bastion.testing import Call, ForwardingJournal, ScriptedModel, Turn

from ._backends import store_url

__all__ = ["store_url"]

NAME = os.fsdecode(b"caf\xe9-\xff.txt")  # 'caf\udce9-\udcff.txt'


def _listing_agent(url: str) -> tuple[Agent[None, str], ScriptedModel, list[int]]:
    runs: list[int] = []

    @tool(side_effect_class="side_effecting")
    def list_dir() -> str:
        """List the directory."""
        runs.append(1)
        return NAME

    model = ScriptedModel([Turn(tool_calls=[Call("list_dir", id="c1")]), "Found it."])
    return Agent("lister", model=model, tools=[list_dir], store=url), model, runs


async def test_a_tool_returning_a_surrogate_escaped_name_completes_and_keeps_it(
    store_url: str,
) -> None:
    agent, model, runs = _listing_agent(store_url)
    try:
        result = await agent.run("What is there?")
        assert result.status == "completed"
        # The model saw the exact string the tool returned.
        tool_message = model.requests[1].messages[-1]
        assert isinstance(tool_message, ToolMessage)
        assert tool_message.content == NAME
        async with open_store(store_url) as stores:
            record = await stores.journal.get_run(result.run_id)
            entries = await stores.journal.read(result.run_id)
        assert record is not None
        assert record.status == "completed"
        [stored] = [e.payload["content"] for e in entries if e.kind == "tool_result"]
        assert stored == NAME
        # Resuming the ended run replays it: nothing runs again, the transcript is intact.
        again = await agent.resume(result.run_id)
        assert again.status == "completed"
        assert runs == [1]
        assert [m.content for m in again.messages if isinstance(m, ToolMessage)] == [NAME]
    finally:
        await agent.aclose()


async def test_session_payloads_and_state_keep_lone_surrogates(store_url: str) -> None:
    async with open_store(store_url) as stores:
        entry = await stores.sessions.append("s1", kind="message", payload={"text": NAME})
        await stores.sessions.put_state("s1", {"cwd": NAME, "list": [NAME, "é"]})
        [read] = await stores.sessions.entries("s1")
        assert read.payload == {"text": NAME}
        assert read.entry_id == entry.entry_id
        assert await stores.sessions.get_state("s1") == {"cwd": NAME, "list": [NAME, "é"]}


async def test_text_a_store_keeps_verbatim_refuses_lone_surrogates_and_writes_nothing(
    store_url: str,
) -> None:
    entry = NewEntry(kind="run_started", payload={})
    async with open_store(store_url) as stores:
        with pytest.raises(UserError, match=r"run_id .* is not valid Unicode text"):
            await stores.journal.append(NAME, [entry], expected_seq=0)
        with pytest.raises(UserError, match=r"session_id .* lone surrogate"):
            await stores.sessions.append(NAME, kind="message", payload={})
        with pytest.raises(UserError, match="entry_id"):
            await stores.sessions.append("s2", kind="message", payload={}, entry_id=NAME)
        with pytest.raises(UserError, match="Artifact content"):
            await stores.artifacts.write("r1", NAME, role="notes", seq=1)
        with pytest.raises(UserError, match="Counter key"):
            await stores.counters.add(NAME, 1.0)
        page = await stores.journal.list_runs()
        assert page.runs == []
        assert await stores.sessions.list_sessions() == []
        assert await stores.artifacts.read() == []


class _FailingJournal(ForwardingJournal):
    """A journal whose append of a ``tool_result`` fails once, as a dropped connection would."""

    def __init__(self, inner: JournalStore) -> None:
        super().__init__(inner)
        self.failed = False

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        if not self.failed and any(e.kind == "tool_result" for e in entries):
            self.failed = True
            raise ConnectionResetError("connection reset by peer")
        return await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )


async def test_a_store_error_fails_the_run_and_never_leaves_it_running(store_url: str) -> None:
    agent, model, runs = _listing_agent(store_url)
    assert agent.config.store is not None
    await agent.config.store.open()
    failing = _FailingJournal(agent.config.store.journal)
    agent.config.store.journal = failing
    try:
        result = await agent.run("What is there?")
    finally:
        await agent.aclose()
    assert failing.failed
    assert result.status == "failed"
    assert result.error is not None
    assert "StoreError" in result.error.message
    assert "connection reset by peer" in result.error.message
    assert len(model.requests) == 1  # the next model call was never sent
    assert runs == [1]
    async with open_store(store_url) as stores:
        record = await stores.journal.get_run(result.run_id)
        entries = await stores.journal.read(result.run_id)
    assert record is not None
    assert record.status == "failed"
    assert [e.kind for e in entries][-1] == "run_ended"
    assert entries[-1].payload["state"]["error"]["code"] == "store_error"  # pyright: ignore[reportIndexIssue, reportCallIssue, reportArgumentType, reportOptionalSubscript]


_ANY_TEXT = st.text(alphabet=st.characters(codec=None, categories=None), max_size=40)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(_ANY_TEXT, _JSON, max_size=5))
def test_any_json_object_with_any_text_encodes_to_utf8_and_decodes_equal(
    payload: dict[str, object],
) -> None:
    text = encode_object(payload, "Payload")
    text.encode("utf-8")  # every backend can store it
    assert decode_object(text) == payload
    assert json.loads(text) == payload


async def test_a_session_export_with_lone_surrogates_is_utf8_and_imports_back_equal(
    store_url: str,
) -> None:

    agent, _, runs = _listing_agent(store_url)
    other = Agent("lister", model=ScriptedModel([]), store="memory://")
    try:
        session = Session(agent, "s-export")
        session.send("What is there?")
        await session.wait_for_idle()
        exported = await session.export_jsonl()
        exported.encode("utf-8")  # writable to any file
        imported = await Session.import_jsonl(other, exported)
        assert await imported.export_jsonl() == exported
        reopened = await Session.resume(agent, "s-export")
    finally:
        await agent.aclose()
        await other.aclose()
    assert runs == [1]
    assert NAME in [m.content for m in reopened.messages if isinstance(m, ToolMessage)]
    assert "\\udce9" in exported  # escaped in the file, exact once read
