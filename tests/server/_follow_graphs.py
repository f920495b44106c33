"""The graph of the cross-process follow test, served by real ``bastion serve`` processes.

Its ``hold`` node reads the FIFO named by ``BASTION_TEST_GATE``: it blocks until the test
writes a line there (no timer, no polling), so the test decides when the execution goes on.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

from bastion.graph import Graph


async def _gate() -> str:
    """The line written to the FIFO, read in a daemon thread: if the test never writes it,
    the blocked read does not keep the stopped server's process alive."""
    loop = asyncio.get_running_loop()
    said: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        text = Path(os.environ["BASTION_TEST_GATE"]).read_text(encoding="utf-8").strip()
        loop.call_soon_threadsafe(said.set_result, text)

    threading.Thread(target=read, daemon=True).start()
    return await said


def _relay() -> Graph:
    graph = Graph("relay")

    @graph.node
    def plan(inputs: list[Any]) -> str:
        return f"plan for {inputs[0]}"

    @graph.node
    async def hold(inputs: list[str]) -> str:
        said = await _gate()
        return f"{inputs[0]}, {said}"

    @graph.node
    def done(inputs: list[str]) -> str:
        return f"{inputs[0]}, done"

    graph.add_edge("plan", "hold").add_edge("hold", "done")
    return graph


relay = _relay()
