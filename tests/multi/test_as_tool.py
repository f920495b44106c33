"""``Agent.as_tool``: a sub-agent the parent's model calls like a tool (SPEC C14, D1, G-56).

Every scenario runs a parent Agent whose ScriptedModel / FunctionModel calls the child's
tool, and asserts what a user sees: the text the parent's model reads back, the parent's
stream, usage, what the store holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import Agent, RunContext, tool
from bastion.agent import AgentStream, RunOptions, RunState, ToolOptions
from bastion.agent.steps._approvals import check_directive
from bastion.core import (
    AgentEvent,
    AssistantMessage,
    ContextLengthExceeded,
    Message,
    ModelRequest,
    StreamChunk,
    SubagentEvent,
    TextDeltaEvent,
    ToolMessage,
    Usage,
    UserError,
    UserMessage,
)
from bastion.multi import as_tool
from bastion.security import INBOUND_PREAMBLE
from bastion.stores import NewEntry, Stores, open_store
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn
from bastion.tools import (
    ApprovalConfig,
    ApprovalDecision,
    ApprovalRequest,
    Directive,
    DuplicateToolNameError,
    InputAnswer,
    Tool,
)
from tests.agent.conftest import brief


@tool(side_effect_class="read_only")
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def ask(text: str, *, tool_name: str = "researcher", id: str = "c1") -> Turn:
    """A parent turn that calls the sub-agent's tool."""
    return Turn(tool_calls=[Call(tool_name, {"input": text}, id=id)])


def child_agent(script: Sequence[Turn | str], **kwargs: Any) -> Agent[Any, Any]:
    return Agent(
        "researcher",
        model=ScriptedModel(script, name="small"),
        tools=[lookup],
        description="Researches a question.",
        **kwargs,
    )


def parent_agent(
    script: Sequence[Turn | str], tools: Sequence[Tool], **kwargs: Any
) -> tuple[Agent[Any, Any], ScriptedModel]:
    model = ScriptedModel(script, name="big")
    return Agent("boss", model=model, tools=tools, **kwargs), model


