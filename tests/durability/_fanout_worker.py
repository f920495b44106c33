"""A worker process for the fan-out crash tests: one fan-out with three children.

Usage: ``python _fanout_worker.py STORE_URL WORKDIR start|resume [finished|tool]``.

Scenario ``finished`` (fan-out ``review-1``), ``start``: child ``a`` answers at once; ``b``
and ``c`` wait forever inside their model call. Once ``a`` has ended (its outcome journaled)
and ``b`` and ``c`` are both in flight, the worker prints ``in-flight`` and waits: the test
SIGKILLs it.

Scenario ``tool`` (fan-out ``review-2``), ``start``: child ``a``'s first model call asks for
tool ``note``, which runs, then ``a`` waits forever inside its second model call; ``b`` and
``c`` wait inside their first. With all three in flight the worker prints ``in-flight``.

``resume`` runs the same fan-out (same ``fan_out_id``) in a new process, started after the
killed worker's leases expired (``LaterClock``); every model call answers at once. Each
model call appends ``<child>:<call>`` to ``WORKDIR/model_calls``, each run of ``note``
appends the child's name to ``WORKDIR/tool_runs``; the result (JSON: the merged output, each
child's name, status, restored flag and run id, and the child run ids the stream's
``SubagentEvent`` carried) goes to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.multi import fan_out_stream
from bastion.stores import DEFAULT_LEASE_TTL
from bastion.testing import Call, FunctionModel, LaterClock, Turn

ANSWERS = {"a": "alpha", "b": "beta", "c": "gamma"}
FAN_OUT_IDS = {"finished": "review-1", "tool": "review-2"}


async def main(store: str, workdir: Path, mode: str, scenario: str) -> None:
    in_flight = {name: asyncio.Event() for name in ANSWERS}
    blocks = mode == "start"

    @tool(side_effect_class="side_effecting")
    async def note(text: str) -> str:
        """Take a note."""
        with (workdir / "tool_runs").open("a") as f:
            f.write(text + "\n")
        return "noted"

    def child(name: str) -> Agent[None, str]:
        with_tool = scenario == "tool" and name == "a"

        async def answer(request: ModelRequest) -> str | Turn:
            call = 2 if any(isinstance(m, ToolMessage) for m in request.messages) else 1
            with (workdir / "model_calls").open("a") as f:
                f.write(f"{name}:{call}\n")
            if with_tool and call == 1:
                return Turn(tool_calls=[Call("note", {"text": name}, id="n1")])
            if blocks and (name != "a" or with_tool):
                in_flight[name].set()
                await asyncio.Event().wait()  # killed while waiting
            return ANSWERS[name]

        return Agent(
            name,
            model=FunctionModel(answer),
            tools=[note] if with_tool else [],
            retry=None,
            clock=None if blocks else LaterClock(DEFAULT_LEASE_TTL + 1),
        )

    lead = Agent("lead", model=FunctionModel(lambda request: "unused"), store=store)
    children = [(child(name), f"part {name}") for name in ANSWERS]
    relayed: set[str] = set()
    fan_out_id = FAN_OUT_IDS[scenario]
    async with lead, fan_out_stream(lead, children, fan_out_id=fan_out_id) as fan:
        async for event in fan:
            if event.type == "subagent.event":
                relayed.add(f"{event.tool_call_id} {event.child_run_id}")
            if not blocks:
                continue
            if scenario == "tool" and event.type == "agent.fanout.spawned" and event.child == "c":
                await asyncio.gather(*(e.wait() for e in in_flight.values()))
                print("in-flight", flush=True)  # the test kills us on this line
            if scenario == "finished" and event.type == "agent.fanout.child.end":
                await in_flight["b"].wait()
                await in_flight["c"].wait()
                print("in-flight", flush=True)  # the test kills us on this line
        result = fan.result
    summary = {
        "output": result.output,
        "children": [[c.name, c.status, c.restored, c.run_id] for c in result.children],
        "relayed": sorted(relayed),
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
