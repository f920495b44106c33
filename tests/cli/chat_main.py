"""``python tests/cli/chat_main.py chat …``: the ``bastion`` CLI with a scripted provider.

Registers the provider ``chat-test`` (any model name: ``--model chat-test:NAME``), then runs
the CLI, so ``bastion chat`` is driven end to end in a real process without a model API.

The model, answering the last user message:

* ``hang``: streams ``Thinking about it`` and never finishes (the test sends SIGINT);
* ``delete PATH``: asks for ``delete_file(path=PATH)`` (a call that needs approval), then
  says what happened to it;
* ``ponder``: reasons first (folded by the chat), then answers;
* anything else: ``[NAME] N user messages, last: TEXT``, so the history shows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from bastion import Agent, tool
from bastion.cli import main
from bastion.core import (
    FinishChunk,
    ModelRequest,
    ReasoningChunk,
    StreamChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolMessage,
    Usage,
    UserMessage,
)
from bastion.providers import register_provider
from bastion.testing import FunctionModel

DELETED: list[str] = []


@tool(side_effect_class="side_effecting", needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: The file.
    """
    DELETED.append(path)
    return f"deleted {path}"


def _model(name: str, **_: object) -> FunctionModel:
    async def stream(request: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        users = [m for m in request.messages if isinstance(m, UserMessage)]
        text = str(users[-1].content)
        last = request.messages[-1]
        usage = Usage(prompt_tokens=10, completion_tokens=5, requests=1)
        if isinstance(last, ToolMessage):
            yield f"The call said: {last.content}"
        elif text == "hang":
            yield "Thinking about it"
            await asyncio.Event().wait()
        elif text.startswith("delete "):
            arguments = json.dumps({"path": text.removeprefix("delete ")})
            yield ToolCallStartChunk(id=f"call-{len(users)}", name="delete_file")
            yield ToolCallDeltaChunk(id=f"call-{len(users)}", arguments_delta=arguments)
            yield ToolCallEndChunk(id=f"call-{len(users)}")
            yield FinishChunk(finish_reason="tool_calls", usage=usage)
            return
        elif text == "ponder":
            yield ReasoningChunk(text="Let me weigh both sides carefully.")
            yield "Both are fine."
        else:
            yield f"[{name}] {len(users)} user messages, last: {text}"
        yield FinishChunk(finish_reason="stop", usage=usage)

    return FunctionModel(stream_function=stream, name=name)


def assistant() -> Agent[None, str]:
    """The chat test's agent: the scripted model and one tool that needs approval."""
    return Agent("assistant", model="chat-test:first", tools=[delete_file])


register_provider("chat-test", _model, replace=True)

if __name__ == "__main__":
    main()
