"""A session's next turn starts with the agent its last turn handed off to.

Turn 1 of a session on ``triage`` hands off to ``billing``; turn 2's model request is
billing's (its instructions, its tools), sent to billing's model. ``continue_with=
"session_agent"`` keeps the old behaviour; a target the session's agent no longer reaches
falls back to the session's agent with a warning. The cross-process case is in
``test_handoff_continue_process.py``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from bastion import Agent, Session, tool
from bastion.agent import AgentRegistry, RunOptions
from bastion.core import AssistantMessage, ModelRequest, SystemMessage, UserError, UserMessage
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="read_only")
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _agents(
    triage_turns: list[Turn | str], billing_turns: list[Turn | str], *, store: str | None = None
) -> tuple[Agent[None, str], ScriptedModel, ScriptedModel]:
    triage_model = ScriptedModel(triage_turns)
    billing_model = ScriptedModel(billing_turns)
    registry = AgentRegistry()
    registry.add(
        Agent(
            "billing",
            model=billing_model,
            instructions="You are billing.",
            tools=[refund],
            handoffs=["triage"],
            run_options=RunOptions(agent_registry=registry),
        )
    )
    triage = registry.add(
        Agent(
            "triage",
            model=triage_model,
            instructions="You route.",
            handoffs=["billing"],
            store=store,
            run_options=RunOptions(agent_registry=registry),
        )
    )
    return triage, triage_model, billing_model


HAND_OFF = Turn(tool_calls=[Call("transfer_to_billing", {})])


def _system(request: ModelRequest) -> str:
    first = request.messages[0]
    assert isinstance(first, SystemMessage)
    return first.content


async def test_next_turn_starts_with_the_handoff_target() -> None:
    triage, triage_model, billing_model = _agents([HAND_OFF], ["Billing here.", "Refunded."])
    session = Session(triage)
    assert session.active_agent == "triage"
    session.send("I was charged twice.")
    await session.wait_for_idle()
    assert session.active_agent == "billing"
    session.send("Refund order A1, please.")
    await session.wait_for_idle()
    assert len(triage_model.requests) == 1  # turn 2 never asked triage's model
    second = billing_model.requests[-1]
    assert _system(second) == "You are billing."
    assert {t.name for t in second.tools} == {"refund", "transfer_to_triage"}
    assert [type(m).__name__ for m in session.messages][-2:] == ["UserMessage", "AssistantMessage"]
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == "Refunded."


async def test_handing_back_records_the_session_agent_again() -> None:
    back = Turn(tool_calls=[Call("transfer_to_triage", {})])
    triage, triage_model, billing_model = _agents(
        [HAND_OFF, "Triage again.", "Still triage."], ["Billing here.", back]
    )
    session = Session(triage)
    session.send("Billing question.")
    await session.wait_for_idle()
    assert session.active_agent == "billing"
    session.send("Actually, something else.")  # billing hands back to triage
    await session.wait_for_idle()
    assert session.active_agent == "triage"
    session.send("Hello?")
    await session.wait_for_idle()
    assert _system(triage_model.requests[-1]) == "You route."
    assert triage_model.requests[-1].messages[-1] == UserMessage(content="Hello?")
    assert len(billing_model.requests) == 2


async def test_session_agent_mode_starts_every_turn_with_the_session_agent() -> None:
    triage, triage_model, billing_model = _agents([HAND_OFF, "Triage answers."], ["Billing."])
    session = Session(triage, continue_with="session_agent")
    session.send("Billing question.")
    await session.wait_for_idle()
    assert session.active_agent == "billing"  # recorded, not used by this handle
    session.send("Next.")
    await session.wait_for_idle()
    assert _system(triage_model.requests[-1]) == "You route."
    assert len(billing_model.requests) == 1


async def test_unreachable_target_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    triage, _, _ = _agents([HAND_OFF], ["Billing."], store=url)
    session = Session(triage)
    session.send("Billing question.")
    await session.wait_for_idle()
    await triage.aclose()
    alone_model = ScriptedModel(["Triage alone."])
    alone = Agent("triage", model=alone_model, instructions="You route.", store=url)
    reopened = await Session.resume(alone, session.id)
    assert reopened.active_agent == "billing"
    with caplog.at_level(logging.WARNING, logger="bastion.sessions"):
        reopened.send("Hello?")
        await reopened.wait_for_idle()
    assert "no longer reaches" in caplog.text
    assert "'billing'" in caplog.text
    assert _system(alone_model.requests[-1]) == "You route."
    assert reopened.active_agent == "triage"
    await alone.aclose()


def test_bad_continue_with_is_refused() -> None:
    triage, _, _ = _agents([], [])
    with pytest.raises(UserError, match="continue_with='nobody'"):
        Session(triage, continue_with="nobody")  # pyright: ignore[reportArgumentType]


def test_stream_refuses_an_unreachable_active_agent() -> None:
    triage, _, _ = _agents([], [])
    assert triage.reaches("billing")
    assert not triage.reaches("support")
    with pytest.raises(UserError, match="active_agent='support'"):
        triage.stream("Hi", active_agent="support")


def test_the_sessions_page_example_runs(tmp_path: Path) -> None:
    page = Path(__file__).parents[2] / "docs" / "sessions.md"
    section = page.read_text(encoding="utf-8").split("## Handoffs across turns", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["billing", "Refunded A1."]


async def test_branch_and_export_keep_the_active_agent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    triage, _, billing_model = _agents(
        [HAND_OFF], ["Billing here.", "Branch answer.", "Import answer."], store=url
    )
    session = Session(triage)
    session.send("I was charged twice.")
    await session.wait_for_idle()
    branched = await session.branch()  # at the turn's answer: billing is active
    assert branched.active_agent == "billing"
    early = await session.branch(0)  # at the first user message: before the handoff
    assert early.active_agent == "triage"
    branched.send("From the branch.")
    await branched.wait_for_idle()
    assert billing_model.requests[-1].messages[-1] == UserMessage(content="From the branch.")
    exported = await branched.export_jsonl()
    imported = await type(session).import_jsonl(
        triage, exported.replace(branched.id, "imported-branch")
    )
    assert imported.active_agent == "billing"
    imported.send("From the import.")
    await imported.wait_for_idle()
    assert billing_model.requests[-1].messages[-1] == UserMessage(content="From the import.")
    await triage.aclose()


async def test_the_turn_run_is_journaled_with_the_target_active(tmp_path: Path) -> None:
    # A crashed turn's run is rebuilt from run_started: it must name the active agent.
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    triage, _, _ = _agents([HAND_OFF], ["Billing here.", "Refunded."], store=url)
    session = Session(triage)
    session.send("I was charged twice.")
    await session.wait_for_idle()
    session.send("Refund A1.")
    await session.wait_for_idle()
    stores = await triage.stores()
    runs = [
        e.payload["run"]
        for e in await stores.sessions.entries(session.id)
        if e.kind == "message" and "run" in e.payload
    ]
    assert len(runs) == 2
    second = str(runs[1])
    record = await stores.journal.get_run(second)
    assert record is not None
    assert (record.agent, record.status) == ("triage", "completed")
    started = (await stores.journal.read(second))[0]
    assert started.kind == "run_started"
    state = started.payload["state"]
    assert isinstance(state, dict)
    assert state["active_agent"] == "billing"
    await triage.aclose()
