"""A ``Team`` with a store: its run is journaled, a re-run takes the finished member calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bastion import Agent
from bastion.core import ModelRequest, Usage, UserError, UserMessage
from bastion.multi import Team
from bastion.multi._team_keys import team_call_run_id
from bastion.stores import open_store
from bastion.testing import FunctionModel, Turn


def used(tokens: int) -> Usage:
    return Usage(prompt_tokens=tokens, completion_tokens=0, requests=1)


def counting(name: str, calls: list[str], answer: str, tokens: int) -> FunctionModel:
    def reply(request: ModelRequest) -> Turn:
        calls.append(name)
        return Turn(text=answer, usage=used(tokens))

    return FunctionModel(reply)


def voter(name: str, calls: list[str], answer: str, tokens: int) -> Agent[Any, Any]:
    return Agent(name, model=counting(name, calls, answer, tokens), retry=None)


def broadcast_team(store: str, calls: list[str]) -> Team:
    return Team(
        "review",
        members=[voter(n, calls, f"{n} says ship", 10) for n in "abc"],
        mode="broadcast",
        model=counting("lead", calls, "Ship it.", 5),
        store=store,
    )


async def test_a_broadcast_run_again_takes_every_member_call_from_the_journal(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path}/team.db"
    calls: list[str] = []
    first = await broadcast_team(store, calls).run("Ship the patch?", run_id="team-1")
    assert first.status == "completed"
    assert first.output == "Ship it."
    assert sorted(calls) == ["a", "b", "c", "lead"]

    again_calls: list[str] = []
    team = broadcast_team(store, again_calls)
    again = await team.run("Ship the patch?", run_id="team-1")
    await team.aclose()
    assert again_calls == []  # no model called again
    assert (again.output, again.status, again.text) == (first.output, "completed", first.text)
    assert again.usage == first.usage
    assert again.usage.total_tokens == 35

    async with open_store(store) as stores:
        entries = await stores.journal.read("team-1")
        record = await stores.journal.get_run("team-1")
        member = await stores.journal.get_run(team_call_run_id("team-1", 1, "round1:b"))
    assert [e.kind for e in entries] == ["run_started", *["tool_result"] * 4, "run_ended"]
    keys = sorted(str(e.payload["tool_call_id"]) for e in entries if e.kind == "tool_result")
    assert keys == ["round1:a", "round1:b", "round1:c", "synthesis"]
    assert record is not None
    assert record.status == "completed"
    # a member without a store of its own journals its run in the team's
    assert member is not None
    assert member.status == "completed"


async def test_route_and_collaborate_runs_again_give_the_same_result(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/team.db"

    def route_team(calls: list[str]) -> Team:
        return Team(
            "desk",
            members=[voter("billing", calls, "Refunded.", 3), voter("tech", calls, "no", 1)],
            model=counting("router", calls, "billing", 2),
            store=store,
        )

    def collab_team(calls: list[str]) -> Team:
        rounds: dict[str, int] = {}

        def member(name: str) -> Agent[Any, Any]:
            def reply(request: ModelRequest) -> Turn:
                calls.append(name)
                rounds[name] = rounds.get(name, 0) + 1
                last = request.messages[-1]
                assert isinstance(last, UserMessage)
                agreed = "previous round" in str(last.content)
                return Turn(text="42" if agreed or name == "x" else "41", usage=used(4))

            return Agent(name, model=FunctionModel(reply), retry=None)

        return Team(
            "council",
            members=[member("x"), member("y")],
            mode="collaborate",
            model=counting("lead", calls, "unused", 1),
            store=store,
        )

    for build, run_id in ((route_team, "desk-1"), (collab_team, "council-1")):
        calls: list[str] = []
        first = await build(calls).run("Which?", run_id=run_id)
        assert first.status == "completed"
        again_calls: list[str] = []
        again = await build(again_calls).run("Which?", run_id=run_id)
        assert again_calls == []
        assert (again.output, again.usage) == (first.output, first.usage)
        assert again.state is not None
        assert first.state is not None
        assert again.state.metadata == first.state.metadata
    assert first.output == "42"
    assert first.state.metadata["bastion.team_rounds"] == 2


async def test_a_team_run_id_must_be_a_non_empty_string_or_its_own(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/team.db"
    team = broadcast_team(store, [])
    with pytest.raises(UserError, match="run_id must be a non-empty string"):
        team.stream("Ship?", run_id=" ")
    agent = Agent("solo", model=counting("solo", [], "hi", 1), store=store)
    async with agent:
        taken = (await agent.run("hi")).run_id
    with pytest.raises(UserError, match="already an agent's run"):
        await team.run("Ship?", run_id=taken)
    await team.aclose()


async def test_a_team_member_with_a_store_of_its_own_is_a_durable_run_of_its_own(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path}/team.db"
    calls: list[str] = []
    inner = Team(
        "inner",
        members=[voter("x", calls, "yes", 2)],
        mode="route",
        model=counting("inner-router", calls, "x", 1),
        store=store,
    )
    outer = Team(
        "outer",
        members=[inner],
        mode="route",
        model=counting("outer-router", calls, "inner", 1),
        store=store,
    )
    first = await outer.run("Agree?", run_id="outer-1")
    assert first.output == "yes"
    inner_id = team_call_run_id("outer-1", 0, "round0:inner")
    assert sorted(calls) == ["inner-router", "outer-router", "x"]
    assert (await outer.run("Agree?", run_id="outer-1")).output == "yes"
    assert sorted(calls) == ["inner-router", "outer-router", "x"]  # no model called again
    async with open_store(store) as stores:
        entries = await stores.journal.read(inner_id)
    await inner.aclose()
    await outer.aclose()
    # the inner team's run, under the id derived from the outer run: its own member calls
    assert [e.kind for e in entries] == ["run_started", "tool_result", "tool_result", "run_ended"]
    assert [e.payload["tool_call_id"] for e in entries[1:3]] == ["route", "round0:x"]
