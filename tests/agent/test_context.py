"""Compaction inside a run: triggered before a model call, journaled, governed, best-effort."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from bastion import Agent, GovernanceOptions, tool
from bastion.agent import ModelOptions
from bastion.context import SUMMARY_HEADER, ContextConfig
from bastion.core import (
    AgentEvent,
    AssistantMessage,
    ContextCompactedEvent,
    ContextCompactionFailedEvent,
    Message,
    Overloaded,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserError,
    UserMessage,
)
from bastion.governance import PolicyAction, PolicyResult, deny
from bastion.stores import open_store
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive

INSTRUCTIONS = "You audit invoices. Be exact."
BIG = "invoice line " * 300  # ~900 o200k tokens of tool output


@tool(side_effect_class="read_only")
def fetch(n: int) -> str:
    """Fetch one invoice."""
    return f"invoice {n}: {BIG}"


@tool(side_effect_class="side_effecting", needs_approval=True)
def pay(n: int) -> str:
    """Pay one invoice."""
    return f"paid {n}"


def worker(steps: int, *, then: Sequence[Turn | str] = ("All audited.",)) -> ScriptedModel:
    """A model that fetches ``steps`` invoices, one per step, then answers."""
    turns: list[Turn | str] = [
        Turn(tool_calls=[Call("fetch", {"n": n}, id=f"c{n}")]) for n in range(steps)
    ]
    model = ScriptedModel([*turns, *then])
    model.tokenizer = "o200k_base"  # exact counts: the trigger does not depend on calibration
    return model


def summarizer(*texts: str | Turn) -> ScriptedModel:
    return ScriptedModel(list(texts), name="summarizer")


def config(**options: Any) -> ContextConfig:
    defaults: dict[str, Any] = {
        "strategy": "summarize",
        "max_context_tokens": 2_000,
        "reserve_output_tokens": 0,
        "keep_last": 2,
    }
    return ContextConfig(**(defaults | options))


def sent(model: ScriptedModel) -> list[list[Message]]:
    return [list(r.messages) for r in model.requests]


async def collect(agent: Agent[Any, Any], prompt: str) -> list[AgentEvent]:
    return [e async for e in agent.stream(prompt)]


async def test_a_run_over_the_trigger_is_summarized_before_the_next_model_call() -> None:
    # covers G-69, G-70, G-74
    model = worker(4)
    summary = summarizer("Fetched invoices 0 and 1; both fine.")
    agent = Agent(
        "auditor",
        model=model,
        instructions=INSTRUCTIONS,
        tools=[fetch],
        context=config(summarizer=summary),
    )
    events = await collect(agent, "Audit the invoices.")
    compacted = [e for e in events if isinstance(e, ContextCompactedEvent)]
    assert len(compacted) >= 1
    first = compacted[0]
    assert first.source == "auto-trigger"
    assert first.strategy == "summarize"
    assert first.before_tokens > 2_000 * 0.85 >= first.after_tokens
    assert first.summary_tokens > 0
    # The event comes before the step whose request it shrank.
    position = events.index(first)
    assert events[position + 1].type == "step.start"
    # That request starts with the pinned instructions, then the summary.
    after = next(
        m
        for m in sent(model)
        if isinstance(m[1], UserMessage) and m[1].text.startswith(SUMMARY_HEADER)
    )
    assert after[0] == SystemMessage(content=INSTRUCTIONS)
    assert after[1] == UserMessage(content=f"{SUMMARY_HEADER}Fetched invoices 0 and 1; both fine.")
    # The summarizer saw the older exchanges, the request included.
    (request,) = summary.requests[:1]
    assert "Audit the invoices." in str(request.messages[1])
    result = events[-1]
    assert result.type == "agent.end"
    assert result.status == "completed"


async def test_the_prefix_is_the_same_in_every_request_of_the_run() -> None:
    # covers G-76
    model = worker(6)
    agent = Agent(
        "auditor",
        model=model,
        instructions=INSTRUCTIONS,
        tools=[fetch],
        context=config(summarizer=summarizer("s1", "s2", "s3", "s4")),
    )
    result = await agent.run("Audit the invoices.")
    assert result.status == "completed"
    firsts = {repr(messages[0]) for messages in sent(model)}
    assert firsts == {repr(SystemMessage(content=INSTRUCTIONS))}


async def test_the_summary_counts_in_the_runs_usage_by_model() -> None:
    # covers G-70
    summary = summarizer(
        Turn(text="short summary", usage=Usage(prompt_tokens=1_000, completion_tokens=5))
    )
    agent = Agent("auditor", model=worker(4), tools=[fetch], context=config(summarizer=summary))
    result = await agent.run("Audit the invoices.")
    assert result.usage_by_model["test:summarizer"].prompt_tokens == 1_000
    assert result.usage.prompt_tokens >= 1_000


async def test_below_the_trigger_nothing_happens_and_the_stream_is_unchanged() -> None:
    # covers G-72
    plain = Agent("a", model=worker(2), tools=[fetch])
    with_context = Agent(
        "a",
        model=worker(2),
        tools=[fetch],
        context=config(max_context_tokens=200_000, summarizer=summarizer()),
    )
    baseline = [e.type for e in await collect(plain, "go")]
    assert [e.type for e in await collect(with_context, "go")] == baseline


async def test_a_failing_summarizer_is_reported_and_the_run_goes_on_uncompacted() -> None:
    # covers G-73
    broken = ScriptedModel([Turn(error=Overloaded("busy"))] * 10, name="summarizer")
    model = worker(4)
    agent = Agent("a", model=model, tools=[fetch], context=config(summarizer=broken))
    events = await collect(agent, "Audit the invoices.")
    failed = [e for e in events if isinstance(e, ContextCompactionFailedEvent)]
    assert failed
    assert failed[0].reason.startswith("Overloaded")
    assert failed[0].strategy == "summarize"
    assert not any(isinstance(e, ContextCompactedEvent) for e in events)
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"
    assert len(sent(model)[-1]) == 1 + 4 * 2  # nothing was dropped


async def test_a_summarizer_the_governor_denies_leaves_the_history_as_it_is() -> None:
    # covers G-73
    def no_summaries(action: PolicyAction) -> PolicyResult:
        return deny("no-summaries: summaries are not allowed here")

    agent = Agent(
        "a",
        model=worker(3),
        tools=[fetch],
        context=config(summarizer=summarizer("never")),
        governance=GovernanceOptions(oracles={"llm:test:summarizer": [no_summaries]}),
    )
    events = await collect(agent, "go")
    failed = [e for e in events if isinstance(e, ContextCompactionFailedEvent)]
    assert failed
    assert "no-summaries" in failed[0].reason
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"


async def test_a_run_holding_secret_output_is_never_compacted() -> None:
    # covers G-77
    @tool(side_effect_class="read_only", sensitivity="secret")
    def vault(n: int) -> str:
        """Read a secret record."""
        return f"secret {n}: {BIG}"

    summary = summarizer("must not be asked")
    calls = [Turn(tool_calls=[Call("vault", {"n": n}, id=f"v{n}")]) for n in range(4)]
    agent = Agent(
        "a",
        model=ScriptedModel([*calls, "done"]),  # estimated, calibrated counts
        tools=[vault],
        context=config(summarizer=summary),
    )
    events = await collect(agent, "go")
    assert not any(e.type.startswith("context.") for e in events)
    assert summary.requests == []


async def test_trim_keeps_the_request_and_drops_old_steps_without_a_summarizer() -> None:
    #
    model = worker(5)
    agent = Agent("a", model=model, tools=[fetch], context=config(strategy="trim", keep_last=2))
    result = await agent.run("Audit the invoices.")
    assert result.status == "completed"
    last = sent(model)[-1]
    assert last[0] == UserMessage(content="Audit the invoices.")
    assert all(not isinstance(m, ToolMessage) or m.tool_call_id != "c0" for m in last)


async def test_a_compaction_is_journaled_and_a_resumed_run_never_pays_for_it_again() -> None:
    # covers G-70
    # Three fetches pass the trigger once; the summary makes room for the rest of the run.
    first_model = worker(3, then=[Turn(tool_calls=[Call("pay", {"n": 1}, id="p1")])])
    summary = summarizer("summary once")
    async with open_store("memory://") as stores:
        agent = Agent(
            "auditor",
            model=first_model,
            tools=[fetch, pay],
            context=config(summarizer=summary),
            store=stores,
        )
        suspended = await agent.run("Audit, then pay invoice 1.")
        assert suspended.status == "awaiting_approval"
        kinds = [e.kind for e in await stores.journal.read(suspended.run_id)]
        assert "compaction" in kinds
        resumed_model = ScriptedModel(["Paid."])
        resumed_summary = summarizer("must not be asked again")
        elsewhere = Agent(
            "auditor",
            model=resumed_model,
            tools=[fetch, pay],
            context=config(summarizer=resumed_summary),
            store=stores,
        )
        done = await elsewhere.resume(
            suspended.run_id,
            directive=Directive(approvals=[ApprovalDecision(tool_call_id="p1", granted=True)]),
        )
    assert done.status == "completed"
    assert resumed_summary.requests == []
    (request,) = resumed_model.requests
    assert any(
        isinstance(m, UserMessage) and m.text.startswith(SUMMARY_HEADER) for m in request.messages
    )
    assert done.usage_by_model["test:summarizer"].requests == len(summary.requests)


def test_a_model_without_a_known_window_needs_max_context_tokens() -> None:
    with pytest.raises(UserError, match=r"needs the model's context window.*max_context_tokens"):
        Agent("a", model=ScriptedModel(["x"]), context=ContextConfig())


def test_context_must_be_a_context_config() -> None:
    with pytest.raises(UserError, match="context must be a ContextConfig"):
        Agent("a", model=ScriptedModel(["x"]), context={"strategy": "trim"})  # pyright: ignore[reportArgumentType]


async def test_the_models_window_and_tokenizer_come_from_its_profile() -> None:
    from bastion.providers import resolve_model

    model = resolve_model("openai:gpt-4o-mini")
    assert (model.context_window, model.tokenizer) == (128_000, "o200k_base")
    agent = Agent("a", model=model, context=ContextConfig(reserve_output_tokens=16_000))
    assert agent.config.context is not None
    assert agent.config.context.budget == 112_000


async def test_manual_compaction_returns_a_shorter_history_and_leaves_the_input_alone() -> None:
    # covers G-75
    agent = Agent("a", model=ScriptedModel(["x"]), context=config(summarizer=summarizer("short")))
    history: list[Message] = [SystemMessage(content=INSTRUCTIONS), UserMessage(content="Audit.")]
    for n in range(4):
        history.append(
            AssistantMessage(tool_calls=[ToolCall(id=f"c{n}", name="fetch", arguments="{}")])
        )
        history.append(ToolMessage(tool_call_id=f"c{n}", tool_name="fetch", content=BIG))
    before = list(history)
    done = await agent.compact(history)
    assert history == before
    assert done.messages[0] == SystemMessage(content=INSTRUCTIONS)
    assert done.messages[1] == UserMessage(content=f"{SUMMARY_HEADER}short")
    assert done.tokens_after < done.tokens_before


async def test_manual_compaction_needs_a_config() -> None:
    agent = Agent("a", model=ScriptedModel(["x"]))
    with pytest.raises(UserError, match="has no context=ContextConfig"):
        await agent.compact([UserMessage(content="hi")])
    done = await agent.compact(
        [UserMessage(content="hi")], config=ContextConfig(strategy="trim", max_context_tokens=100)
    )
    assert done.messages == [UserMessage(content="hi")]


async def test_when_only_kept_exchanges_remain_it_says_so_once_and_asks_no_summarizer() -> None:
    # covers G-73
    summary = summarizer("never needed")
    agent = Agent(
        "a",
        model=worker(5),
        tools=[fetch],
        context=config(summarizer=summary, keep_last=8),
    )
    events = await collect(agent, "Audit the invoices.")
    failed = [e for e in events if isinstance(e, ContextCompactionFailedEvent)]
    assert len(failed) == 1
    assert "nothing older than the last 8 exchanges" in failed[0].reason
    assert summary.requests == []
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"


async def test_a_broken_history_is_repaired_in_the_request_not_sent_as_it_is() -> None:
    # A crash between a call and its result left the history with an open call, and an
    # edit left a result whose call is gone: the model gets a valid transcript.
    history: list[Message] = [
        UserMessage(content="Look it up."),
        AssistantMessage(tool_calls=[ToolCall(id="lost", name="fetch", arguments='{"n": 1}')]),
        UserMessage(content="Are you there?"),
        ToolMessage(tool_call_id="ghost", tool_name="fetch", content="stale"),
    ]
    model = ScriptedModel(["Yes."])
    result = await Agent("a", model=model, tools=[fetch]).run("Go on.", message_history=history)
    assert result.status == "completed"
    (request,) = model.requests
    sent_messages = list(request.messages)
    assert sent_messages[:4] == [
        history[0],
        history[1],
        ToolMessage(
            tool_call_id="lost",
            tool_name="fetch",
            content="Tool call not run: no result was recorded for it.",
            is_error=True,
        ),
        history[2],
    ]
    assert all(getattr(m, "tool_call_id", None) != "ghost" for m in sent_messages)
    # The run's own transcript keeps what happened.
    assert history[3] in result.messages


async def test_two_calls_sharing_an_id_fail_the_run_clearly() -> None:
    history: list[Message] = [
        UserMessage(content="x"),
        AssistantMessage(
            tool_calls=[
                ToolCall(id="c", name="fetch", arguments='{"n": 1}'),
                ToolCall(id="c", name="fetch", arguments='{"n": 2}'),
            ]
        ),
        ToolMessage(tool_call_id="c", tool_name="fetch", content="1"),
        ToolMessage(tool_call_id="c", tool_name="fetch", content="2"),
    ]
    model = ScriptedModel(["never"])
    result = await Agent("a", model=model, tools=[fetch]).run("go", message_history=history)
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "invalid_transcript"
    assert "share the id 'c'" in result.error.message
    assert model.requests == []


async def _fallback_run(fallback_window: int) -> tuple[list[AgentEvent], ScriptedModel]:
    from bastion.core import ContextLengthExceeded, ModelRequest
    from bastion.testing import FunctionModel

    def refuse(request: ModelRequest) -> Turn:
        raise ContextLengthExceeded("primary is down for this test")

    primary = FunctionModel(refuse, name="primary")
    primary.tokenizer = "o200k_base"
    primary.context_window = 100_000
    fallback = worker(5)
    fallback.context_window = fallback_window
    agent = Agent(
        "auditor",
        model=primary,
        instructions=INSTRUCTIONS,
        tools=[fetch],
        context=ContextConfig(strategy="trim", reserve_output_tokens=0, keep_last=1),
        model_options=ModelOptions(fallbacks=[fallback]),
    )
    return await collect(agent, "Audit the invoices."), fallback


async def test_a_fallback_with_a_smaller_window_lowers_the_trigger() -> None:
    # The agent's window (the primary's) is 100k; every step falls back to a 2,500-token
    # model: compaction triggers at the fallback's threshold, so its requests keep fitting.
    from bastion.context import token_counter

    events, fallback = await _fallback_run(2_500)
    compacted = [e for e in events if isinstance(e, ContextCompactedEvent)]
    assert compacted
    assert all(e.after_tokens <= 2_500 for e in compacted)
    counter = token_counter("o200k_base")
    assert max(counter.count_messages(m) for m in sent(fallback)) <= 2_500
    assert events[-1].type == "agent.end"
    assert getattr(events[-1], "status", None) == "completed"

    # The same run with a fallback as large as the primary never compacts.
    events, fallback = await _fallback_run(100_000)
    assert not [e for e in events if isinstance(e, ContextCompactedEvent)]
    assert max(counter.count_messages(m) for m in sent(fallback)) > 2_500


async def test_the_early_trigger_clears_old_results_without_a_model_call() -> None:
    # clear_results_at: below the compaction trigger, old large results are cleared in
    # batches (no summary); the last exchange's result stays as it was.
    summary = summarizer("never needed")
    model = worker(6)
    agent = Agent(
        "a",
        model=model,
        tools=[fetch],
        context=config(
            max_context_tokens=20_000, clear_results_at=0.1, keep_last=1, summarizer=summary
        ),
    )
    events = await collect(agent, "Audit the invoices.")
    compacted = [e for e in events if isinstance(e, ContextCompactedEvent)]
    assert compacted
    assert {e.strategy for e in compacted} == {"clear_tool_results"}
    assert len(compacted) < 6 - 1  # batched, not at every step
    assert summary.requests == []
    last = sent(model)[-1]
    results = [m for m in last if isinstance(m, ToolMessage)]
    assert BIG in str(results[-1].content)  # the newest result is kept
    assert any(BIG not in str(m.content) for m in results)
    assert events[-1].type == "agent.end"
    with pytest.raises(UserError, match="clear_results_at < threshold"):
        ContextConfig(clear_results_at=0.9)
