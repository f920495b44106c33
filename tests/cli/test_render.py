"""The renderer, fed hand-made events: what a person watching the run would see."""

import io
import itertools
from typing import get_args

from inline_snapshot import snapshot
from rich.console import Console

from bastion.cli._render import Renderer
from bastion.core import (
    AgentCancellingEvent,
    AgentEndEvent,
    AgentErrorEvent,
    AgentEvent,
    AgentFollowUpEvent,
    AgentStartEvent,
    AgentSteeredEvent,
    AgentSuggestionsEvent,
    ContextCompactedEvent,
    ContextCompactionFailedEvent,
    GovernanceEvent,
    GuardrailTrippedEvent,
    HandoffEvent,
    ModelCircuitEvent,
    ModelFellbackEvent,
    ModelRetryEvent,
    ReasoningDeltaEvent,
    StepEndEvent,
    StepStartEvent,
    SubagentEvent,
    TextCompleteEvent,
    TextDeltaEvent,
    ToolApprovalRequestedEvent,
    ToolApprovalResolvedEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallIncompleteEvent,
    ToolCallStartEvent,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecutePartialEvent,
    ToolExecuteProgressEvent,
    ToolExecuteStartEvent,
    ToolLoopDetectedEvent,
    ToolRetryEvent,
    ToolSourceErrorEvent,
    Usage,
    VerifierResultEvent,
)

RUN = "run_1"
MODEL = "test:scripted"


def render(events: list[AgentEvent], *, live: bool = False) -> str:
    out = io.StringIO()
    console = Console(
        file=out, force_terminal=live, width=100, color_system="standard" if live else None
    )
    ticks = iter([10.0, 10.25])
    with Renderer(console, live=live, clock=lambda: next(ticks)) as renderer:
        for event in events:
            renderer.handle(event)
    return out.getvalue()


def parallel_run() -> list[AgentEvent]:
    """Two steps: three parallel tool calls (one fails), then a streamed answer."""
    seq = itertools.count(1)
    usage = Usage(prompt_tokens=900, completion_tokens=100)
    calls = [
        ("c1", "count_lines", '{"path": "a.py"}'),
        ("c2", "read_file", '{"path": "/etc/passwd"}'),
        ("c3", "list_files", '{"directory": "src", "pattern": "*.py"}'),
    ]
    events: list[AgentEvent] = [
        AgentStartEvent(run_id=RUN, seq=next(seq), agent_name="repo-assistant", model=MODEL),
        StepStartEvent(run_id=RUN, seq=next(seq), step=1, model=MODEL),
        TextDeltaEvent(run_id=RUN, seq=next(seq), delta="Let me "),
        TextDeltaEvent(run_id=RUN, seq=next(seq), delta="look."),
        TextCompleteEvent(run_id=RUN, seq=next(seq), text="Let me look."),
    ]
    for call_id, name, args in calls:
        events += [
            ToolCallStartEvent(run_id=RUN, seq=next(seq), tool_call_id=call_id, tool_name=name),
            ToolCallDeltaEvent(run_id=RUN, seq=next(seq), tool_call_id=call_id, args_delta=args),
            ToolCallEndEvent(
                run_id=RUN, seq=next(seq), tool_call_id=call_id, tool_name=name, arguments=args
            ),
        ]
    events.append(
        StepEndEvent(
            run_id=RUN, seq=next(seq), step=1, model=MODEL, finish_reason="tool_calls", usage=usage
        )
    )
    events += [
        ToolExecuteStartEvent(
            run_id=RUN, seq=next(seq), tool_call_id=call_id, tool_name=name, arguments=args
        )
        for call_id, name, args in calls
    ]
    events += [
        ToolExecuteEndEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c1",
            tool_name="count_lines",
            result="412",
            duration=0.0004,
        ),
        ToolExecuteErrorEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c2",
            tool_name="read_file",
            kind="execution_failed",
            message="'/etc/passwd' is outside the repository",
            duration=0.002,
        ),
        ToolExecuteEndEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c3",
            tool_name="list_files",
            result='["src/a.py", "src/b.py"]',
            duration=0.031,
        ),
        StepStartEvent(run_id=RUN, seq=next(seq), step=2, model=MODEL),
        TextDeltaEvent(run_id=RUN, seq=next(seq), delta="a.py has "),
        TextDeltaEvent(run_id=RUN, seq=next(seq), delta="412 lines."),
        TextCompleteEvent(run_id=RUN, seq=next(seq), text="a.py has 412 lines."),
        StepEndEvent(
            run_id=RUN, seq=next(seq), step=2, model=MODEL, finish_reason="stop", usage=usage
        ),
        AgentEndEvent(
            run_id=RUN,
            seq=next(seq),
            status="completed",
            output="a.py has 412 lines.",
            usage=usage + usage,
        ),
    ]
    return events


