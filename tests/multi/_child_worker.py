"""A worker process for the durable-children tests: a parent whose sub-agent suspends or dies.

Usage: ``python _child_worker.py STORE_URL WORKDIR MODE``. The parent ``boss`` calls its
sub-agent ``janitor`` (no store of its own: it journals in the parent's), which calls
``lookup`` (read-only), then ``delete`` (side-effecting), then answers.

- ``park``: ``delete`` needs approval and nobody can decide: the child suspends, and so
  does the parent. The parent's run id goes to ``WORKDIR/run_id``.
- ``approve``: a new process approves the parent's pending call by id and resumes it.
- ``crash``: the child's second model call blocks after printing ``waiting``: the test
  SIGKILLs the worker there (after ``lookup`` ran and was journaled).
- ``recover``: a new process resumes the parent by id (after the dead worker's lease).

Each completed model call appends ``<agent> <turn>`` to ``WORKDIR/model_calls``, each tool run
``<tool>`` to ``WORKDIR/effects``. The result (JSON) goes to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, ToolMessage
from bastion.multi import as_tool
from bastion.stores import DEFAULT_LEASE_TTL, open_store
from bastion.testing import Call, FunctionModel, LaterClock, Turn
from bastion.tools import ApprovalDecision, Directive


def _note(workdir: Path, name: str, line: str) -> None:
    with (workdir / name).open("a") as f:
        f.write(line + "\n")


def build(store: str, workdir: Path, mode: str) -> Agent[None, str]:
    clock = LaterClock(DEFAULT_LEASE_TTL + 1) if mode in ("approve", "recover") else None

    @tool(side_effect_class="read_only")
    def lookup(path: str) -> str:
        """Look at a path."""
        _note(workdir, "effects", "lookup")
        return f"{path} is stale"

    @tool(side_effect_class="side_effecting", needs_approval=mode in ("park", "approve"))
    def delete(path: str) -> str:
        """Delete a path."""
        _note(workdir, "effects", "delete")
        return f"deleted {path}"

    async def child_turn(request: ModelRequest) -> Turn:
        turn = 1 + sum(isinstance(m, AssistantMessage) for m in request.messages)
        if turn == 2 and mode == "crash":
            await _durable(store, workdir)
            print("waiting", flush=True)  # the test kills us on this line
            await asyncio.Event().wait()
        _note(workdir, "model_calls", f"janitor {turn}")
        if turn == 1:
            return Turn(tool_calls=[Call("lookup", {"path": "/tmp/x"}, id="k1")])
        if turn == 2:
            return Turn(tool_calls=[Call("delete", {"path": "/tmp/x"}, id="k2")])
        return Turn(text="Cleaned /tmp/x.")

    def parent_turn(request: ModelRequest) -> Turn:
        turn = 1 + sum(isinstance(m, AssistantMessage) for m in request.messages)
        _note(workdir, "model_calls", f"boss {turn}")
        if turn == 1:
            return Turn(tool_calls=[Call("janitor", {"input": "clean /tmp"}, id="c1")])
        results = [str(m.content) for m in request.messages if isinstance(m, ToolMessage)]
        return Turn(text="Report: " + " | ".join(results))

    child = Agent(
        "janitor",
        model=FunctionModel(child_turn, name="small"),
        tools=[lookup, delete],
        clock=clock,
    )
    return Agent(
        "boss",
        model=FunctionModel(parent_turn, name="big"),
        tools=[as_tool(child)],
        store=store,
        clock=clock,
    )


async def _durable(store: str, workdir: Path) -> None:
    """Wait until the child's ``lookup`` result is in its journal (a few ms, write-behind)."""
    parent_id = (workdir / "run_id").read_text()
    async with open_store(store) as stores:
        while True:
            runs = await stores.journal.list_runs(agent="janitor", limit=10)
            for record in runs.runs:
                if record.run_id != parent_id:
                    kinds = [e.kind for e in await stores.journal.read(record.run_id)]
                    if "tool_result" in kinds:
                        return
            await asyncio.sleep(0.005)


async def main(store: str, workdir: Path, mode: str) -> None:
    agent = build(store, workdir, mode)
    try:
        if mode in ("approve", "recover"):
            run_id = (workdir / "run_id").read_text()
            directive = None
            if mode == "approve":
                directive = Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=True)])
            result = await agent.resume(run_id, directive=directive)
        else:
            stream = agent.stream("Clean up.")
            (workdir / "run_id").write_text(stream.run_id)
            result = await stream.drain()
        pending: list[dict[str, Any]] = [
            {"call": r.tool_call_id, "tool": r.tool_name, "context": r.input and r.input.context}
            for r in result.pending_approvals
        ]
        usage = {model: u.requests for model, u in result.usage_by_model.items()}
        report = {"status": result.status, "text": result.text, "pending": pending, "usage": usage}
        print(json.dumps(report))
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