def said(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """Role and text of each message."""
    return [
        (m.role, m.text if isinstance(m, AssistantMessage) else str(m.content)) for m in messages
    ]


def tool_results(messages: Sequence[Message]) -> list[tuple[str, bool]]:
    return [(str(m.content), m.is_error) for m in messages if isinstance(m, ToolMessage)]


def forwarded(events: Sequence[AgentEvent]) -> list[AgentEvent]:
    return [e.event for e in events if isinstance(e, SubagentEvent)]


# -- the call: only the input goes in, the answer comes back --------------------------------


async def test_sub_agent_gets_only_the_input_and_its_answer_is_the_tool_result() -> None:
    # covers G-56, C14, D1
    child = child_agent(
        [Turn(tool_calls=[Call("lookup", {"q": "tides"})]), "Tides follow the moon."],
        instructions="You research.",
    )
    parent, parent_model = parent_agent(
        [ask("Why are there tides?"), "The moon, says my researcher."], [as_tool(child)]
    )
    result = await parent.run("Explain tides; my name is Ada.")

    assert result.output == "The moon, says my researcher."
    assert tool_results(result.messages) == [("Tides follow the moon.", False)]
    child_model = child.config.model
    assert isinstance(child_model, ScriptedModel)
    first = child_model.requests[0].messages
    # No parent history: the child's instructions and the input string, nothing else.
    assert said(first) == [
        ("system", "You research."),
        ("user", "Why are there tides?"),
    ]
    # The parent's model read the answer as the call's result.
    assert said(parent_model.requests[1].messages)[-1] == ("tool", "Tides follow the moon.")


async def test_the_tool_advertises_one_input_string_and_the_agents_description() -> None:
    # covers G-56, C14
    child = child_agent(["x"])
    made = as_tool(child)
    definition = made.definition()
    assert (definition.name, definition.description) == ("researcher", "Researches a question.")
    assert definition.parameters["required"] == ["input"]
    assert definition.parameters["properties"]["input"]["type"] == "string"
    assert made.oracle_key == "agent:researcher"
    renamed = as_tool(child, "ask_researcher", "Ask when unsure.")
    assert (renamed.name, renamed.description) == ("ask_researcher", "Ask when unsure.")


async def test_sub_agent_inherits_deps_session_and_user_but_not_metadata() -> None:
    # covers G-56
    seen: list[tuple[Any, ...]] = []

    @tool(side_effect_class="read_only")
    def whoami(ctx: RunContext[dict[str, str]]) -> str:
        """Report the context."""
        seen.append((ctx.deps, ctx.session_id, ctx.user_id, ctx.metadata.get("team")))
        return "noted"

    child = Agent(
        "researcher",
        model=ScriptedModel([Turn(tool_calls=[Call("whoami")]), "ok"]),
        tools=[whoami],
    )
    parent, _ = parent_agent([ask("check"), "done"], [as_tool(child)])
    result = await parent.run(
        "go", deps={"db": "prod"}, session_id="s-1", user_id="ada", metadata={"team": "red"}
    )
    assert result.ok
    assert seen == [({"db": "prod"}, "s-1", "ada", None)]


async def test_input_filter_builds_the_sub_agents_history_from_the_parents_turns() -> None:
    # covers G-56
    received: list[list[Message]] = []

    def last_user_turns(messages: list[Message]) -> list[Message]:
        received.append(messages)
        return [m for m in messages if isinstance(m, UserMessage)]

    child = child_agent(["Paris."])
    parent, _ = parent_agent(
        [ask("Which city did I mention?"), "Paris it is."],
        [as_tool(child, input_filter=last_user_turns)],
    )
    result = await parent.run("I love Paris.")
    assert result.ok
    # The filter saw the parent's finished turns, not the turn making this call.
    assert [m.role for m in received[0]] == ["user"]
    child_model = child.config.model
    assert isinstance(child_model, ScriptedModel)
    assert said(child_model.requests[0].messages) == [
        ("user", "I love Paris."),
        ("user", "Which city did I mention?"),
    ]


@pytest.mark.parametrize(
    ("expose", "expected"),
    [
        ("final", "Answer: 42."),
        ("all", "Let me look.\n\nAnswer: 42."),
        ("none", "Sub-agent 'researcher' finished."),
    ],
)
async def test_expose_turns_shapes_what_the_parent_reads(expose: Any, expected: str) -> None:
    # covers G-56
    child = child_agent(
        [Turn(text="Let me look.", tool_calls=[Call("lookup", {"q": "x"})]), "Answer: 42."]
    )
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child, expose_turns=expose)])
    result = await parent.run("go")
    assert tool_results(result.messages) == [(expected, False)]


async def test_structured_output_of_a_sub_agent_reaches_the_parent_as_json() -> None:
    child = Agent("researcher", model=ScriptedModel(['{"answer": 42}']), output_type=dict[str, int])
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)])
    result = await parent.run("go")
    assert tool_results(result.messages) == [('{"answer":42}', False)]


# -- failures are tool errors, never empty successes ---------------------------------------


async def test_a_failed_sub_run_is_a_tool_error_the_parent_model_reads() -> None:
    # covers G-56
    child = child_agent([Turn(error=ContextLengthExceeded("prompt too long"))], retry=None)
    parent, parent_model = parent_agent([ask("q"), "I could not research that."], [as_tool(child)])
    events = [e async for e in parent.stream("go")]
    result = events[-1]
    assert result.type == "agent.end"
    assert result.status == "completed"
    assert "tool.execute.error researcher#c1 execution_failed" in brief(events)
    last = parent_model.requests[1].messages[-1]
    assert isinstance(last, ToolMessage)
    assert last.is_error
    content = str(last.content)
    assert content.startswith("Sub-agent 'researcher' failed (model_error: ")
    assert "prompt too long" in content


async def test_a_sub_agent_stopped_at_max_steps_says_so_with_its_last_answer() -> None:
    child = child_agent(
        [Turn(text="Halfway.", tool_calls=[Call("lookup", {"q": "x"})])],
        max_steps=1,
        run_options=RunOptions(on_max_steps="return"),
    )
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)])
    result = await parent.run("go")
    assert tool_results(result.messages) == [
        ("Halfway.\n\n(Sub-agent 'researcher' stopped early: max_steps.)", False)
    ]


# -- usage folds into the parent ---------------------------------------------------------


