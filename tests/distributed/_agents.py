"""Agents the Temporal tests run, shared by the test process and the worker processes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.distributed import TemporalAgent
from bastion.testing import Call, FunctionModel, Turn
from bastion.tools import SideEffectClass

CRASH_QUEUE = "bastion-test-crash"


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(side_effect_class="side_effecting", needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}: {body}"


def _add(request: ModelRequest) -> Turn:
    """Ask for ``add(2, 3)``, then, with its result in the conversation, answer."""
    if any(isinstance(m, ToolMessage) for m in request.messages):
        return Turn(text="The sum is 5.")
    return Turn(tool_calls=[Call("add", {"a": 2, "b": 3})])


def adder() -> Agent[None, str]:
    """An agent that calls ``add`` once, then answers; any number of runs (one worker's)."""
    return Agent("adder", model=FunctionModel(_add, name="scripted"), tools=[add])


def _mail(request: ModelRequest) -> Turn:
    """Ask to mail Bob, then, with the call's result in the conversation, answer."""
    if any(isinstance(m, ToolMessage) for m in request.messages):
        return Turn(text="Done.")
    return Turn(tool_calls=[Call("send_email", {"to": "bob@example.com", "body": "Hi"})])


def mailer() -> Agent[None, str]:
    """An agent whose one tool call needs approval; any number of runs (one worker's)."""
    return Agent("mailer", model=FunctionModel(_mail, name="scripted"), tools=[send_email])


def served() -> list[Agent[None, str]]:
    """The agents ``bastion worker tests/distributed/_agents.py:served`` serves."""
    return [adder(), mailer()]


def _bump(path: Path) -> int:
    """Add one to the count kept in ``path`` and return it (survives the process)."""
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count


def crash_agent(
    workdir: Path, kind: SideEffectClass = "side_effecting", *, block: str = "tool"
) -> TemporalAgent[str]:
    """An agent whose model calls and ``charge`` runs are counted in files of ``workdir``.

    ``charge`` (of side-effect class ``kind``) prints ``CHARGE_STARTED``; the model prints
    ``MODEL_STARTED``. The first run of the one named by ``block`` (``tool`` or ``model``)
    never returns: the test kills the worker in the middle of it.
    """

    @tool(side_effect_class=kind)
    async def charge(amount: int) -> str:
        """Charge the card."""
        runs = _bump(workdir / "charges")
        print("CHARGE_STARTED", flush=True)
        if runs == 1 and block == "tool":
            await asyncio.Event().wait()  # the worker is killed here
        return f"charged {amount}"

    async def answer(request: ModelRequest) -> Turn | str:
        calls = _bump(workdir / "model_calls")
        print("MODEL_STARTED", flush=True)
        if calls == 1 and block == "model":
            await asyncio.Event().wait()  # the worker is killed here
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("charge", {"amount": 5})])
        return f"charge result: {results[-1].content}"

    agent = Agent("charger", model=FunctionModel(answer), tools=[charge])
    return TemporalAgent(agent, task_queue=CRASH_QUEUE, heartbeat_timeout=1.0)


if __name__ == "__main__":
    sys.exit("import this module; run tests/distributed/_worker.py to start a worker")
