"""The run loop. It only wires the steps (``steps/``); each step owns its logic.

Every run yields ``agent.start`` first and ``agent.end`` last, whatever happens in between:
failures become status ``failed`` (preceded by ``agent.error``), aborts status ``aborted``
(preceded by ``agent.cancelling``). The loop never raises for a failed run.

Events are numbered in one place: every step, the executor and the governance build them
unnumbered, and ``run_loop`` gives each its ``seq`` as it yields it (after the journal's
highest for a resumed run). An event is not changed after that; what the journal records
of an event (its ``seq``) is read once the event has been yielded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

from bastion.context import TranscriptError
from bastion.core import (
    AgentStartEvent,
    ModelError,
    ScriptExhausted,
    StepStartEvent,
)
from bastion.governance import GovernanceError
from bastion.stores import JournalConflict, LeaseLost, RunBusy, StoreError

from ._binding import apply_edits
from ._handoffs import HandoffError
from ._hooks import maybe_await
from ._output import output_call
from ._scope import RunAborted
from .steps._approvals import resume_step, suspend_step
from .steps._call_model import ModelCall
from .steps._detect_loops import check_loops
from .steps._dispatch_tools import pump_batch, record_outcomes, start_batch
from .steps._end import end_run, lost_end
from .steps._finalize import finalize
from .steps._govern import finish_governance, govern_round, resume_governance, settle
from .steps._guardrails import check_input
from .steps._handoff import refuse_extra_handoffs, take_handoff
from .steps._prepare import before_llm_call, open_run, resolve_deps, result_keeper, shape_output
from .steps._recover import recover
from .steps._respond import (
    after_llm_call,
    begin_step,
    choose_model,
    reject_incomplete,
    roundtrip_complete,
    step_end,
    stop_at_max_steps,
    take_response,
    tool_hint,
)

if TYPE_CHECKING:
    from bastion.core import (
        AgentEvent,
        Message,
        ModelResponse,
        ToolCall,
        UserPart,
    )
    from bastion.tools import ApprovalDecision, InterruptResolution

    from ._context import RunWindow, WindowChange
    from ._replay import Recovery
    from ._scope import RunScope

__all__ = ["run_loop"]


async def run_loop(
    scope: RunScope,
    user_input: str | Sequence[UserPart] | None,
    history: Sequence[Message] | None,
    decisions: dict[str, ApprovalDecision] | None = None,
    resolutions: Sequence[InterruptResolution] = (),
    *,
    recovery: Recovery | None = None,
) -> AsyncGenerator[AgentEvent, None]:
    """Run the agent to the end (or until it suspends), yielding every event, numbered.

    With ``decisions`` the run resumes a suspended step: the decided calls run first.
    ``resolutions`` decide the governance interrupts it suspended on. ``recovery`` continues
    a run rebuilt from its journal after a crash. With a journal (``scope.journal``) each
    model response, tool start and tool result is queued for it; it is committed before any
    tool runs and before the run ends (see ``_journal.py``).
    """
    seq = scope.seq
    steps = _run(scope, user_input, history, decisions, resolutions, recovery)
    try:
        async for event in steps:
            seq += 1
            event.seq = scope.seq = seq
            yield event
    except BaseException as exc:  # the run ends aborted or failed, or this propagates
        await steps.aclose()  # stopped early: its finally blocks run now
        if not await _settle(scope, exc):
            raise
    closing = _end(scope)
    try:
        async for event in closing:
            seq += 1
            event.seq = scope.seq = seq
            yield event
    except BaseException:
        await closing.aclose()
        raise


async def _run(  # noqa: PLR0917 - the loop's own arguments, passed on as they came
    scope: RunScope,
    user_input: str | Sequence[UserPart] | None,
    history: Sequence[Message] | None,
    decisions: dict[str, ApprovalDecision] | None,
    resolutions: Sequence[InterruptResolution],
    recovery: Recovery | None,
) -> AsyncGenerator[AgentEvent, None]:
    state = scope.state
    state.started_at = scope.clock.monotonic()
    failed_sources: set[str] = set()  # tool sources whose failure this run reported
    start = AgentStartEvent(
        run_id=scope.run_id,
        agent_name=scope.config.name,
        model=scope.config.model.key,
        resumed=decisions is not None or recovery is not None,
    )
    yield start
    events = _open(
        scope, start, (user_input, history), decisions, resolutions, recovery, failed_sources
    )
    try:
        async for event in events:
            yield event
    except BaseException:  # stopped early: its finally blocks run now
        await events.aclose()
        raise
    if state.status == "running" and scope.config.handoffs is not None:
        async for event in take_handoff(scope):  # a resumed step that handed off
            yield event
    # One step per turn, in this frame: every event of a step passes through it once.
    while state.status == "running":
        for event in await _before_call(scope, failed_sources):
            yield event
        change = None if (window := scope.window) is None else await _compaction(scope, window)
        if change is not None:
            try:
                yield change.event
            finally:  # numbered by now; journaled even if the consumer stops here
                if scope.journal is not None and change.spent is not None:
                    scope.journal.compacted(state, change.spent, change.event.seq)
        if state.status != "running":
            break
        config = scope.config  # a handoff makes another agent's config the run's
        request = begin_step(scope)
        flags = config.hook_flags
        if flags.before_llm_call:
            await before_llm_call(scope, request)
        model = config.model
        if config.tiers or flags.prepare_step:
            model = await choose_model(scope, request)
        if config.output_schema is not None:
            shape_output(scope, request, model)
        event = StepStartEvent(run_id=scope.run_id, step=state.step, model=model.key)
        yield event
        call = ModelCall(scope, request, model)
        async for event in call.events():
            yield event
        response = await _end_call(scope, call, event.seq)
        tools = _tool_calls(scope, response)
        if response.incomplete_tool_calls:
            for event in reject_incomplete(scope, call, response):  # fails the run
                yield event
        elif tools:
            events = _tool_round(scope, call, response, tools)
            try:
                async for event in events:
                    yield event
            except BaseException:  # stopped early: its finally blocks run now
                await events.aclose()
                raise
        else:
            yield step_end(scope, call, response)
            events = _answered(scope, response)
            try:
                async for event in events:
                    yield event
            except BaseException:  # stopped early: its finally blocks run now
                await events.aclose()
                raise


async def _settle(scope: RunScope, exc: BaseException) -> bool:
    """End the run on ``exc`` (aborted or failed); False when it must propagate."""
    state = scope.state
    if isinstance(exc, RunAborted):
        state.abort()
    elif isinstance(exc, asyncio.CancelledError):
        if not scope.cancel_sent:  # cancelled from outside (a timeout, a closing app)
            if scope.journal is not None:
                await scope.journal.abandon()
            return False
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        state.abort()
    elif isinstance(exc, Exception):  # the run fails; the caller gets a result
        if scope.governance is not None and isinstance(exc, GovernanceError):
            settle(scope, exc)  # fails, stops or suspends the run
        else:
            state.fail(_failure_code(exc), f"{type(exc).__name__}: {exc}", exc)
    else:  # GeneratorExit, KeyboardInterrupt, SystemExit
        return False
    return True


async def _open(  # noqa: PLR0917 - the loop's own arguments, passed on as they came
    scope: RunScope,
    start: AgentStartEvent,
    given: tuple[str | Sequence[UserPart] | None, Sequence[Message] | None],
    decisions: dict[str, ApprovalDecision] | None,
    resolutions: Sequence[InterruptResolution],
    recovery: Recovery | None,
    failed_sources: set[str],
) -> AsyncGenerator[AgentEvent, None]:
    """Start the run: recovered after a crash, resumed with decisions, or new."""
    config, state, journal, governance = scope.config, scope.state, scope.journal, scope.governance
    if config.tool_sources.sources:  # listed first: a resumed step runs the tools listed now
        for event in await config.tool_sources.refresh(scope.run_id, failed_sources):
            yield event
        scope.current_tools()
    if recovery is not None:
        await resolve_deps(scope.ctx)
        async for event in recover(scope, recovery):
            yield event
    elif decisions is not None:
        if journal is not None:
            await journal.decided_directive(state, start.seq)
        apply_edits(state, decisions)  # the model reads the call as it was approved
        await resolve_deps(scope.ctx)
        resumed = governance is None or await resume_governance(scope, resolutions)
        if governance is not None:
            for event in governance.drain(scope.run_id):
                yield event
        if resumed and state.suspended is not None:
            async for event in resume_step(scope, decisions):
                yield event
    else:
        await open_run(scope, *given)
        if config.hooks is not None and config.hook_flags.before_run:
            await maybe_await(config.hooks.before_run(scope.ctx))
        if config.input_guardrails:
            for event in await check_input(scope):
                yield event
        if journal is not None:
            await journal.started(state, start.seq)


async def _before_call(scope: RunScope, failed_sources: set[str]) -> list[AgentEvent]:
    """What comes before a step's model call; a limit reached ends the run here."""
    config, state, journal = scope.config, scope.state, scope.journal
    if scope.abort is not None:
        raise RunAborted
    if state.step >= config.max_steps:
        stop_at_max_steps(scope)
        return []
    allowance = config.allowance
    if allowance is not None:  # a sub-agent's slice of its parent's budget
        spent = allowance.spent(state, scope.clock.monotonic())
        if spent is not None:
            state.stop(f"budget: {spent}", state.last_text())
            return []
    if scope.session_link is not None:  # steering messages join before the call
        if journal is not None:  # the session stores only what the journal holds
            await journal.flush()
        await scope.session_link.before_model_call(scope.ctx, state.messages)
        if scope.abort is not None:  # the session aborted the turn meanwhile
            raise RunAborted
    events: list[AgentEvent] = []
    inbox = scope.inbox
    if inbox is not None and inbox.steering:  # stream.steer(): joins before the call
        events.extend(inbox.steer(state))
    if journal is not None:  # an acting tool's result is durable before the call
        await journal.before_model_call()
    if config.tool_sources.sources:  # MCP servers: their current tools
        events.extend(await config.tool_sources.refresh(scope.run_id, failed_sources))
    return events