async def test_sub_agent_usage_adds_to_the_parents_usage_even_when_it_fails() -> None:
    # covers G-56, G-68
    child = child_agent(
        [
            Turn(tool_calls=[Call("lookup", {"q": "x"})], usage=Usage(prompt_tokens=10)),
            Turn(text="partial", usage=Usage(completion_tokens=5)),
        ]
    )
    failing = Agent(
        "critic",
        model=ScriptedModel(
            [Turn(text="hm", usage=Usage(prompt_tokens=7), tool_calls=[Call("nope")])],
            name="small",
        ),
        max_steps=1,
    )
    parent, _ = parent_agent(
        [
            Turn(
                tool_calls=[
                    Call("researcher", {"input": "a"}, id="c1"),
                    Call("critic", {"input": "b"}, id="c2"),
                ],
                usage=Usage(prompt_tokens=100),
            ),
            Turn(text="done", usage=Usage(prompt_tokens=200)),
        ],
        [as_tool(child), as_tool(failing)],
    )
    result = await parent.run("go")
    assert [error for _, error in tool_results(result.messages)] == [False, True]
    assert result.usage_by_model["test:big"].prompt_tokens == 300
    assert result.usage_by_model["test:small"].prompt_tokens == 17
    assert result.usage_by_model["test:small"].completion_tokens == 5
    assert result.usage.prompt_tokens == 317


async def test_a_sub_agent_that_read_untrusted_content_taints_the_parent_run() -> None:
    @tool(side_effect_class="read_only", trust_class="mcp_derived")
    # covers G-97
    def fetch_page(url: str) -> str:
        """Fetch a web page."""
        return "Tides are caused by the moon."

    child = Agent(
        "researcher",
        model=ScriptedModel([Turn(tool_calls=[Call("fetch_page", {"url": "x"})]), "The moon."]),
        tools=[fetch_page],
    )
    parent, parent_model = parent_agent(
        [ask("q"), "ok"], [as_tool(child)], instructions="You write."
    )
    result = await parent.run("go")
    assert result.ok
    first, second = parent_model.requests
    assert said(first.messages)[0] == ("system", "You write.")
    assert said(second.messages)[0] == ("system", f"You write.\n\n{INBOUND_PREAMBLE}")


# -- events: forwarded live, typed -------------------------------------------------------


async def test_child_events_reach_the_parent_stream_inside_the_tool_call() -> None:
    child = child_agent(["Tides follow the moon."])
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)])
    events = [e async for e in parent.stream("go")]
    lines = brief(events)
    start = lines.index("tool.execute.start researcher#c1")
    end = lines.index("tool.execute.end researcher#c1")
    assert set(lines[start + 1 : end]) == {"subagent.event"}
    wrappers = [e for e in events if isinstance(e, SubagentEvent)]
    assert {(w.tool_call_id, w.agent_name) for w in wrappers} == {("c1", "researcher")}
    inner = [e.event for e in wrappers]
    assert brief(inner) == [
        "agent.start",
        "step.start 1",
        "text.delta 'Tides '",
        "text.delta 'follow '",
        "text.delta 'the '",
        "text.delta 'moon.'",
        "text.complete",
        "step.end 1 stop",
        "agent.end completed",
    ]
    # The child's events keep their own run and numbering; the wrappers are numbered in
    # the parent's stream like any other event.
    assert len({e.run_id for e in inner}) == 1
    assert inner[0].run_id != events[0].run_id
    assert [e.seq for e in inner] == list(range(1, len(inner) + 1))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_child_text_deltas_are_forwarded_while_the_child_still_runs() -> None:
    seen_first = asyncio.Event()

    async def words(request: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        yield "first "
        await seen_first.wait()  # the parent's consumer must see "first " before this ends
        yield "second"

    child = Agent("researcher", model=FunctionModel(stream_function=words))
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)])
    received: list[str] = []
    async with asyncio.timeout(10):  # only reached if forwarding were not live
        async for event in parent.stream("go"):
            if isinstance(event, SubagentEvent) and isinstance(event.event, TextDeltaEvent):
                received.append(event.event.delta)
                seen_first.set()
    assert received == ["first ", "second"]


