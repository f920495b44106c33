"""A worker process for the crash-during-approval test: one run whose tool needs approval.

Usage: ``python _approval_worker.py STORE_URL WORKDIR start|resume|directive|straight``.
``start`` writes the run id to ``WORKDIR/run_id`` and runs until the ``on_approval``
callback is asked; the callback writes ``WORKDIR/waiting`` and then waits on an event nobody
sets: the test SIGKILLs the process while it waits. ``resume`` resumes the run by id with a
callback that approves at once; ``directive`` resumes it with no callback (the run suspends
``awaiting_approval``; the worker approves the pending call with a ``Directive``, noted in
``WORKDIR/decided``, and resumes again); ``straight`` is the uninterrupted run (approved at
once). Each callback invocation appends a line to ``WORKDIR/asked``, each model call to
``WORKDIR/model_calls``, each run of the tool to ``WORKDIR/effects``; the result (JSON) goes
to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bastion import Agent, ApprovalConfig, tool
from bastion.agent import ToolOptions
from bastion.core import AssistantMessage, ModelRequest, RunContext, ToolMessage
from bastion.stores import DEFAULT_LEASE_TTL
from bastion.testing import Call, FunctionModel, LaterClock, Turn
from bastion.tools import ApprovalDecision, ApprovalRequest, Directive


def build_agent(store: str, workdir: Path, *, block: bool, ask: bool = True) -> Agent[None, str]:
    """Two steps: a call to ``write_line`` (side-effecting, needs approval), then the answer."""

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def write_line(text: str) -> str:
        """Append a line to the effects file."""
        with (workdir / "effects").open("a") as f:
            f.write(text + "\n")
        return f"wrote {text!r}"

    def answer(request: ModelRequest) -> Turn:
        with (workdir / "model_calls").open("a") as f:
            f.write("call\n")
        if not any(isinstance(m, AssistantMessage) for m in request.messages):
            call = Call("write_line", {"text": "hello"}, id="c1")
            return Turn(text="Writing.", tool_calls=[call])
        results = [m.content for m in request.messages if isinstance(m, ToolMessage)]
        return Turn(text="Done: " + " | ".join(str(r) for r in results))

    async def on_approval(request: ApprovalRequest, ctx: RunContext[Any]) -> bool:
        with (workdir / "asked").open("a") as f:
            f.write(f"{request.tool_call_id}\n")
        if not block:
            return True
        (workdir / "waiting").write_text(request.tool_call_id)
        print(f"waiting {request.tool_call_id}", flush=True)  # the test kills us on this line
        await asyncio.Event().wait()  # no decision ever comes: killed while waiting
        return True

    return Agent(
        "approval-crash",
        model=FunctionModel(answer),
        tools=[write_line],
        store=store,
        clock=None if block else LaterClock(DEFAULT_LEASE_TTL + 1),
        tool_options=ToolOptions(
            approval=ApprovalConfig(on_approval=on_approval if ask else None, timeout=3600)
        ),
    )


async def main(store: str, workdir: Path, mode: str) -> None:
    agent = build_agent(store, workdir, block=mode == "start", ask=mode != "directive")
    try:
        if mode in ("resume", "directive"):
            run_id = (workdir / "run_id").read_text()
            result = await agent.resume(run_id)
            if result.status == "awaiting_approval":
                pending = [r.tool_call_id for r in result.pending_approvals]
                (workdir / "decided").write_text(" ".join(pending))
                approvals = [ApprovalDecision(tool_call_id=c, granted=True) for c in pending]
                result = await agent.resume(run_id, directive=Directive(approvals=approvals))
        else:
            stream = agent.stream("Go.")
            (workdir / "run_id").write_text(stream.run_id)
            result = await stream.drain()
        print(json.dumps({"status": result.status, "output": result.output, "steps": result.steps}))
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
