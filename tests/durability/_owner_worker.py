"""Worker process for ``test_ownership.py``: one live owner of a chat or a run.

``python _owner_worker.py STORE MODE ARGS…``:

* ``chat SESSION NAME COUNT``: sends COUNT messages ``NAME-i`` to the session (each turn: a
  ``note`` tool call, then ``re: NAME-i``), waiting for each; prints ``done``.
* ``hold-turn SESSION``: sends ``slow``, whose tool prints ``in-tool`` and waits for a line on
  stdin before it returns ``went``; prints the turn's text at the end.
* ``hold-run``: starts a run (printing its id) whose tool does the same; prints its status.
* ``fuzz PLAN``: runs a JSON plan ``{session: [op, …]}`` on one handle per session, the
  sessions at once; an op is ``["send", text, mode]``, ``["abort"]`` or ``["wait"]``.
  Prints ``{text: final status}`` of every message sent.
"""

from __future__ import annotations

import asyncio
import json
import sys

from bastion import Agent, Session, tool
from bastion.core import AssistantMessage, ModelRequest, ToolMessage, UserMessage
from bastion.sessions import SentMessage
from bastion.testing import Call, FunctionModel, Turn


@tool(side_effect_class="read_only")
def note(text: str) -> str:
    """Write a note down."""
    return f"noted {text}"


@tool(side_effect_class="external_stateful")
async def wait_for_go() -> str:
    """Wait for the test's go (a side effect that takes a while)."""
    print("in-tool", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    return "went"


def answer(request: ModelRequest) -> Turn:
    """A tool call for each new user message, then an answer naming it."""
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        text = str(last.content)
        if text == "slow":
            return Turn(tool_calls=[Call("wait_for_go", {})])
        return Turn(tool_calls=[Call("note", {"text": text})])
    assert isinstance(last, ToolMessage)
    asked = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
    return Turn(text=f"re: {asked.content} ({last.content})")


def build_agent(store: str) -> Agent[None, str]:
    """The agent every worker and the test itself use."""
    return Agent("owner", model=FunctionModel(answer), tools=[note, wait_for_go], store=store)


async def _play(
    agent: Agent[None, str], session_id: str, ops: list[list[str]], statuses: dict[str, str]
) -> None:
    """One handle on ``session_id`` plays ``ops``; records each message's final status."""
    session = Session(agent, session_id)
    sent: list[SentMessage] = []
    for op in ops:
        if op[0] == "send":
            sent.append(session.send(op[1], mode="steer" if op[2] == "steer" else "queue"))
        elif op[0] == "abort":
            session.abort()
        else:
            await session.wait_for_idle()
    await session.wait_for_idle()
    statuses.update((m.text, m.status) for m in sent)


async def main(store: str, mode: str, *rest: str) -> None:
    agent = build_agent(store)
    try:
        if mode == "chat":
            session_id, name, count = rest
            session = Session(agent, session_id, send_mode="queue")
            for i in range(int(count)):
                session.send(f"{name}-{i}")
                await session.wait_for_idle()
            print("done", flush=True)
        elif mode == "hold-turn":
            session = Session(agent, rest[0])
            session.send("slow")
            await session.wait_for_idle()
            last = session.messages[-1]
            assert isinstance(last, AssistantMessage)
            print(json.dumps(last.text), flush=True)
        elif mode == "fuzz":
            plan: dict[str, list[list[str]]] = json.loads(rest[0])
            statuses: dict[str, str] = {}
            await asyncio.gather(*(_play(agent, sid, ops, statuses) for sid, ops in plan.items()))
            print(json.dumps(statuses), flush=True)
        elif mode == "hold-run":
            stream = agent.stream("slow")
            print(stream.run_id, flush=True)
            result = await stream.drain()
            print(json.dumps({"status": result.status, "output": result.output}), flush=True)
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
