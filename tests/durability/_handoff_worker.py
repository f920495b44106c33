"""A worker process for the handoff crash test: a triage agent hands off to billing.

Usage: ``python _handoff_worker.py STORE_URL WORKDIR start|resume``. The run id goes to
``WORKDIR/run_id``; the result (JSON) to stdout. Each model call appends its agent's name
to ``WORKDIR/model_calls``. ``BASTION_CRASH`` picks where the starting process SIGKILLs
itself: ``model:billing`` as billing's first model call is sent, ``after:handoff`` right
after the journal append that stored the ``handoff`` entry, ``before:handoff`` right
before it. The resuming process finds billing by name in the agent registry.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from bastion import Agent
from bastion.agent import AgentRegistry, RunOptions
from bastion.core import ModelRequest, RunStatus, SystemMessage
from bastion.stores import DEFAULT_LEASE_TTL, JournalEntry, JournalStore, NewEntry
from bastion.testing import Call, ForwardingJournal, FunctionModel, LaterClock, Turn


class HandoffCrash(ForwardingJournal):
    """Kills the process before or after the append holding the ``handoff`` entry."""

    def __init__(self, inner: JournalStore, when: str) -> None:
        super().__init__(inner)
        self._when = when

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        hit = any(entry.kind == "handoff" for entry in entries)
        if hit and self._when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        stored = await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )
        if hit and self._when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return stored


def _logged(workdir: Path, name: str) -> int:
    with (workdir / "model_calls").open("a") as f:
        f.write(name + "\n")
    return (workdir / "model_calls").read_text().split().count(name)


def build(store: str, workdir: Path, *, later: bool) -> Agent[None, str]:
    clock = LaterClock(DEFAULT_LEASE_TTL + 1) if later else None
    agents = AgentRegistry()

    def triage(request: ModelRequest) -> Turn:
        _logged(workdir, "triage")
        return Turn(tool_calls=[Call("transfer_to_billing", {"reason": "refund"}, id="h1")])

    def billing(request: ModelRequest) -> Turn:
        calls = _logged(workdir, "billing")
        if os.environ.get("BASTION_CRASH") == "model:billing" and calls == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        system = request.messages[0]
        assert isinstance(system, SystemMessage)
        return Turn(text=f"Billing here ({system.content})")

    agents.add(
        Agent(
            "billing",
            model=FunctionModel(billing, name="billing"),
            instructions="billing desk",
            store=store,
            clock=clock,
        )
    )
    return agents.add(
        Agent(
            "triage",
            model=FunctionModel(triage, name="triage"),
            instructions="triage desk",
            handoffs=["billing"],
            store=store,
            clock=clock,
            run_options=RunOptions(agent_registry=agents),
        )
    )


async def main(store: str, workdir: Path, mode: str) -> None:
    agent = build(store, workdir, later=mode != "start")
    assert agent.config.store is not None
    await agent.config.store.open()
    crash = os.environ.get("BASTION_CRASH", "")
    if crash.endswith(":handoff"):
        agent.config.store.journal = HandoffCrash(agent.config.store.journal, crash.split(":")[0])
    try:
        if mode == "start":
            stream = agent.stream("Refund my order.")
            (workdir / "run_id").write_text(stream.run_id)
            result = await stream.drain()
        else:
            result = await agent.resume((workdir / "run_id").read_text())
        print(
            json.dumps(
                {"status": result.status, "output": result.output, "last": result.last_agent}
            )
        )
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
