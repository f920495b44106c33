"""A worker process for the session-handoff test: one turn of a stored session, then exit.

Usage: ``python _handoff_worker.py STORE_URL SESSION_ID first|next``.

``first`` opens the session on ``triage`` and sends "I was charged twice."; triage's model
hands off to ``billing``, whose model answers. ``next`` reopens the session with
``resume_session`` (a new process, new agents) and sends "Refund A1.". Each prints one JSON
line: the session's ``active_agent`` and, per agent, the requests its model received (the
system prompt, the tool names, the last message's text).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from bastion import Agent, Session, tool
from bastion.agent import AgentRegistry, RunOptions
from bastion.core import ModelRequest, SystemMessage, UserMessage
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="read_only")
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _request(request: ModelRequest) -> dict[str, Any]:
    first, last = request.messages[0], request.messages[-1]
    return {
        "system": first.content if isinstance(first, SystemMessage) else None,
        "tools": sorted(t.name for t in request.tools),
        "last": last.content if isinstance(last, UserMessage) else type(last).__name__,
    }


async def main(store: str, session_id: str, mode: str) -> None:
    first = mode == "first"
    triage_model = ScriptedModel(
        [Turn(tool_calls=[Call("transfer_to_billing", {})])] if first else []
    )
    billing_model = ScriptedModel(["Billing here." if first else "Refunded A1."])
    registry = AgentRegistry()
    registry.add(
        Agent(
            "billing",
            model=billing_model,
            instructions="You are billing.",
            tools=[refund],
            handoffs=["triage"],
            run_options=RunOptions(agent_registry=registry),
        )
    )
    triage = registry.add(
        Agent(
            "triage",
            model=triage_model,
            instructions="You route.",
            handoffs=["billing"],
            store=store,
            run_options=RunOptions(agent_registry=registry),
        )
    )
    if first:
        session = Session(triage, session_id)
        session.send("I was charged twice.")
    else:
        session = await Session.resume(triage, session_id)
        session.send("Refund A1.")
    await session.wait_for_idle()
    await triage.aclose()
    print(
        json.dumps(
            {
                "active_agent": session.active_agent,
                "triage": [_request(r) for r in triage_model.requests],
                "billing": [_request(r) for r in billing_model.requests],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