async def test_forward_events_lifecycle_leaves_out_the_pieces_and_none_everything() -> None:
    script = [Turn(tool_calls=[Call("lookup", {"q": "x"})]), "Answer."]
    lifecycle = child_agent(script)
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(lifecycle, forward_events="lifecycle")])
    inner = forwarded([e async for e in parent.stream("go")])
    assert brief(inner) == [
        "agent.start",
        "step.start 1",
        "tool.call.start lookup#call_0_0",
        "tool.call.end lookup#call_0_0",
        "tool.execute.start lookup#call_0_0",
        "tool.execute.end lookup#call_0_0",
        "step.end 1 tool_calls",
        "step.start 2",
        "text.complete",
        "step.end 2 stop",
        "agent.end completed",
    ]
    silent = child_agent(script)
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(silent, forward_events="none")])
    events = [e async for e in parent.stream("go")]
    assert forwarded(events) == []
    assert "tool.execute.end researcher#c1" in brief(events)


async def test_nested_sub_agents_nest_their_wrappers() -> None:
    leaf = Agent("fact_checker", model=ScriptedModel(["Checked."], name="small"))
    middle = Agent(
        "researcher",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("fact_checker", {"input": "check"}, id="m1")]), "Verified."],
            name="small",
        ),
        tools=[as_tool(leaf)],
    )
    parent, _ = parent_agent([ask("q"), "ok"], [as_tool(middle)])
    events = [e async for e in parent.stream("go")]
    result = events[-1]
    assert result.type == "agent.end"
    assert result.usage.requests == 5  # 2 parent + 2 middle + 1 leaf calls
    leaf_events = [
        e.event
        for e in forwarded(events)
        if isinstance(e, SubagentEvent) and e.agent_name == "fact_checker"
    ]
    assert brief(leaf_events) == [
        "agent.start",
        "step.start 1",
        "text.delta 'Checked.'",
        "text.complete",
        "step.end 1 stop",
        "agent.end completed",
    ]
    run_ids = {events[0].run_id, *(e.run_id for e in forwarded(events)), leaf_events[0].run_id}
    assert len(run_ids) == 3  # parent, researcher and fact checker: three runs


# -- approvals inside the child ------------------------------------------------------------


def approve(call_id: str) -> ApprovalDecision:
    return ApprovalDecision(tool_call_id=call_id, granted=True)


def approval_child() -> Agent[Any, Any]:
    @tool(side_effect_class="side_effecting", needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return Agent(
        "janitor",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("delete", {"path": "/tmp/x"}, id="k1")]), "Cleaned."]
        ),
        tools=[delete],
    )


async def test_the_parents_on_approval_decides_the_childs_calls_when_it_has_none() -> None:
    asked: list[tuple[str, str]] = []

    def approve(request: ApprovalRequest, ctx: RunContext[Any]) -> bool:
        asked.append((ctx.agent_name, request.tool_name))
        return True

    child = approval_child()
    parent, _ = parent_agent(
        [ask("clean", tool_name="janitor"), "done"],
        [as_tool(child)],
        tool_options=ToolOptions(approval=ApprovalConfig(on_approval=approve)),
    )
    result = await parent.run("go")
    assert asked == [("janitor", "delete")]
    assert tool_results(result.messages) == [("Cleaned.", False)]


async def test_a_child_needing_approval_with_nobody_to_ask_parks_the_parent() -> None:
    # covers G-56
    child = approval_child()
    parent, model = parent_agent(
        [ask("clean", tool_name="janitor"), "All clean."], [as_tool(child)]
    )
    parked = await parent.run("go")
    assert parked.status == "awaiting_approval"
    [request] = parked.pending_approvals
    assert request.tool_name == "janitor"
    assert request.input is not None
    assert request.input.source == "agent:janitor"
    [waiting] = request.input.context["pending"]
    assert (waiting["tool_name"], waiting["arguments"]) == ("delete", {"path": "/tmp/x"})
    assert parked.state is not None
    result = await parent.run(parked.state, directive=Directive(approvals=[approve("c1")]))
    assert result.status == "completed"
    assert tool_results(result.messages) == [("Cleaned.", False)]
    assert result.text == "All clean."
    assert len(model.requests) == 2  # the parent's model was asked once before, once after