def test_plain_run_streams_text_and_shows_parallel_calls_starting_together_ending_in_order():
    assert render(parallel_run()) == snapshot("""\
● repo-assistant · test:scripted
step 1 · test:scripted
Let me look.
  … count_lines(path="a.py") running
  … read_file(path="/etc/passwd") running
  … list_files(directory="src", pattern="*.py") running
  ✓ count_lines(path="a.py") 0.4 ms → 412
  ✗ read_file(path="/etc/passwd") 2.0 ms → execution_failed: '/etc/passwd' is outside the repository
  ✓ list_files(directory="src", pattern="*.py") 31 ms → ["src/a.py", "src/b.py"]
step 2 · test:scripted
a.py has 412 lines.
✓ completed · 2 steps · 3 tool calls · 2,000 tokens · 250 ms
""")


def test_live_run_ends_with_each_call_settled_on_screen_and_the_cursor_restored():
    output = render(parallel_run(), live=True)
    final_batch = output.rsplit("\r", 1)[-1]
    assert "✓" in final_batch
    assert "running" not in final_batch.split("step 2")[0]
    assert "\x1b[?25h" in output  # rich hides the cursor while live; it must come back
    assert "a.py has 412 lines." in output


def one_of_each_event() -> list[AgentEvent]:
    seq = itertools.count(1)
    return [
        AgentStartEvent(run_id=RUN, seq=next(seq), agent_name="a", model=MODEL),
        StepStartEvent(run_id=RUN, seq=next(seq), step=1, model=MODEL),
        ReasoningDeltaEvent(run_id=RUN, seq=next(seq), delta="pondering"),
        TextDeltaEvent(run_id=RUN, seq=next(seq), delta="Hi"),
        TextCompleteEvent(run_id=RUN, seq=next(seq), text="Hi"),
        ToolCallStartEvent(run_id=RUN, seq=next(seq), tool_call_id="c1", tool_name="t"),
        ToolCallDeltaEvent(run_id=RUN, seq=next(seq), tool_call_id="c1", args_delta="{}"),
        ToolCallEndEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c1", tool_name="t", arguments="{}"
        ),
        ToolCallIncompleteEvent(run_id=RUN, seq=next(seq), tool_call_id="c9", tool_name="cut"),
        ToolSourceErrorEvent(run_id=RUN, seq=next(seq), source="git", message="OSError: gone"),
        ToolExecuteStartEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c1", tool_name="t", arguments="{}"
        ),
        ToolExecuteProgressEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c1", current=2, total=4, message="half"
        ),
        ToolExecutePartialEvent(run_id=RUN, seq=next(seq), tool_call_id="c1", content="piece"),
        SubagentEvent(  # plain mode shows a sub-agent's run through its call's result line
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c1",
            agent_name="helper",
            event=TextCompleteEvent(run_id="run_child", seq=4, text="child text"),
        ),
        ToolExecuteEndEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c1", tool_name="t", result="ok", duration=0.001
        ),
        ToolExecuteStartEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c2", tool_name="t", arguments="{}"
        ),
        ToolExecuteErrorEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c2",
            tool_name="t",
            kind="timeout",
            message="took too long",
        ),
        ToolApprovalRequestedEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c3", tool_name="rm", arguments='{"path": "x"}'
        ),
        ToolApprovalResolvedEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c3",
            tool_name="rm",
            granted=False,
            reason="not today",
        ),
        ContextCompactedEvent(run_id=RUN, seq=next(seq), before_tokens=12000, after_tokens=3000),
        ContextCompactionFailedEvent(
            run_id=RUN,
            seq=next(seq),
            tokens=120000,
            strategy="summarize",
            reason="Overloaded: busy",
        ),
        StepEndEvent(
            run_id=RUN, seq=next(seq), step=1, model=MODEL, finish_reason="stop", usage=Usage()
        ),
        GuardrailTrippedEvent(
            run_id=RUN,
            seq=next(seq),
            guardrail="pii",
            stage="output",
            action="block",
            reason="an email address",
        ),
        GovernanceEvent(
            run_id=RUN,
            seq=next(seq),
            signal="oracle.denied",
            data={"key": "tool:transfer", "reason": "outside trading hours"},
        ),
        ModelRetryEvent(
            run_id=RUN, seq=next(seq), model=MODEL, attempt=2, delay=1.5, error="Overloaded('busy')"
        ),
        ModelFellbackEvent(
            run_id=RUN,
            seq=next(seq),
            previous_model=MODEL,
            next_model="test:backup",
            error="RateLimited",
        ),
        ModelCircuitEvent(
            run_id=RUN,
            seq=next(seq),
            model=MODEL,
            state="open",
            failures=3,
            cool_down=30.0,
            error="ConnectionFailed: down",
        ),
        ToolRetryEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c9",
            tool_name="lookup",
            attempt=2,
            delay=0.25,
            error="ToolRateLimited: slow down",
        ),
        ToolLoopDetectedEvent(
            run_id=RUN,
            seq=next(seq),
            tool_call_id="c9",
            tool_name="lookup",
            arguments="{}",
            count=3,
            action="warn",
        ),
        VerifierResultEvent(
            run_id=RUN, seq=next(seq), verifier="cites", passed=False, feedback="cite", round=1
        ),
        HandoffEvent(
            run_id=RUN, seq=next(seq), from_agent="a", to_agent="billing", tool_call_id="h1"
        ),
        AgentCancellingEvent(run_id=RUN, seq=next(seq), drain=True),
        AgentSteeredEvent(run_id=RUN, seq=next(seq), text="only the flowers"),
        AgentFollowUpEvent(run_id=RUN, seq=next(seq), text="and the trees?", output="roses"),
        AgentSuggestionsEvent(
            run_id=RUN, seq=next(seq), suggestions=["Why?", "When?"], model=MODEL
        ),
        AgentErrorEvent(
            run_id=RUN, seq=next(seq), code="guardrail_blocked", message="Output blocked by 'pii'."
        ),
        AgentEndEvent(run_id=RUN, seq=next(seq), status="failed", output=None, usage=Usage()),
    ]


