"""A worker process for the graph crash matrix: runs (or resumes) one durable graph execution.

Usage: ``python _crash_worker.py STORE_URL WORKDIR start|resume``. The graph is
``prepare → (left, middle, right) → join``: three parallel branches. Each node body appends
a line to ``WORKDIR/counts/<node>`` when it starts (a file-backed counter). In ``start``
mode ``right`` waits for ``WORKDIR/go``, which nobody creates, so a kill always lands while
it is in flight; ``middle`` waits until ``left`` has started. The execution id goes to
``WORKDIR/execution_id`` before the execution starts; the result (JSON) to stdout.

``BASTION_CRASH=after:<what>`` (or ``before:<what>``) SIGKILLs the process right after
(before) the journal append holding ``<what>``: a node's name (its ``graph_node_finished``
entry) or an entry kind (``graph_started``, ``graph_ended``).
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

from bastion.core import RunStatus
from bastion.graph import Graph, StoreCheckpointer
from bastion.stores import JournalEntry, JournalStore, NewEntry, open_store
from bastion.testing import ForwardingJournal, LaterClock


class CrashingJournal(ForwardingJournal):
    """Kills the process at the append holding one node's result or one entry kind."""

    def __init__(self, inner: JournalStore, spec: str) -> None:
        super().__init__(inner)
        self._when, _, self._what = spec.partition(":")

    def _hit(self, entries: Sequence[NewEntry]) -> bool:
        for entry in entries:
            if entry.kind == self._what:
                return True
            if entry.kind == "graph_node_finished" and entry.payload.get("node") == self._what:
                return True
        return False

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        hit = self._hit(entries)
        if hit and self._when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        stored = await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )
        if hit and self._when == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return stored


async def _wait_for(path: Path) -> None:
    # Another process's (or task's) file: nothing to await but the disk.
    while not await asyncio.to_thread(path.exists):  # noqa: ASYNC110
        await asyncio.sleep(0.005)


def build_graph(workdir: Path, checkpointer: StoreCheckpointer, *, start: bool) -> Graph:
    """The matrix's graph: prepare → left, middle, right (parallel) → join."""
    counts = workdir / "counts"
    counts.mkdir(exist_ok=True)

    def count(name: str) -> None:
        with (counts / name).open("a") as file:
            file.write("ran\n")

    async def prepare(inputs: list[Any]) -> str:
        count("prepare")
        return str(inputs[0]).upper()

    async def left(inputs: list[Any]) -> str:
        count("left")
        return f"{inputs[0]}-left"

    async def middle(inputs: list[Any]) -> str:
        count("middle")
        if start:
            await _wait_for(counts / "left")
        return f"{inputs[0]}-middle"

    async def right(inputs: list[Any]) -> str:
        count("right")
        if start:
            await _wait_for(workdir / "go")  # never created: in flight at the kill
        return f"{inputs[0]}-right"

    async def join(inputs: list[Any]) -> str:
        count("join")
        return " + ".join(str(i) for i in inputs)

    graph = Graph("crashy", checkpointer=checkpointer)
    graph.add_node("prepare", prepare)
    for branch, fn in (("left", left), ("middle", middle), ("right", right)):
        graph.add_node(branch, fn)
        graph.add_edge("prepare", branch)
        graph.add_edge(branch, "join")
    graph.add_node("join", join)
    return graph


async def main(store: str, workdir: Path, mode: str) -> None:
    stores = open_store(store)
    await stores.open()
    crash = os.environ.get("BASTION_CRASH")
    if crash:
        stores.journal = CrashingJournal(stores.journal, crash)
    # A resumer starts after the killed worker's lease ran out (else it would be refused).
    later = LaterClock(stores.lease_ttl + 1) if mode == "resume" else None
    checkpointer = StoreCheckpointer(stores, clock=later)
    graph = build_graph(workdir, checkpointer, start=mode == "start")
    try:
        if mode == "start":
            execution_id = "gx_" + os.urandom(8).hex()
            (workdir / "execution_id").write_text(execution_id)
            result = await graph.run("go", execution_id=execution_id)
        else:
            execution_id = (workdir / "execution_id").read_text()
            result = await graph.resume(execution_id)
        print(json.dumps({"status": result.status, "output": result.output}))
    finally:
        await stores.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
