"""A run resumed from the store's journal links to the trace of the run it continues."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import Agent, tool
from bastion.observability import uninstrument
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive

from .test_tracing import Traced


@pytest.fixture
def traced() -> Iterator[Traced]:
    yield Traced()
    uninstrument()


@tool(side_effect_class="side_effecting", needs_approval=True)
def transfer(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


async def test_a_run_resumed_from_the_journal_links_to_the_first_runs_span(
    traced: Traced, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    script: list[Turn | str] = [Turn(tool_calls=[Call("transfer", {"amount": 5}, id="t1")])]
    first = Agent("bank", model=ScriptedModel(script), tools=[transfer], store=store)
    suspended = await first.run("pay 5")
    assert suspended.status == "awaiting_approval"
    original = traced.named("invoke_agent bank")
    assert original.context is not None

    traced.exporter.clear()
    # Another agent object on the same store: only the journal knows the first run's span.
    second = Agent("bank", model=ScriptedModel(["Paid."]), tools=[transfer], store=store)
    directive = Directive(approvals=[ApprovalDecision(tool_call_id="t1", granted=True)])
    resumed = await second.resume(suspended.run_id, directive=directive)
    assert resumed.output == "Paid."

    run = traced.named("invoke_agent bank")
    assert dict(run.attributes or {})["bastion.run.resumed"] is True
    (link,) = run.links
    assert (link.context.trace_id, link.context.span_id) == (
        original.context.trace_id,
        original.context.span_id,
    )
    assert dict(link.attributes or {}) == {"bastion.link": "resumed_from"}
