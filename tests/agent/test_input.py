"""Input checks at the API edge: a wrong type is a UserError before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent
from bastion.core import TextPart, UserError, UserMessage
from bastion.testing import ScriptedModel


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (42, "int 42"),
        ({"text": "hi"}, "dict {'text': 'hi'}"),
        (b"hi", "bytes b'hi'"),
        (["hi"], "item 0 is str 'hi'"),
        ([TextPart(text="a"), UserMessage(content="b")], "item 1 is UserMessage"),
    ],
)
async def test_run_rejects_input_that_is_not_text_or_parts(value: Any, shown: str) -> None:
    # covers G-12
    model = ScriptedModel(["never sent"])
    agent = Agent("a", model=model)
    with pytest.raises(UserError, match="must be a string, a list of content parts") as info:
        await agent.run(value)
    assert shown in str(info.value)
    assert model.requests == []  # nothing ran


@pytest.mark.parametrize(
    ("history", "shown"),
    [
        ("hello", "message_history is str 'hello'"),
        ([{"role": "user", "content": "hi"}], "message_history[0] is dict"),
    ],
)
async def test_run_rejects_a_history_that_is_not_messages(history: Any, shown: str) -> None:
    model = ScriptedModel(["never sent"])
    with pytest.raises(UserError, match=r"SystemMessage, UserMessage") as info:
        await Agent("a", model=model).run("hi", message_history=history)
    assert shown in str(info.value)
    assert model.requests == []


async def test_text_parts_and_messages_still_run() -> None:
    model = ScriptedModel(["ok", "ok"])
    agent = Agent("a", model=model)
    result = await agent.run([TextPart(text="hi")])
    assert result.status == "completed"
    result = await agent.run(None, message_history=(UserMessage(content="hello"),))
    assert result.status == "completed"
    assert model.requests[1].messages[-1] == UserMessage(content="hello")
