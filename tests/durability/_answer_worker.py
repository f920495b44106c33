"""A worker process for the crash-after-an-answer test: a tool that asks a person a question.

Usage: ``python _answer_worker.py STORE_URL WORKDIR start|answer|recover``.
``start`` runs until the tool's question suspends the run and writes the run id to
``WORKDIR/run_id``. ``answer`` resumes it with ``Directive(inputs=[...])``: the tool, called
again with the answer, prints ``running`` and waits forever (the test SIGKILLs the process
there). ``recover`` resumes the crashed run with no directive, as an operator would after a
crash. Each run of the tool body appends its answer (or ``asked``) to ``WORKDIR/calls``;
each model call a line to ``WORKDIR/model_calls``. The result (JSON) goes to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, RunContext, ToolMessage
from bastion.stores import DEFAULT_LEASE_TTL
from bastion.testing import Call, FunctionModel, LaterClock, Turn
from bastion.tools import Directive, InputAnswer, InputRequest, InputRequired

QUESTION = InputRequest(
    message="Which channel?",
    schema={
        "type": "object",
        "properties": {"channel": {"type": "string"}},
        "required": ["channel"],
    },
)


def build_agent(store: str, workdir: Path, *, block: bool, later: bool) -> Agent[None, str]:
    @tool(side_effect_class="read_only")
    async def plan_release(ctx: RunContext[Any], version: str) -> str:
        """Plan a release; asks which channel."""
        answer = ctx.input_answer
        with (workdir / "calls").open("a") as f:
            f.write(f"{answer.content['channel'] if answer else 'asked'}\n")
        if answer is None:
            raise InputRequired(QUESTION)
        if block:
            print("running", flush=True)  # the test kills us on this line
            await asyncio.Event().wait()
        return f"{version} planned for {answer.content['channel']}"

    def answer(request: ModelRequest) -> Turn:
        with (workdir / "model_calls").open("a") as f:
            f.write("call\n")
        if not any(isinstance(m, AssistantMessage) for m in request.messages):
            return Turn(tool_calls=[Call("plan_release", {"version": "1.2"}, id="c1")])
        results = [m.content for m in request.messages if isinstance(m, ToolMessage)]
        return Turn(text="Done: " + " | ".join(str(r) for r in results))

    return Agent(
        "answer-crash",
        model=FunctionModel(answer),
        tools=[plan_release],
        store=store,
        # The recovering process starts after the killed worker's lease expired.
        clock=LaterClock(DEFAULT_LEASE_TTL + 1) if later else None,
    )


async def main(store: str, workdir: Path, mode: str) -> None:
    agent = build_agent(store, workdir, block=mode == "answer", later=mode == "recover")
    try:
        if mode == "start":
            stream = agent.stream("Release 1.2.")
            (workdir / "run_id").write_text(stream.run_id)
            result = await stream.drain()
        else:
            run_id = (workdir / "run_id").read_text()
            directive = None
            if mode == "answer":
                given = InputAnswer(tool_call_id="c1", content={"channel": "stable"})
                directive = Directive(inputs=[given])
            result = await agent.resume(run_id, directive=directive)
        pending = [p.tool_call_id for p in result.pending_approvals]
        print(json.dumps({"status": result.status, "output": result.output, "pending": pending}))
    finally:
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