async def _compaction(scope: RunScope, window: RunWindow) -> WindowChange | None:
    """Compact the history when the request would not fit (``None``: it fits, or done)."""
    if scope.state.status != "running":
        return None
    return await window.before_model_call(scope, result_keeper(scope))


async def _end_call(scope: RunScope, call: ModelCall, seq: int) -> ModelResponse:
    """The call's response, observed, journaled (at ``seq``) and shown to the hooks."""
    state, journal = scope.state, scope.journal
    response = take_response(scope, call)
    window = scope.window
    if window is not None:
        window.observe(response.usage)
        window.answered_by(call.model)  # a smaller fallback lowers the trigger
    if journal is not None:  # entry seq: the model call's last event (or step.start)
        journal.model_response(state, call.model.key, response, seq, call.chunks)
    if scope.session_link is not None:  # a session's step ends here, before its tools
        if journal is not None:  # a crash never leaves the session ahead of the run
            await journal.flush()
        await scope.session_link.after_model_call(scope.ctx, response)
    if scope.config.hook_flags.after_llm_call:
        await after_llm_call(scope, response)
    return response


def _tool_calls(scope: RunScope, response: ModelResponse) -> Sequence[ToolCall]:
    """The calls the step runs as tools (none when one is the typed answer's tool)."""
    calls = response.message.tool_calls
    if calls and (scope.config.output_schema is None or output_call(calls) is None):
        return calls
    return ()


