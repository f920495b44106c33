"""A worker for racing resumes across processes: suspends a review graph, or resumes it.

Usage: ``python _race_worker.py STORE_URL WORKDIR suspend|resume``. ``suspend`` runs
``draft → approve (pauses) → publish`` until it suspends and writes the execution id and
the pending interrupt's id to ``WORKDIR``; ``resume`` resumes it with a decision and prints
``completed`` or ``conflict``. Every node body appends its name to ``WORKDIR/ran``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from bastion.governance import ResultDecision
from bastion.graph import CheckpointConflict, Graph, NodeContext, StoreCheckpointer
from bastion.tools import Directive, InterruptResolution


def build(store: str, workdir: Path) -> Graph:
    def ran(name: str) -> None:
        with (workdir / "ran").open("a") as file:
            file.write(name + "\n")

    async def draft(inputs: list[Any]) -> str:
        ran("draft")
        return "draft"

    async def approve(inputs: list[Any], ctx: NodeContext) -> Any:
        ran("approve")
        return await ctx.pause(inputs[0], reason="approve it")

    async def publish(inputs: list[Any]) -> str:
        ran("publish")
        return f"published {inputs[0]}"

    graph = Graph("race", checkpointer=StoreCheckpointer(store))
    graph.add_node("draft", draft).add_node("approve", approve).add_node("publish", publish)
    return graph.add_edge("draft", "approve").add_edge("approve", "publish")


async def main(store: str, workdir: Path, mode: str) -> None:
    graph = build(store, workdir)
    if mode == "suspend":
        result = await graph.run(None, execution_id="gx_race")
        record = await StoreCheckpointer(store).record("gx_race")
        (workdir / "interrupt").write_text(str(record.pending[0]["id"]))
        print(result.status)
        return
    interrupt = (workdir / "interrupt").read_text()
    decision = InterruptResolution(interrupt_id=interrupt, decision=ResultDecision(value="ok"))
    try:
        result = await graph.resume("gx_race", Directive(interrupts=[decision]))
    except CheckpointConflict:
        print("conflict")
        return
    print(result.status)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
