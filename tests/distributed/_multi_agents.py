"""Multi-agent agents the Temporal tests run, shared by the test process and worker processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage, UserMessage
from bastion.distributed import TemporalAgent
from bastion.multi import as_tool, subagents
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn

FAN_OUT_QUEUE = "bastion-test-fan-out"


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def researchers() -> tuple[Agent[None, str], Agent[None, str], Agent[None, str]]:
    """Three children: ``alpha`` answers, ``beta`` calls ``add`` twice, ``gamma`` answers."""
    alpha = Agent("alpha", model=ScriptedModel(["Alpha found 1."]))
    beta_script = [
        Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
        Turn(tool_calls=[Call("add", {"a": 2, "b": 2})]),
        "Beta found 4.",
    ]
    beta = Agent("beta", model=ScriptedModel(beta_script), tools=[add])
    gamma = Agent("gamma", model=ScriptedModel(["Gamma found 3."]))
    return alpha, beta, gamma


def stalled() -> Agent[None, str]:
    """A child whose model never answers (a sibling's success cancels it)."""

    async def never(request: ModelRequest) -> str:
        await asyncio.Event().wait()
        return "never"

    return Agent("stalled", model=FunctionModel(never))


def lead() -> Agent[None, str]:
    """The host of the fan-outs (its own model is never called by a fan-out)."""
    return Agent("lead", model=ScriptedModel(["unused"]))


def triage_desk() -> tuple[Agent[None, str], Agent[None, str]]:
    """``triage`` hands the conversation over to ``billing``, which answers."""
    billing = Agent(
        "billing",
        instructions="You handle billing.",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("add", {"a": 40, "b": 2})]), "Your refund is 42 EUR."]
        ),
        tools=[add],
        description="Refunds and invoices.",
    )
    script = [Turn(tool_calls=[Call("transfer_to_billing", {"reason": "a refund"})])]
    triage = Agent("triage", model=ScriptedModel(script), handoffs=[billing])
    return triage, billing


def boss() -> Agent[None, str]:
    """``boss`` asks its sub-agent ``explore`` (a ``task_explore`` tool), then quotes it."""
    explorer = Agent(
        "explorer",
        model=ScriptedModel([Turn(tool_calls=[Call("add", {"a": 3, "b": 4})]), "It is 7."]),
        tools=[add],
    )

    def answer(request: ModelRequest) -> Turn | str:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("task_explore", {"input": "What is 3 + 4?"})])
        return f"The explorer says: {results[-1].content}"

    return Agent("boss", model=FunctionModel(answer), tools=[subagents({"explore": explorer})])


def filtering_boss() -> Agent[None, str]:
    """``boss`` whose sub-agent gets the parent's last message through an ``input_filter``."""

    def recall(request: ModelRequest) -> str:
        said = [m.content for m in request.messages if isinstance(m, UserMessage)]
        return f"saw {' | '.join(map(str, said))}"

    child = Agent("recaller", model=FunctionModel(recall))
    tool = as_tool(child, name="recall", input_filter=lambda messages: messages[-1:])

    def answer(request: ModelRequest) -> Turn | str:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("recall", {"input": "Recall"})])
        return f"The child says: {results[-1].content}"

    return Agent("boss", model=FunctionModel(answer), tools=[tool])


def _bump(path: Path) -> int:
    """Add one to the count kept in ``path`` and return it (survives the process)."""
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count


def crash_fan_out(workdir: Path) -> TemporalAgent[str]:
    """A host whose three children each charge once; ``gamma`` first looks something up.

    Every model call and every ``charge`` is counted in files of ``workdir`` (per child);
    ``lookup`` (read-only) prints ``LOOKUP_STARTED`` and its first run never returns: the
    test kills the worker in it.
    """

    @tool(side_effect_class="side_effecting")
    def charge(who: str) -> str:
        """Charge one child's card."""
        _bump(workdir / f"charges_{who}")
        return f"charged {who}"

    @tool(side_effect_class="read_only")
    async def lookup() -> str:
        """Look the price up."""
        runs = _bump(workdir / "lookups")
        print("LOOKUP_STARTED", flush=True)
        if runs == 1:
            await asyncio.Event().wait()  # the worker is killed here
        return "5 EUR"

    def child(name: str) -> Agent[None, str]:
        def answer(request: ModelRequest) -> Turn | str:
            _bump(workdir / f"model_calls_{name}")
            done = [m.content for m in request.messages if isinstance(m, ToolMessage)]
            if name == "gamma" and not done:
                return Turn(tool_calls=[Call("lookup", {})])
            if len(done) < (2 if name == "gamma" else 1):
                return Turn(tool_calls=[Call("charge", {"who": name})])
            return f"{name}: {done[-1]}"

        return Agent(name, model=FunctionModel(answer), tools=[charge, lookup])

    children = [child(name) for name in ("alpha", "beta", "gamma")]
    host = Agent("crash_lead", model=ScriptedModel(["unused"]))
    return TemporalAgent(host, task_queue=FAN_OUT_QUEUE, heartbeat_timeout=1.0, children=children)
