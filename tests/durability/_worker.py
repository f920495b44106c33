"""A worker process for the crash matrix: runs (or resumes) one agent run against a store.

Usage: ``python _worker.py STORE_URL WORKDIR start|resume``. The run id goes to
``WORKDIR/run_id`` before the run starts; the result (JSON) to stdout. With
``BASTION_CRASH=after:N`` (or ``before:N``) the process SIGKILLs itself right after (before)
the journal append that stores entry N (appends are batched: see ``RunJournal``); with
``BASTION_CRASH=model:N`` it SIGKILLs itself as the N-th model call is sent. The model
logs each invocation to ``WORKDIR/model_calls``; ``write_line`` (side-effecting, no
idempotency key) appends to ``WORKDIR/effects``; ``charge`` (idempotency key) appends its
key to ``WORKDIR/charges`` unless already there, as an idempotent API would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, RunStatus, ToolMessage
from bastion.stores import (
    DEFAULT_LEASE_TTL,
    JournalEntry,
    JournalStore,
    NewEntry,
)
from bastion.testing import Call, ForwardingJournal, FunctionModel, LaterClock, Turn
from bastion.tools import ApprovalDecision, Directive

OUTCOME_UNKNOWN = "Outcome unknown after crash"


class CrashingJournal(ForwardingJournal):
    """A journal that kills the process at one entry (``BASTION_CRASH``).

    ``before:N`` kills right before the append that would store entry N (with the rest of
    its batch), ``after:N`` right after the append that stored it.
    """

    def __init__(self, inner: JournalStore, spec: str) -> None:
        super().__init__(inner)
        when, _, number = spec.partition(":")
        self._when = when
        self._at = int(number) if number else 0

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        hit = expected_seq < self._at <= expected_seq + len(entries)
        if self._when == "before" and hit:
            os.kill(os.getpid(), signal.SIGKILL)
        stored = await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )
        if self._when == "after" and hit:
            os.kill(os.getpid(), signal.SIGKILL)
        return stored


def build_agent(store: str, workdir: Path, *, later: bool = False) -> Agent[None, str]:
    """The agent of the matrix: three steps, a pure, a side-effecting and an idempotent tool."""

    @tool(side_effect_class="pure")
    def lookup(key: str) -> str:
        """Look a value up."""
        return {"x": "42"}.get(key, "?")

    @tool(side_effect_class="side_effecting")
    def write_line(text: str) -> str:
        """Append a line to the effects file."""
        with (workdir / "effects").open("a") as f:
            f.write(text + "\n")
        return f"wrote {text!r}"

    def charge_key(args: dict[str, Any]) -> str:
        return f"charge-{args['amount']}"

    @tool(side_effect_class="external_stateful", idempotency_key=charge_key)
    def charge(amount: int) -> str:
        """Charge an amount (idempotent by key)."""
        path = workdir / "charges"
        key = charge_key({"amount": amount})
        seen = path.read_text().split() if path.exists() else []
        if key not in seen:
            with path.open("a") as f:
                f.write(key + "\n")
        return f"charged {amount}"

    def answer(request: ModelRequest) -> Turn:
        with (workdir / "model_calls").open("a") as f:
            f.write("call\n")
        calls = len((workdir / "model_calls").read_text().split())
        if os.environ.get("BASTION_CRASH") == f"model:{calls}":  # killed as the call is sent
            os.kill(os.getpid(), signal.SIGKILL)
        turn = sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn == 0:
            return Turn(
                text="Looking.",
                tool_calls=[
                    Call("lookup", {"key": "x"}, id="c1"),
                    Call("write_line", {"text": "hello"}, id="c2"),
                ],
            )
        if turn == 1:
            return Turn(tool_calls=[Call("charge", {"amount": 5}, id="c3")])
        results = [m.content for m in request.messages if isinstance(m, ToolMessage)]
        return Turn(text="Done: " + " | ".join(str(r) for r in results))

    # A resumer starts after the killed worker's lease expired (else it would be refused).
    clock = LaterClock(DEFAULT_LEASE_TTL + 1) if later else None
    return Agent(
        "crash",
        model=FunctionModel(answer),
        tools=[lookup, write_line, charge],
        store=store,
        clock=clock,
    )


async def main(store: str, workdir: Path, mode: str) -> None:
    agent = build_agent(store, workdir, later=mode != "start")
    assert agent.config.store is not None
    await agent.config.store.open()
    crash = os.environ.get("BASTION_CRASH")
    if crash and not crash.startswith("model:"):
        agent.config.store.journal = CrashingJournal(agent.config.store.journal, crash)
    try:
        if mode == "start":
            stream = agent.stream("Go.")
            (workdir / "run_id").write_text(stream.run_id)
            result = await stream.drain()
        else:
            run_id = (workdir / "run_id").read_text()
            result = await agent.resume(run_id)
            decided = 0
            while result.status == "awaiting_approval":  # a human decides, from the effects
                approvals: list[ApprovalDecision] = []
                for request in result.pending_approvals:
                    assert request.reason is not None
                    assert request.reason.startswith(OUTCOME_UNKNOWN), request.reason
                    effects = workdir / "effects"
                    happened = effects.exists() and "hello" in effects.read_text()
                    approvals.append(
                        ApprovalDecision(
                            tool_call_id=request.tool_call_id,
                            granted=True,
                            result="wrote 'hello'" if happened else None,
                        )
                    )
                decided += 1
                result = await agent.resume(run_id, directive=Directive(approvals=approvals))
            (workdir / "decided").write_text(str(decided))
        print(json.dumps({"status": result.status, "output": result.output, "steps": result.steps}))
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