async def test_a_grandchild_parks_the_whole_chain_and_one_decision_resumes_it() -> None:
    janitor = approval_child()
    middle = Agent(
        "foreman",
        model=ScriptedModel([ask("clean", tool_name="janitor", id="j1"), "Foreman: done."]),
        tools=[as_tool(janitor)],
    )
    parent, model = parent_agent(
        [ask("clean up", tool_name="foreman"), "All clean."], [as_tool(middle)]
    )
    async with open_store("memory://") as stores:
        boss = parent.with_store(stores)
        parked = await boss.run("go")
        assert parked.status == "awaiting_approval"
        [request] = parked.pending_approvals
        assert request.input is not None
        [waiting] = request.input.context["pending"]  # the foreman waits on its janitor call
        assert (waiting["tool_call_id"], waiting["tool_name"]) == ("j1", "janitor")
        runs = {r.agent: r.status for r in (await stores.journal.list_runs()).runs}
        assert runs == {
            "boss": "awaiting_approval",
            "foreman": "awaiting_approval",
            "janitor": "awaiting_approval",
        }
        result = await boss.resume(parked.run_id, directive=Directive(approvals=[approve("c1")]))
        runs = {r.agent: r.status for r in (await stores.journal.list_runs()).runs}
    assert result.text == "All clean."
    assert tool_results(result.messages) == [("Foreman: done.", False)]
    assert set(runs.values()) == {"completed"}
    assert len(model.requests) == 2


async def test_denying_a_parked_childs_call_tells_the_childs_model() -> None:
    child = approval_child()
    parent, _ = parent_agent([ask("clean", tool_name="janitor"), "Not cleaned."], [as_tool(child)])
    parked = await parent.run("go")
    assert parked.state is not None
    denied = ApprovalDecision(tool_call_id="c1", granted=False, reason="not today")
    result = await parent.run(parked.state, directive=Directive(approvals=[denied]))
    assert result.status == "completed"
    assert tool_results(result.messages) == [("Cleaned.", False)]  # the child's final answer
    child_model = child.config.model
    assert isinstance(child_model, ScriptedModel)
    [denial] = [m for m in child_model.requests[-1].messages if isinstance(m, ToolMessage)]
    assert denial.is_error
    assert "not today" in str(denial.content)  # the child's model read the denial


# -- aborts --------------------------------------------------------------------------------


def blocking_child(started: asyncio.Event) -> Agent[Any, Any]:
    async def hang(request: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        yield "working"
        started.set()
        await asyncio.Event().wait()  # never set: only an abort ends this
        yield "never"

    return Agent("researcher", model=FunctionModel(stream_function=hang))


async def test_aborting_the_parent_aborts_the_sub_agent_run() -> None:
    # covers G-60
    started = asyncio.Event()
    async with open_store("memory://") as stores:
        child = blocking_child(started).with_store(stores)
        parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)])
        stream: AgentStream[Any] = parent.stream("go")
        events: list[AgentEvent] = []
        async for event in stream:
            events.append(event)
            if isinstance(event, SubagentEvent) and event.event.type == "text.delta":
                stream.abort()
        assert stream.result.status == "aborted"
        assert child.runs_in_flight == 0
        runs = (await stores.journal.list_runs(agent="researcher")).runs
        assert [r.status for r in runs] == ["aborted"]


async def test_a_drain_abort_lets_the_sub_agent_stop_after_its_step() -> None:
    # covers G-61
    child = child_agent(["Answer."])
    stream_holder: list[AgentStream[Any]] = []

    @tool(side_effect_class="read_only")
    def stop_parent() -> str:
        """Ask the parent run to stop after this step."""
        stream_holder[0].abort(drain=True)
        return "stopping"

    parent, _ = parent_agent(
        [
            Turn(
                tool_calls=[
                    Call("stop_parent", id="c0"),
                    Call("researcher", {"input": "q"}, id="c1"),
                ]
            )
        ],
        [stop_parent, as_tool(child)],
        tool_options=ToolOptions(max_parallel=1),
    )
    stream = parent.stream("go")
    stream_holder.append(stream)
    events = [e async for e in stream]
    assert stream.result.status == "aborted"
    assert "tool.execute.error researcher#c1 aborted" in brief(events)


# -- journal and crash ledger ----------------------------------------------------------------


