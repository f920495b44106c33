"""A worker process for the crashed-session-turn test: one session turn of three model calls.

Usage: ``python _crash_worker.py STORE_URL WORKDIR start|resume|send|straight``.

The turn: the model calls ``note`` (side-effecting), then ``look`` (read-only), then answers.
``start`` sends "Go." and blocks inside ``look`` (it prints ``waiting`` first): the test
SIGKILLs the process there. ``resume`` reopens the session with ``resume_session`` and waits
until it is idle; ``send`` opens a handle on the session and queues "Next." (the crashed turn
is continued first); ``straight`` is the uninterrupted turn. Each model call appends a line
to ``WORKDIR/model_calls``, each run of a tool to ``WORKDIR/effects``; the session's messages
and events (JSON) go to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, ToolMessage
from bastion.sessions import Session
from bastion.stores import DEFAULT_LEASE_TTL
from bastion.testing import Call, FunctionModel, LaterClock, Turn


def build_agent(store: str, workdir: Path, *, block: bool) -> Agent[None, str]:
    """The agent of the session; ``block``: ``look`` never returns (the first process)."""

    def effect(line: str) -> None:
        with (workdir / "effects").open("a") as f:
            f.write(line + "\n")

    @tool(side_effect_class="side_effecting")
    def note(text: str) -> str:
        """Write a note."""
        effect(f"note:{text}")
        return f"noted {text}"

    @tool(side_effect_class="read_only")
    async def look() -> str:
        """Look around."""
        effect("look")
        if block:
            print("waiting", flush=True)  # the test kills us on this line
            await asyncio.Event().wait()
        return "a garden"

    def answer(request: ModelRequest) -> Turn:
        with (workdir / "model_calls").open("a") as f:
            f.write("call\n")
        answers = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if answers == 0:
            return Turn(text="Noting.", tool_calls=[Call("note", {"text": "a"}, id="c1")])
        if answers == 1:
            return Turn(tool_calls=[Call("look", {}, id="c2")])
        if answers == 2:
            results = [str(m.content) for m in request.messages if isinstance(m, ToolMessage)]
            return Turn(text="Done: " + " | ".join(results))
        return Turn(text="Next done.")

    return Agent(
        "session-crash",
        model=FunctionModel(answer),
        tools=[note, look],
        store=store,
        # The survivor starts after the killed worker's turn lease expired.
        clock=None if block else LaterClock(DEFAULT_LEASE_TTL + 1),
    )


def _record(session: Session, events: list[str]) -> None:
    session.on("turn_end", lambda e: events.append(f"turn_end:{e.text}"))
    session.on("tool_result", lambda e: events.append(f"tool_result:{e.call_id}:{e.result}"))
    session.on("message", lambda e: events.append(f"message:{e.message.role}"))


def _summary(session: Session, events: list[str]) -> dict[str, Any]:
    messages: list[str] = []
    for m in session.messages:
        if isinstance(m, ToolMessage):
            messages.append(f"tool:{m.tool_call_id}:{m.content}")
        elif isinstance(m, AssistantMessage):
            calls = ",".join(c.id for c in m.tool_calls)
            messages.append(f"assistant:{m.text}:{calls}")
        else:
            messages.append(f"{m.role}:{m.content}")
    return {"messages": messages, "events": events}


async def main(store: str, workdir: Path, mode: str) -> None:
    agent = build_agent(store, workdir, block=mode == "start")
    events: list[str] = []
    try:
        if mode == "resume":
            session = await Session.resume(agent, "chat")
            _record(session, events)
            await session.wait_for_idle()
        elif mode == "send":
            session = Session(agent, "chat")
            _record(session, events)
            session.send("Next.", mode="queue")
            await session.wait_for_idle()
        else:
            session = Session(agent, "chat")
            _record(session, events)
            session.send("Go.")
            await session.wait_for_idle()
        print(json.dumps(_summary(session, events)))
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