async def _tool_round(
    scope: RunScope, call: ModelCall, response: ModelResponse, calls: Sequence[ToolCall]
) -> AsyncGenerator[AgentEvent, None]:
    """Run a step's tool calls; a suspension (approval, interrupt) ends the run here."""
    config, state, governance = scope.config, scope.state, scope.governance
    if governance is not None:
        governed = await govern_round(scope, call.model, calls)
        for event in governance.drain(scope.run_id):
            yield event
        if not governed:  # a rounds interrupt suspended the run
            yield step_end(scope, call, response)
            return
    batch = start_batch(scope, calls)
    if config.handoffs is not None:
        refuse_extra_handoffs(scope, batch, calls)
    if config.loop_detection is not None:  # repeated identical calls
        for event in check_loops(scope, batch, calls):
            yield event
    try:
        async with aclosing(pump_batch(scope, batch)) as tool_events:
            async for event in tool_events:
                yield event
    finally:
        if batch.pending:
            suspend_step(scope, batch, calls)
        record_outcomes(scope, batch, calls)
        apply_edits(state, batch.decided)  # a human's edit, as the model sees it
    if governance is not None:
        for event in governance.drain(scope.run_id):
            yield event
    if config.tiers is not None:
        scope.model_hint = tool_hint(scope, calls)
    yield step_end(scope, call, response)
    if batch.pending:  # suspended: the status is now awaiting_approval
        return
    if config.hook_flags.on_roundtrip_complete:
        await roundtrip_complete(scope)
    if config.handoffs is not None:
        async for event in take_handoff(scope):
            yield event