async def test_with_a_store_the_child_run_is_journaled_and_linked_to_its_parent() -> None:
    async with open_store("memory://") as stores:
        child = child_agent([Turn(tool_calls=[Call("lookup", {"q": "x"})]), "Found."])
        parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)], store=stores)
        result = await parent.run("go")
        assert result.ok
        runs = {r.agent: r for r in (await stores.journal.list_runs()).runs}
        assert set(runs) == {"boss", "researcher"}
        assert runs["researcher"].status == "completed"
        opened = (await stores.journal.read(runs["researcher"].run_id))[0]
        payload: Any = opened.payload
        metadata = payload["state"]["metadata"]
        assert metadata["bastion.parent_run_id"] == result.run_id
        assert metadata["bastion.parent_tool_call_id"] == "c1"
        assert metadata["bastion.ancestry"] == ["boss"]
        entries = await stores.journal.read(result.run_id)
        started = next(e for e in entries if e.kind == "tool_call_started")
        assert started.payload["side_effect_class"] == "read_only"
        ended: Any = next(e for e in entries if e.kind == "tool_result").payload
        assert ended["content"] == "Found."
        assert [spent["model"] for spent in ended["spent"]] == ["test:small"]
        # Replaying the parent's journal counts the child's usage again, exactly once.
        resumed = await parent.resume(result.run_id)
        assert resumed.usage == result.usage


async def test_a_tool_result_journaled_in_the_older_format_still_counts_the_childs_usage() -> None:
    # Entries written before ``spent`` kept a sub-agent's usage under ``nested_usage``.
    async with open_store("memory://") as stores:
        child = child_agent(["Found."])
        parent, _ = parent_agent([ask("q"), "ok"], [as_tool(child)], store=stores)
        result = await parent.run("go")
        entries = await stores.journal.read(result.run_id)
    async with open_store("memory://") as older:
        for entry in entries:
            payload: dict[str, Any] = dict(entry.payload)
            if entry.kind == "tool_result":
                spent = payload.pop("spent")
                payload["nested_usage"] = {item["model"]: item["usage"] for item in spent}
            new = NewEntry(kind=entry.kind, payload=payload, schema_version=entry.schema_version)
            await older.journal.append(
                result.run_id, [new], expected_seq=entry.seq - 1, agent="boss"
            )
        replayed = await parent.with_store(older).resume(result.run_id)
    assert replayed.status == "completed"
    assert replayed.usage_by_model == result.usage_by_model
    assert set(replayed.usage_by_model) == {"test:big", "test:small"}


@pytest.mark.parametrize("writes", [False, True])
async def test_a_sub_agent_call_cut_by_a_crash_goes_on_with_its_child_run(writes: bool) -> None:
    # The child's run id is derived from the call: a crash before the child journaled
    # anything starts it now; one after continues it (test_child_durability.py).
    @tool(side_effect_class="side_effecting")
    def send(to: str) -> str:
        """Send a message."""
        return f"sent to {to}"

    def build(stores: Stores) -> Agent[Any, Any]:
        child = Agent(
            "researcher",
            model=ScriptedModel(["Found."] * 2),
            tools=[send] if writes else [lookup],
        )

        def boss(request: ModelRequest) -> Turn:
            answered = any(m.role == "tool" for m in request.messages)
            return Turn(text="ok") if answered else ask("q")

        return Agent("boss", model=FunctionModel(boss), tools=[as_tool(child)], store=stores)

    async with open_store("memory://") as stores:
        result = await build(stores).run("go")
        entries = await stores.journal.read(result.run_id)
    # The process died right after the call was journaled as started.
    cut = [e.kind for e in entries].index("tool_call_started") + 1
    async with open_store("memory://") as crashed:
        for entry in entries[:cut]:
            new = NewEntry(
                kind=entry.kind, payload=entry.payload, schema_version=entry.schema_version
            )
            await crashed.journal.append(
                result.run_id, [new], expected_seq=entry.seq - 1, agent="boss"
            )
        resumed = await build(crashed).resume(result.run_id)
        children = await crashed.journal.list_runs(agent="researcher")
    assert resumed.status == "completed"
    assert tool_results(resumed.messages) == [("Found.", False)]
    assert len(children.runs) == 1


