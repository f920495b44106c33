"""Agents for the CLI tests, named on the command line as ``tests/cli/scripted_agents.py:NAME``.

Most are factories, so every in-process invocation gets a fresh scripted model.
"""

import asyncio
import os

from bastion import Agent, GovernanceOptions, RetryConfig, tool
from bastion.agent import ModelOptions, ToolOptions
from bastion.core import AuthenticationFailed, ModelRequest, Overloaded, RateLimited, ToolMessage
from bastion.governance import Limit
from bastion.multi import as_tool
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn, VirtualClock


@tool(side_effect_class="pure")
def double(x: int) -> int:
    """Double a number.

    Args:
        x: The number.
    """
    return 2 * x


def greeter() -> Agent[None, str]:
    return Agent("greeter", model=ScriptedModel(["Hello from a scripted agent."]))


def doubler() -> Agent[None, str]:
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("double", {"x": 2}), Call("double", {"x": 21})]),
            "2 doubled is 4 and 21 doubled is 42.",
        ]
    )
    return Agent("doubler", model=model, tools=[double])


def broken() -> Agent[None, str]:
    model = ScriptedModel([Turn(error=AuthenticationFailed("Invalid API key.", status=401))])
    return Agent("broken", model=model)


def _pong(request: ModelRequest) -> str:
    return "pong"


agent: Agent[None, str] = Agent("module-level", model=FunctionModel(_pong))

not_an_agent = 42


def returns_a_number() -> int:
    return 7


def needs_arguments(name: str) -> Agent[None, str]:
    return Agent(name, model=FunctionModel(_pong))


async def async_factory() -> Agent[None, str]:
    return Agent("async", model=FunctionModel(_pong))


async def _never_answer(request: ModelRequest) -> str:
    await asyncio.Event().wait()
    return "unreachable"


def stuck() -> Agent[None, str]:
    return Agent("stuck", model=FunctionModel(_never_answer))


def flaky() -> Agent[None, str]:
    """Overloaded once (retried on a virtual clock), then rate limited into the fallback."""
    primary = ScriptedModel(
        [
            Turn(error=Overloaded("Server busy.", status=529)),
            Turn(error=RateLimited("Slow down.", status=429)),
        ],
        name="primary",
    )
    backup = ScriptedModel(["The backup model answered."], name="backup")
    return Agent(
        "flaky",
        model=primary,
        retry=RetryConfig(max_retries=1, initial_delay=2.0, jitter=0.0),
        clock=VirtualClock(),
        model_options=ModelOptions(fallbacks=[backup]),
    )


SENT: list[str] = []


@tool(side_effect_class="side_effecting", needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: The recipient.
        body: The text.
    """
    SENT.append(to)
    return f"sent to {to}"


def mailer() -> Agent[None, str]:
    """Asks to send an email (needs approval), then reports what the tool said."""

    def turn(request: ModelRequest) -> Turn:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(
                text="Sending it.",
                tool_calls=[Call("send_email", {"to": "bob@example.com", "body": "Hi Bob"})],
            )
        return Turn(text=f"Done: {results[-1].text}")

    return Agent("mailer", model=FunctionModel(turn), tools=[send_email])


def _store() -> str:
    return os.environ.get("BASTION_STORE", "memory://")


def stored_mailer() -> Agent[None, str]:
    """The mailer, journaled to ``$BASTION_STORE``."""
    return mailer().with_store(_store())


LOOKED_UP: list[str] = []
OPS = "human:ops"


@tool(side_effect_class="read_only")
def lookup(q: str) -> str:
    """Look something up.

    Args:
        q: The query.
    """
    LOOKED_UP.append(q)
    return f"found {q}"


def spender() -> Agent[None, str]:
    """Two lookups in one step against a limit of one call per minute (ops may raise it)."""

    def turn(request: ModelRequest) -> Turn:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("lookup", {"q": "a"}), Call("lookup", {"q": "b"})])
        return Turn(text="Found: " + ", ".join(m.text for m in results))

    return Agent(
        "spender",
        model=FunctionModel(turn),
        tools=[lookup],
        governance=GovernanceOptions(
            oracles={
                "tool:lookup": [Limit(type="calls", max=1, window="minute", mutable={OPS: True})]
            }
        ),
        store=_store(),
        tool_options=ToolOptions(max_parallel=1),
    )


def boss() -> Agent[None, str]:
    """Delegates to the mailer as a sub-agent, then reports what it said."""

    def turn(request: ModelRequest) -> Turn:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("mailer", {"input": "Email Bob."}, id="m1")])
        return Turn(text=f"Boss: {results[-1].text}")

    return Agent("boss", model=FunctionModel(turn), tools=[as_tool(mailer())])