async def _answered(scope: RunScope, response: ModelResponse) -> AsyncGenerator[AgentEvent, None]:
    """A step without tool calls: the answer is taken (or sent back for a fix)."""
    config, state = scope.config, scope.state
    for event in await finalize(scope, response):
        yield event
    inbox = scope.inbox
    if inbox is not None and inbox.follow_ups:  # stream.follow_up(): the next turn
        followed = inbox.follow_up(state)
        if followed is not None:
            yield followed
    suggester = config.suggestions
    if suggester is not None:  # once completed: what the user may ask next
        suggested = await suggester.suggest(scope)
        if suggested is not None:
            yield suggested


async def _end(scope: RunScope) -> AsyncGenerator[AgentEvent, None]:
    """Settle governance, journal the end, and give the closing events (``agent.end`` last)."""
    state, governance, journal = scope.state, scope.governance, scope.journal
    if governance is not None:
        await finish_governance(scope)
        for event in governance.drain(scope.run_id):
            yield event
    scope.ending = True  # from here on nothing could undo an abort's cancellation
    closing = await end_run(scope)
    state.last_seq = scope.seq + len(closing)  # agent.end's, journaled before it goes out
    if journal is not None:  # interrupt_raised or run_ended, before agent.end goes out
        try:
            await journal.finish(state)
        except Exception as exc:  # the end is not durable: the run ends failed, not raised
            state.lose(_failure_code(exc), f"{type(exc).__name__}: {exc}", exc)
            closing = lost_end(scope, closing)
            state.last_seq = scope.seq + len(closing)
            await journal.end_after_failure(state)
    for event in closing:
        yield event


def _failure_code(exc: Exception) -> str:
    if isinstance(exc, HandoffError):  # an unknown target, max_handoffs, governance
        return exc.code
    if isinstance(exc, (ModelError, ScriptExhausted)):
        return "model_error"
    if isinstance(exc, RunBusy):  # another live process owns the run
        return "run_busy"
    if isinstance(exc, (JournalConflict, LeaseLost)):  # another process took the run over
        return "conflict"
    if isinstance(exc, StoreError):  # the store failed (unreachable, refused a write)
        return "store_error"
    if isinstance(exc, TranscriptError):  # a history no provider would accept, not guessed at
        return "invalid_transcript"
    return "internal_error"
