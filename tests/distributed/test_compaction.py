"""Context compaction in an agent workflow: the summarizer's calls are model activities."""

from __future__ import annotations

from typing import Any

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import Agent, tool
from bastion.agent import RunOptions
from bastion.context import SUMMARY_HEADER, ContextConfig
from bastion.core import EventBus, UserMessage
from bastion.testing import Call, ScriptedModel, Turn

from ._history import run_on_temporal, scheduled

BIG = "invoice line " * 300  # ~900 o200k tokens of tool output


@tool(side_effect_class="read_only")
def fetch(n: int) -> str:
    """Fetch one invoice."""
    return f"invoice {n}: {BIG}"


def _auditor(compacted: list[tuple[str, int, int]]) -> Agent[None, str]:
    turns: list[Turn | str] = [Turn(tool_calls=[Call("fetch", {"n": n})]) for n in range(4)]
    model = ScriptedModel([*turns, "All audited."])
    model.tokenizer = "o200k_base"  # exact counts: the trigger does not depend on calibration
    summary = ScriptedModel(
        ["Invoices 0 and 1 are fine.", "Invoices 0 to 2 are fine."], name="summarizer"
    )
    bus = EventBus().on(
        "context.compacted",
        lambda e: compacted.append((e.strategy, e.before_tokens, e.after_tokens)),
    )
    context = ContextConfig(
        strategy="summarize",
        max_context_tokens=2_000,
        reserve_output_tokens=0,
        keep_last=2,
        summarizer=summary,
    )
    return Agent(
        "auditor",
        model=model,
        tools=[fetch],
        context=context,
        run_options=RunOptions(event_bus=bus),
    )


def _requests(agent: Agent[Any, Any]) -> list[list[str]]:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    return [[repr(m)[:80] for m in r.messages] for r in model.requests]


async def test_a_compacting_agent_summarizes_in_an_activity_as_it_does_locally(
    time_skipping: WorkflowEnvironment,
) -> None:
    local_compacted: list[tuple[str, int, int]] = []
    local_agent = _auditor(local_compacted)
    local = await local_agent.run("Audit the invoices.")
    compacted: list[tuple[str, int, int]] = []
    agent = _auditor(compacted)
    result, history, remote_agent = await run_on_temporal(
        time_skipping, agent, "Audit the invoices."
    )

    assert (result.status, result.output) == ("completed", local.output)
    assert (result.usage, result.steps) == (local.usage, local.steps)
    # the same compaction at the same point, and the model saw the same requests
    assert compacted == local_compacted
    assert len(compacted) == 2
    assert compacted[0][1] > 2_000 * 0.85 >= compacted[0][2]
    assert _requests(agent) == _requests(local_agent)
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    assert any(
        isinstance(m, UserMessage) and m.text.startswith(SUMMARY_HEADER)
        for r in model.requests
        for m in r.messages
    )
    # each summary was one model activity more than the agent's own model calls
    assert scheduled(history).count("model") == local.steps + 2
    # the compaction is deterministic workflow code: the history replays without divergence
    replayed = await Replayer(workflows=[remote_agent.workflow]).replay_workflow(history)
    assert replayed.replay_failure is None
