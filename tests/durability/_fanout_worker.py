"""A worker process for the fan-out crash test: one fan-out with three children.

Usage: ``python _fanout_worker.py STORE_URL WORKDIR start|resume``.

``start``: child ``a`` answers at once; ``b`` and ``c`` wait forever inside their model
call. Once ``a`` has ended (its outcome journaled) and ``b`` and ``c`` are both in flight,
the worker prints ``in-flight`` and waits: the test SIGKILLs it. ``resume`` runs the same
fan-out (same ``fan_out_id``) in a new process; every child answers at once. Each model call
appends the child's name to ``WORKDIR/model_calls``; the result (JSON) goes to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bastion import Agent
from bastion.core import ModelRequest
from bastion.testing import FunctionModel

ANSWERS = {"a": "alpha", "b": "beta", "c": "gamma"}


async def main(store: str, workdir: Path, mode: str) -> None:
    in_flight = {name: asyncio.Event() for name in ANSWERS}

    def child(name: str) -> Agent[None, str]:
        async def answer(request: ModelRequest) -> str:
            with (workdir / "model_calls").open("a") as f:
                f.write(name + "\n")
            if mode == "start" and name != "a":
                in_flight[name].set()
                await asyncio.Event().wait()  # killed while waiting
            return ANSWERS[name]

        return Agent(name, model=FunctionModel(answer), retry=None)

    lead = Agent("lead", model=FunctionModel(lambda request: "unused"), store=store)
    children = [(child(name), f"part {name}") for name in ANSWERS]
    async with lead, lead.fan_out_stream(children, fan_out_id="review-1") as fan:
        async for event in fan:
            if mode == "start" and event.type == "agent.fanout.child.end" and event.child == "a":
                await in_flight["b"].wait()
                await in_flight["c"].wait()
                print("in-flight", flush=True)  # the test kills us on this line
        result = fan.result
    summary = {
        "output": result.output,
        "children": [[c.name, c.status, c.restored] for c in result.children],
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
