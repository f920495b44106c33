"""A worker process for the team crash tests: a broadcast team of three members.

Usage: ``python _team_worker.py STORE_URL WORKDIR start|resume``.

``start``: team run ``team-1``; member ``a``'s first model call asks for tool ``note``,
which runs, then ``a`` waits forever inside its second model call; ``b`` and ``c`` wait
inside their first. With all three in flight the worker prints ``in-flight`` and waits:
the test SIGKILLs it.

``resume`` runs the team again with the same run id in a new process, started after the
killed worker's leases expired (``LaterClock``); every model call answers at once. Each
model call appends ``<member>:<call>`` to ``WORKDIR/model_calls`` (the team's own model
``lead:1``), each run of ``note`` appends the member's name to ``WORKDIR/tool_runs``; the
result (JSON: status, output, total tokens) goes to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage, Usage
from bastion.multi import Team
from bastion.stores import DEFAULT_LEASE_TTL
from bastion.testing import Call, FunctionModel, LaterClock, Turn

ANSWERS = {"a": "alpha", "b": "beta", "c": "gamma"}


async def main(store: str, workdir: Path, mode: str) -> None:
    in_flight = {name: asyncio.Event() for name in ANSWERS}
    blocks = mode == "start"
    clock = None if blocks else LaterClock(DEFAULT_LEASE_TTL + 1)

    def log_call(line: str) -> None:
        with (workdir / "model_calls").open("a") as f:
            f.write(line + "\n")

    @tool(side_effect_class="side_effecting")
    async def note(text: str) -> str:
        """Take a note."""
        with (workdir / "tool_runs").open("a") as f:
            f.write(text + "\n")
        return "noted"

    def member(name: str) -> Agent[None, str]:
        async def answer(request: ModelRequest) -> Turn:
            call = 2 if any(isinstance(m, ToolMessage) for m in request.messages) else 1
            log_call(f"{name}:{call}")
            if name == "a" and call == 1:
                call_note = Call("note", {"text": name}, id="n1")
                return Turn(tool_calls=[call_note], usage=Usage(prompt_tokens=7, requests=1))
            if blocks:
                in_flight[name].set()
                await asyncio.Event().wait()  # killed while waiting
            return Turn(text=ANSWERS[name], usage=Usage(prompt_tokens=10, requests=1))

        return Agent(
            name,
            model=FunctionModel(answer),
            tools=[note] if name == "a" else [],
            retry=None,
            clock=clock,
        )

    def synthesise(request: ModelRequest) -> Turn:
        log_call("lead:1")
        return Turn(text="alpha, beta and gamma", usage=Usage(prompt_tokens=5, requests=1))

    team = Team(
        "review",
        members=[member(name) for name in ANSWERS],
        mode="broadcast",
        model=FunctionModel(synthesise),
        clock=clock,
        store=store,
    )
    run = asyncio.create_task(team.run("Review the patch.", run_id="team-1"))
    if blocks:
        await asyncio.gather(*(e.wait() for e in in_flight.values()))
        print("in-flight", flush=True)  # the test kills us on this line
    result = await run
    await team.aclose()
    summary = {
        "status": result.status,
        "output": result.output,
        "tokens": result.usage.total_tokens,
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
