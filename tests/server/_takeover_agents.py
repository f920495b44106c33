"""The agent of the takeover test, served by real ``bastion serve`` processes.

Each model call and tool run appends a line (``what pid``) to the file named by
``BASTION_TEST_CALLS``; a process started with ``BASTION_TEST_HANG=1`` never answers the
second model call (the test kills it there).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.testing import Call, FunctionModel, Turn


def _note(what: str) -> None:
    with Path(os.environ["BASTION_TEST_CALLS"]).open("a", encoding="utf-8") as calls:
        calls.write(f"{what} {os.getpid()}\n")


@tool(side_effect_class="side_effecting")
def save(text: str) -> str:
    """Save a text (a side effect: it must never run twice).

    Args:
        text: What to save.
    """
    _note("save")
    return f"saved {text}"


async def _answer(request: ModelRequest) -> Turn:
    if not any(isinstance(m, ToolMessage) for m in request.messages):
        _note("model-1")
        return Turn(text="Saving it.", tool_calls=[Call("save", {"text": "draft"})])
    _note("model-2")
    if os.environ.get("BASTION_TEST_HANG") == "1":
        await asyncio.Event().wait()  # this process is killed here
    return Turn(text="Saved and done.")


relay = Agent("relay", model=FunctionModel(_answer), tools=[save])