def test_every_event_type_of_the_union_renders():
    events = one_of_each_event()
    assert {type(e) for e in events} == set(get_args(AgentEvent))
    assert render(events) == snapshot("""\
● a · test:scripted
step 1 · test:scripted
thinking: pondering
Hi
  ✗ the call to cut was cut off before its arguments were complete; it was not run
  ✗ tools of git unavailable: OSError: gone
  … t() running
  … t() running 2/4 half
  ✓ t() 1.0 ms → ok
  … t() running
  ✗ t() 0.0 ms → timeout: took too long
  ? rm(path="x") waits for a human decision
  ✗ rm denied: not today
  ⇣ context compacted: 12,000 → 3,000 tokens
  ! context not compacted (120,000 tokens): Overloaded: busy
  ⚠ guardrail 'pii' (output) block: an email address
  ⚖ tool:transfer denied: outside trading hours
  ↻ test:scripted failed (Overloaded('busy')); retry 2 in 1.50 s
  ⤳ falling back from test:scripted to test:backup (RateLimited)
  ○ test:scripted circuit open after 3 failure(s); skipped for 30.00 s
  ↻ lookup rate-limited (ToolRateLimited: slow down); attempt 2 in 250 ms
  ⟲ lookup called 3 times with the same arguments (warn)
  ✗ verifier 'cites' failed: cite
⇢ a hands the conversation to billing
  ■ cancelling: finishing the current step
  » steered: only the flowers
  » follow-up: and the trees?
  ? you could ask: Why? | When?
✗ guardrail_blocked: Output blocked by 'pii'.
✗ failed · 1 step · 2 tool calls · 0 tokens · 250 ms
""")


def test_live_sub_agent_call_shows_what_the_sub_agent_does_in_its_row():
    seq = itertools.count(1)

    def sub(event: AgentEvent) -> SubagentEvent:
        return SubagentEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c1", agent_name="researcher", event=event
        )

    child = "run_child"
    events: list[AgentEvent] = [
        AgentStartEvent(run_id=RUN, seq=next(seq), agent_name="boss", model=MODEL),
        ToolExecuteStartEvent(
            run_id=RUN, seq=next(seq), tool_call_id="c1", tool_name="researcher", arguments="{}"
        ),
        sub(
            ToolExecuteStartEvent(
                run_id=child, seq=2, tool_call_id="k1", tool_name="search", arguments='{"q":"x"}'
            )
        ),
        sub(TextCompleteEvent(run_id=child, seq=5, text="found it\nthe answer is 42")),
    ]
    output = render(events, live=True)
    assert 'researcher → search(q="x")' in output
    assert "researcher: the answer is 42" in output


def test_structured_output_is_shown_when_no_text_was_streamed():
    seq = itertools.count(1)
    events: list[AgentEvent] = [
        AgentStartEvent(run_id=RUN, seq=next(seq), agent_name="a", model=MODEL),
        AgentEndEvent(
            run_id=RUN, seq=next(seq), status="completed", output={"total": 3}, usage=Usage()
        ),
    ]
    assert '{"total":3}' in render(events).splitlines()


def test_a_result_whose_start_was_not_seen_still_gets_its_line():
    event = ToolExecuteEndEvent(
        run_id=RUN, seq=7, tool_call_id="c1", tool_name="count_lines", result="3", duration=0.5
    )
    assert render([event]) == "  ✓ count_lines(…) 500 ms → 3\n"


def test_status_is_known_after_the_end():
    out = io.StringIO()
    renderer = Renderer(Console(file=out), live=False)
    assert renderer.status is None
    for event in parallel_run():
        renderer.handle(event)
    renderer.close()
    assert renderer.status == "completed"


def test_text_that_was_not_streamed_is_shown_once_complete():
    events: list[AgentEvent] = [
        TextDeltaEvent(run_id=RUN, seq=1, delta="Streamed."),
        TextCompleteEvent(run_id=RUN, seq=2, text="Streamed."),
        TextCompleteEvent(run_id=RUN, seq=3, text="Arrived whole."),
    ]
    assert render(events) == "Streamed.\nArrived whole.\n"
