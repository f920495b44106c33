"""Agents whose Temporal runs publish events: their store is ``BASTION_STORE``'s.

Their models answer from the request alone, so one worker serves any number of runs.
"""

from __future__ import annotations

from bastion import Agent
from bastion.core import ModelRequest, ToolMessage
from bastion.stores import open_store
from bastion.testing import Call, FunctionModel, Turn
from tests.distributed._agents import add, send_email


def _answer(call: Call, done: str) -> FunctionModel:
    def answer(request: ModelRequest) -> Turn | str:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return done
        return Turn(tool_calls=[call])

    return FunctionModel(answer)


def stored_adder() -> Agent[None, str]:
    """Calls ``add`` once, then answers; journals to ``BASTION_STORE``."""
    model = _answer(Call("add", {"a": 2, "b": 3}), "The sum is 5.")
    return Agent("adder", model=model, tools=[add], store=open_store())


def stored_mailer() -> Agent[None, str]:
    """Calls ``send_email`` (it needs approval), then answers; journals to ``BASTION_STORE``."""
    model = _answer(Call("send_email", {"to": "bob@example.com", "body": "Hi"}), "Done.")
    return Agent("mailer", model=model, tools=[send_email], store=open_store())


def served() -> list[Agent[None, str]]:
    """Both agents, for one ``bastion worker``."""
    return [stored_adder(), stored_mailer()]
