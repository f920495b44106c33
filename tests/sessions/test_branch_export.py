"""Branching a session from any message, and JSON lines that round-trip compacted sessions."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bastion import Agent
from bastion.context import ContextConfig
from bastion.core import AssistantMessage, Message, UserError, UserMessage
from bastion.sessions import Session
from bastion.stores import SessionEntry, SessionStore
from bastion.testing import ScriptedModel


def _said(messages: Sequence[Message]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append(f"user:{m.text}")
        elif isinstance(m, AssistantMessage):
            out.append(f"assistant:{m.text}")
    return out


async def _chat(agent: Agent, *texts: str) -> Session:
    session = Session(agent, "chat")
    for text in texts:
        session.send(text)
        await session.wait_for_idle()
    return session


async def test_a_branch_shares_history_up_to_a_message_and_grows_apart(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/chat.db"
    agent = Agent("helper", model=ScriptedModel(["A1", "A2", "B3", "A3"]), store=store)
    source = await _chat(agent, "one", "two")
    source.session_state["topic"] = "garden"
    branch = await source.branch(1, id="alt")  # after "A1"
    assert branch.id == "alt"
    assert _said(branch.messages) == ["user:one", "assistant:A1"]
    assert branch.session_state == {"topic": "garden"}
    branch.send("three?")
    await branch.wait_for_idle()
    source.send("three")
    await source.wait_for_idle()

    stores = await agent.stores()
    own = await stores.sessions.entries("alt")
    assert [e.kind for e in own] == ["branched", "message", "message"]  # not a copy
    again = Agent("helper", model=ScriptedModel([]), store=store)
    reread_branch = await Session.resume(again, "alt")
    reread_source = await Session.resume(again, "chat")
    assert _said(reread_branch.messages) == [
        "user:one",
        "assistant:A1",
        "user:three?",
        "assistant:B3",
    ]
    assert _said(reread_source.messages) == [
        "user:one",
        "assistant:A1",
        "user:two",
        "assistant:A2",
        "user:three",
        "assistant:A3",
    ]
    # A branch of a branch reads through both.
    twig = await reread_branch.branch(-2)
    assert _said(twig.messages) == ["user:one", "assistant:A1", "user:three?"]
    with pytest.raises(UserError, match="index of a message"):
        await source.branch(6)
    with pytest.raises(UserError, match="already exists"):
        await source.branch(0, id="alt")
    await agent.aclose()
    await again.aclose()


async def test_a_cycle_of_branches_is_refused_not_followed(tmp_path: Path) -> None:
    # covers §3.4 scenario 26 (a cycle never hangs)
    agent = Agent("helper", model=ScriptedModel([]), store=f"sqlite:///{tmp_path}/chat.db")
    stores = await agent.stores()
    await stores.sessions.append("a", kind="branched", payload={"session": "b", "entry": "x"})
    await stores.sessions.append("b", kind="branched", payload={"session": "a", "entry": "y"})
    with pytest.raises(UserError, match="cycle"):
        await Session.resume(agent, "a")
    await agent.aclose()


async def test_export_import_round_trips_a_compacted_branch(tmp_path: Path) -> None:
    summarizer = ScriptedModel(["They said one."], name="summarizer")
    agent = Agent(
        "helper",
        model=ScriptedModel(["A1", "A2", "A3"]),
        store=f"sqlite:///{tmp_path}/a.db",
        context=ContextConfig(max_context_tokens=100_000, summarizer=summarizer),
    )
    source = await _chat(agent, "one", "two")
    await source.compact(keep_last=2)
    text = await source.export_jsonl()
    kinds = [line.split('"kind":"')[1].split('"')[0] for line in text.splitlines()[1:]]
    assert kinds == ["message"] * 4 + ["compacted"]

    other = Agent("helper", model=ScriptedModel(["B"]), store=f"sqlite:///{tmp_path}/b.db")
    imported = await Session.import_jsonl(other, text)
    assert _said(imported.messages) == _said(source.messages)
    assert await imported.export_jsonl() == text  # byte-equal
    imported.send("three")
    await imported.wait_for_idle()
    assert _said(imported.messages)[-2:] == ["user:three", "assistant:B"]

    # A branch exports its shared part as one compacted entry: the export stands alone.
    branch = await source.branch(-1, id="alt")
    exported = await branch.export_jsonl()
    third = Agent("helper", model=ScriptedModel([]), store=f"sqlite:///{tmp_path}/c.db")
    alone = await Session.import_jsonl(third, exported)
    assert _said(alone.messages) == _said(source.messages)
    assert await alone.export_jsonl() == exported
    entries: list[SessionEntry] = await (await third.stores()).sessions.entries("alt")
    assert [e.kind for e in entries] == ["compacted"]
    for a in (agent, other, third):
        await a.aclose()


async def test_a_branch_never_continues_its_sources_turn(tmp_path: Path) -> None:
    """Branched inside a turn: the source's run is the source's, the branch starts afresh."""
    from bastion.sessions._branch import read_entries
    from bastion.sessions._transcript import Transcript

    store = f"sqlite:///{tmp_path}/chat.db"
    agent = Agent("helper", model=ScriptedModel(["A1"]), store=store)
    source = await _chat(agent, "one")
    branch = await source.branch(0)  # the user message that started the source's turn
    stores = await agent.stores()

    async def sessions() -> SessionStore:
        return stores.sessions

    reread = Transcript(branch.id, sessions, _quiet, lambda: None)
    reread.load(await read_entries(stores.sessions, branch.id))
    assert reread.run_id is None
    assert not branch.running  # nothing to continue
    await agent.aclose()


async def _quiet(message: Message) -> None:
    pass
