"""Replay trusts no stored row: a damaged, unknown or newer-schema entry is a typed error,
and nothing of the run is run (on SQLite, PostgreSQL and Redis, with rows damaged in place).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.core import new_id
from bastion.stores import JournalUnreadable, NewEntry, open_store
from bastion.testing import Call, ScriptedModel, Turn

from ._backends import store_url, tamper

__all__ = ["store_url"]


def _agent(url: str, effects: list[str], *, resumed: bool = False) -> Agent[None, str]:
    @tool(side_effect_class="pure")
    def write_line(text: str) -> str:
        """Write a line (pure here, so a replay that lost its result would run it again)."""
        effects.append(text)
        return f"wrote {text!r}"

    first = Turn(tool_calls=[Call("write_line", {"text": "hello"}, id="c1")])
    model = ScriptedModel(["Done."] if resumed else [first, "Done."])
    return Agent("writer", model=model, tools=[write_line], store=url)


async def _crashed_copy(url: str, effects: list[str]) -> str:
    """A run as a crash after its tool result leaves it: ``running``, four entries."""
    agent = _agent(url, effects)
    try:
        done = await agent.run("Write hello.")
    finally:
        await agent.aclose()
    run_id = new_id("run")
    async with open_store(url) as stores:
        entries = await stores.journal.read(done.run_id)
        assert [e.kind for e in entries[:4]] == [
            "run_started",
            "model_response",
            "tool_call_started",
            "tool_result",
        ]
        copied = [NewEntry(kind=e.kind, payload=e.payload) for e in entries[:4]]
        for entry in copied:  # the copy is a run of its own
            if entry.kind == "run_started":
                entry.payload["state"]["run_id"] = run_id  # pyright: ignore[reportIndexIssue]
        await stores.journal.append(run_id, copied, expected_seq=0, agent="writer")
    return run_id


async def test_an_intact_crashed_journal_resumes_without_running_the_tool_again(
    store_url: str,
) -> None:
    effects: list[str] = []
    run_id = await _crashed_copy(store_url, effects)
    agent = _agent(store_url, effects, resumed=True)
    try:
        result = await agent.resume(run_id)
    finally:
        await agent.aclose()
    assert result.status == "completed"
    assert effects == ["hello"]  # only the original run wrote it


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ({"seq": 4, "kind": "tool_output"}, "entry 4 is of kind 'tool_output', which this"),
        ({"seq": 4, "kind": "handoff"}, r"entry 4 \(handoff\) is malformed"),
        ({"seq": 2, "schema_version": 2}, "schema_version 2, newer than the 1 this Bastion"),
        ({"seq": 2, "schema_version": 0}, "invalid schema_version 0"),
        ({"seq": 4, "payload": "{not json"}, "entry 4 is damaged: .*not valid JSON"),
        ({"seq": 4, "payload": "[1, 2]"}, "entry 4 is damaged: .*list, not a JSON object"),
        ({"seq": 2, "payload": json.dumps({"event_seq": 3})}, r"entry 2 \(model_response\) is"),
        (
            {"seq": 1, "payload": json.dumps({"event_seq": 1, "state": {"run_id": 5}})},
            r"entry 1 \(run_started\) is malformed",
        ),
        ({"seq": 3, "payload": json.dumps({"event_seq": "x"})}, "event_seq that is not a"),
        ({"seq": 1, "kind": "model_response"}, "entry 1 is 'model_response', not 'run_started'"),
    ],
)
async def test_a_damaged_journal_is_a_typed_error_and_nothing_runs(
    store_url: str, damage: dict[str, Any], message: str
) -> None:
    # covers G-53
    effects: list[str] = []
    run_id = await _crashed_copy(store_url, effects)
    await tamper(store_url, run_id, **damage)
    agent = _agent(store_url, effects, resumed=True)
    try:
        with pytest.raises(JournalUnreadable, match=message) as info:
            await agent.resume(run_id)
    finally:
        await agent.aclose()
    assert info.value.run_id == run_id
    assert f"bastion runs export {run_id}" in str(info.value)
    assert effects == ["hello"]  # the tool did not run again
    async with open_store(store_url) as stores:
        record = await stores.journal.get_run(run_id)
    assert record is not None
    assert (record.status, record.last_seq) == ("running", 4)  # nothing was written