def test_side_effect_class_is_derived_from_the_childs_tools() -> None:
    @tool(side_effect_class="side_effecting")
    def send(to: str) -> str:
        """Send."""
        return to

    readonly = Agent("a", model=ScriptedModel([]), tools=[lookup])
    writer = Agent("b", model=ScriptedModel([]), tools=[lookup, send])
    bare = Agent("c", model=ScriptedModel([]))
    assert as_tool(readonly).side_effect_class == "read_only"
    assert as_tool(writer).side_effect_class == "side_effecting"
    assert as_tool(bare).side_effect_class == "read_only"
    assert as_tool(writer, side_effect_class="read_only").side_effect_class == "read_only"
    nested = Agent("d", model=ScriptedModel([]), tools=[as_tool(writer)])
    assert as_tool(nested).side_effect_class == "side_effecting"


# -- bad configuration -----------------------------------------------------------------------


def test_bad_options_raise_user_error_at_once() -> None:
    child = child_agent(["x"])
    with pytest.raises(UserError, match="expose_turns must be one of 'final', 'all', 'none'"):
        as_tool(child, expose_turns="last")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="forward_events must be one of"):
        as_tool(child, forward_events="some")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="input_filter must be a function"):
        as_tool(child, input_filter="last")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="side_effect_class must be one of"):
        as_tool(child, side_effect_class="harmless")  # type: ignore[arg-type]
    spaced = Agent("research team", model=ScriptedModel([]))
    with pytest.raises(UserError, match=r"Pass as_tool\(name='...'\)"):
        as_tool(spaced)
    assert as_tool(spaced, name="research_team").name == "research_team"


def test_an_agent_cannot_be_its_own_sub_agent() -> None:
    child = child_agent(["x"])
    with pytest.raises(UserError, match="cannot run itself as a sub-agent"):
        Agent("researcher", model=ScriptedModel([]), tools=[as_tool(child, name="helper")])
    middle = Agent("middle", model=ScriptedModel([]), tools=[as_tool(child)])
    with pytest.raises(UserError, match="cannot run itself as a sub-agent"):
        Agent("researcher", model=ScriptedModel([]), tools=[as_tool(middle)])


def test_two_sub_agents_may_not_share_a_name_or_a_tool_name() -> None:
    one, other = child_agent(["x"]), child_agent(["y"])
    with pytest.raises(UserError, match="two different sub-agents named 'researcher'"):
        Agent("boss", model=ScriptedModel([]), tools=[as_tool(one, "a"), as_tool(other, "b")])
    # The same sub-agent under two tool names is fine.
    Agent("boss", model=ScriptedModel([]), tools=[as_tool(one, "a"), as_tool(one, "b")])
    with pytest.raises(DuplicateToolNameError):
        Agent("boss", model=ScriptedModel([]), tools=[as_tool(one), as_tool(one)])


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_keys = st.sampled_from(["approvals", "reasons", "interrupts", "k1", "other"])
_ids = st.sampled_from(["k1", "k9", "c1", ""])
_content = st.dictionaries(
    _keys,
    _json
    | st.dictionaries(_ids, st.booleans() | st.text(max_size=5), max_size=2)
    | st.lists(st.fixed_dictionaries({"interrupt_id": _ids, "decision": _json}), max_size=2),
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(content=_content)
def test_any_answer_to_a_parked_child_is_checked_or_refused_clearly(
    content: dict[str, Any],
) -> None:
    # The answer is checked against the question before anything runs: a UserError or a
    # decision for exactly the parent's call, never another exception.
    state = _parked_state()
    directive = Directive(inputs=[InputAnswer(tool_call_id="c1", content=content)])
    try:
        decisions = check_directive(state, directive)
    except UserError:
        return
    assert list(decisions) == ["c1"]
    answer = decisions["c1"].answer
    assert answer is not None
    assert set((answer.content or {}).get("approvals") or {}) <= {"k1"}


_PARKED: list[RunState] = []


def _parked_state() -> RunState:
    """A parent parked on its janitor's approval (built once)."""
    if not _PARKED:
        child = approval_child()
        parent, _ = parent_agent([ask("clean", tool_name="janitor"), "ok"], [as_tool(child)])
        parked = asyncio.run(parent.run("go"))
        assert parked.state is not None
        _PARKED.append(parked.state)
    return _PARKED[0]
