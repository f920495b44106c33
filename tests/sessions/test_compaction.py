"""Compacting a session: ``session.compact(keep_last=k)`` and a turn's own compaction.

The compacted history is stored (a ``compacted`` entry), announced (``compacted``), read
back by any handle, and is what the next turn's model reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bastion import Agent, Session
from bastion.context import SUMMARY_HEADER, ContextConfig
from bastion.core import AssistantMessage, Message, UserError, UserMessage
from bastion.sessions import Compacted
from bastion.testing import ScriptedModel


def _said(messages: Sequence[Message]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append(f"user:{m.text}")
        elif isinstance(m, AssistantMessage):
            out.append(f"assistant:{m.text}")
    return out


def _agent(store: str, answers: list[str], summarizer: ScriptedModel, **kw: int) -> Agent:
    config = ContextConfig(
        strategy="summarize", max_context_tokens=kw.get("window", 100_000), summarizer=summarizer
    )
    return Agent(
        "helper", model=ScriptedModel(answers), store=store, context=config, instructions="Be kind."
    )


async def test_compact_keeps_the_last_k_and_summarizes_the_rest(tmp_path: Path) -> None:
    # covers §3.4 scenario 25 (session.compact(keep_last=k))
    store = f"sqlite:///{tmp_path}/chat.db"
    summarizer = ScriptedModel(["They said one and two."], name="summarizer")
    agent = _agent(store, ["A1", "A2", "A3", "A4"], summarizer)
    session = Session(agent, "chat")
    seen: list[Compacted] = []
    session.on("compacted", seen.append)
    for text in ("one", "two", "three"):
        session.send(text)
        await session.wait_for_idle()

    done = await session.compact(keep_last=2)
    summary = f"user:{SUMMARY_HEADER}They said one and two."
    assert _said(session.messages) == [summary, "user:three", "assistant:A3"]
    assert done.exchanges_summarized == 4
    assert len(summarizer.requests) == 1
    assert [(e.source, e.strategy) for e in seen] == [("manual", "summarize")]
    assert seen[0].after_tokens < seen[0].before_tokens

    # Another process reads the compacted history; its next turn's model reads it too.
    again = _agent(store, ["A4"], ScriptedModel([], name="unused"))
    reopened = await Session.resume(again, "chat")
    assert _said(reopened.messages) == _said(session.messages)
    reopened.send("four")
    await reopened.wait_for_idle()
    model = again.config.model
    assert isinstance(model, ScriptedModel)
    sent = _said(model.requests[-1].messages)
    assert sent == [summary, "user:three", "assistant:A3", "user:four"]
    await agent.aclose()
    await again.aclose()


async def test_compact_with_k_or_fewer_exchanges_does_nothing(tmp_path: Path) -> None:
    summarizer = ScriptedModel([], name="summarizer")
    agent = _agent(f"sqlite:///{tmp_path}/chat.db", ["A1"], summarizer)
    session = Session(agent, "chat")
    seen: list[Compacted] = []
    session.on("compacted", seen.append)
    session.send("one")
    await session.wait_for_idle()
    done = await session.compact(keep_last=2)
    assert not done.changed
    assert _said(session.messages) == ["user:one", "assistant:A1"]
    assert seen == []
    assert summarizer.requests == []
    stores = await agent.stores()
    assert [e.kind for e in await stores.sessions.entries("chat")] == ["message", "message"]
    await agent.aclose()


async def test_compact_needs_a_context_config_and_an_idle_session() -> None:
    bare = Agent("helper", model=ScriptedModel(["A1"]))
    session = Session(bare, "chat")
    session.send("one")
    with pytest.raises(UserError, match="is in a turn"):
        await session.compact(keep_last=1)
    await session.wait_for_idle()
    with pytest.raises(UserError, match="context=ContextConfig"):
        await session.compact(keep_last=1)
    with pytest.raises(UserError, match="keep_last=-1"):
        await session.compact(keep_last=-1, config=ContextConfig(max_context_tokens=1000))


async def test_a_turn_that_compacts_leaves_the_session_compacted(tmp_path: Path) -> None:
    """Auto-compaction inside a turn: stored once; the next turn does not pay for it again."""
    store = f"sqlite:///{tmp_path}/chat.db"
    summarizer = ScriptedModel(["Long talk so far."] * 3, name="summarizer")
    long = "word " * 300
    agent = _agent(store, [long, long, long, "short"], summarizer, window=1_200)
    session = Session(agent, "chat")
    seen: list[Compacted] = []
    session.on("compacted", seen.append)
    for text in ("one", "two", "three", "four"):
        session.send(text)
        await session.wait_for_idle()
    assert [e.source for e in seen] == ["auto-trigger"] * len(summarizer.requests)
    assert seen  # the window is small: the history was compacted at least once
    stored = _said(session.messages)
    assert stored[0].startswith(f"user:{SUMMARY_HEADER}")
    assert stored[-2:] == ["user:four", "assistant:short"]
    reopened = await Session.resume(_agent(store, [], ScriptedModel([])), "chat")
    assert _said(reopened.messages) == stored
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    assert _said(model.requests[-1].messages) == stored[:-1]  # what the last turn read
    await agent.aclose()


async def test_a_message_sent_while_compacting_runs_on_the_compacted_history(
    tmp_path: Path,
) -> None:
    from bastion.core import ModelRequest
    from bastion.testing import FunctionModel, Turn

    statuses: list[str] = []

    def summarize(request: ModelRequest) -> Turn:
        statuses.append(session.send("three").status)  # while the history is rewritten
        return Turn(text="They said one.")

    model = ScriptedModel(["A1", "A2", "A3"])
    summarizer = FunctionModel(summarize, name="summarizer")
    agent = Agent(
        "helper",
        model=model,
        store=f"sqlite:///{tmp_path}/chat.db",
        context=ContextConfig(max_context_tokens=100_000, summarizer=summarizer),
    )
    session = Session(agent, "chat")
    for text in ("one", "two"):
        session.send(text)
        await session.wait_for_idle()
    await session.compact(keep_last=2)
    assert statuses == ["pending"]  # it waited for the compaction
    await session.wait_for_idle()
    assert _said(model.requests[-1].messages) == [
        f"user:{SUMMARY_HEADER}They said one.",
        "user:two",
        "assistant:A2",
        "user:three",
    ]
    assert _said(session.messages)[-1] == "assistant:A3"
    await agent.aclose()
