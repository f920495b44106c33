"""Dispatches the tool calls of one step: gate, parallel or sequential runs, timeouts, abort.

Every call first passes the gate (``_gate.py``): name-level deny, validation (with one
repair round), ``before_tool_call`` hooks, the approval requirement and its resolution.
Calls the gate stops become error results that say why; calls left waiting for a human are
*pending* (the run suspends after the others ran). Admitted calls run with bounded
parallelism; a ``sequential`` tool waits for everything before it and blocks everything
after it. Each result then passes the result processors (sanitisation, limits).

Events: ``tool.approval.requested`` / ``resolved`` while admitting, in call order;
``tool.execute.start`` for every admitted call up front in call order; ``end``/``error``
events in call order whatever the completion order; only ``progress``/``partial`` events
interleave live.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Coroutine,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from bastion.core import (
    AgentEvent,
    Clock,
    GovernanceEvent,
    RunContext,
    RunError,
    ToolApprovalRequestedEvent,
    ToolApprovalResolvedEvent,
    ToolCall,
    ToolErrorKind,
    ToolExecuteStartEvent,
    ToolRetryEvent,
    UserError,
    call_sandbox,
)
from bastion.observability import AuditRecord, ToolAudit
from bastion.security import PROVENANCE, Provenance, SecretScope, Vault

from ._cache import CacheKey, ToolCache
from ._cancel import InlineCall, abandon
from ._gate import (
    Allow,
    ApprovalDecision,
    ApprovalRequest,
    Ask,
    Deny,
    GuardVerdict,
    Mock,
    Rewrite,
    ToolCallRequest,
    ToolGate,
    ToolGovernor,
)
from ._input import InputRequest, InputRequired
from ._invoke import (
    DEFAULT_EVENT_QUEUE_DEPTH,
    DeadlineExceeded,
    LiveEvent,
    ProgressQueue,
    ProgressSink,
    invoke,
    within,
)
from ._memory_guard import MemoryGuard
from ._outcome import SkipTool, ToolError, ToolOutcome, end_event, error_outcome, failed_outcome
from ._pipeline import ResultEnvelope, ResultProcessor
from ._result import render_output
from ._retry import ToolRetry, retries_safely, retry_after_failure
from ._schema import ToolArgumentsError
from ._tool import Tool, ToolResult

__all__ = [
    "ApprovalTimeout",
    "SkipTool",
    "ToolBatch",
    "ToolCallHooks",
    "ToolExecutor",
    "ToolOutcome",
    "end_event",
]

_NO_MOCK: Any = object()


class ApprovalTimeout(RunError):
    """``on_approval`` did not decide in time and ``timeout_action`` is ``"raise"``."""


class ToolCallHooks(Protocol):
    """Interception points the agent layer plugs into the executor."""

    async def before(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> SkipTool | None:
        """Called after validation, before the tool runs."""
        ...

    async def after(self, tool: Tool, call: ToolCall, content: str) -> str:
        """Called with the rendered result; returns the (possibly replaced) result."""
        ...

    async def before_approval(self, request: ApprovalRequest) -> None:
        """Called before ``on_approval`` is asked (a human may take hours to answer)."""
        ...


@dataclass(slots=True)
class _Prepared:
    index: int
    call: ToolCall
    tool: Tool | None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict[str, Any])
    outcome: ToolOutcome | None = None
    mock: Any = _NO_MOCK
    pending: ApprovalRequest | None = None
    invalid: ToolArgumentsError | None = None  # awaiting the repair round


class ToolExecutor:
    """Runs tool calls against a fixed set of tools.

    Args:
        tools: The tools by name.
        max_parallel: How many calls of one step may run at once (1 = serial).
        clock: Measures durations and approval timeouts.
        gate: Deny list, hooks and approvals (default: none of them).
        processors: Result processors, in order (sanitisation, then limits).
        audit: Where audit records and counters go.
        cancel_grace: Seconds a cancelled batch waits for tools that ignore cancellation
            before abandoning them (they end as ``aborted``).
        cache: The results cache of tools with a ``cache_ttl`` (default: a new one).
        event_queue_depth: Most live progress/partial events a batch holds for a slow
            consumer; the oldest is dropped beyond (``tool.streaming.dropped.total``).
        retry: How rate-limited calls of tools that may safely run again are retried
            (``None``: never).
        memory_guard: Checks that calls of tools declaring no side effects leave the
            run's memory regions unchanged (``None``: no check).
    """

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        max_parallel: int,
        clock: Clock,
        gate: ToolGate | None = None,
        processors: Sequence[ResultProcessor] = (),
        audit: ToolAudit | None = None,
        cancel_grace: float = 0.05,
        cache: ToolCache | None = None,
        event_queue_depth: int = DEFAULT_EVENT_QUEUE_DEPTH,
        retry: ToolRetry | None = None,
        memory_guard: MemoryGuard | None = None,
    ) -> None:
        self.tools = tools
        self.memory_guard = memory_guard
        self.retry = retry
        self.max_parallel = max_parallel
        self.clock = clock
        self.gate = gate or ToolGate()
        self.processors = tuple(processors)
        self.audit = audit or ToolAudit()
        self.cancel_grace = cancel_grace
        self.cache = cache if cache is not None else ToolCache(clock, counters=self.audit.counters)
        self.event_queue_depth = event_queue_depth
        self._chains: dict[str, tuple[Tool, tuple[ResultProcessor, ...]]] = {}
        # The secrets tools may reveal (set by the agent); revealed values are redacted
        # from every result.
        self.vault: Vault | None = None

    def batch(
        self,
        calls: Sequence[ToolCall],
        ctx: RunContext[Any],
        *,
        hooks: ToolCallHooks | None = None,
        decisions: Mapping[str, ApprovalDecision] | None = None,
        tools: Mapping[str, Tool] | None = None,
    ) -> ToolBatch:
        """Prepare the calls of one step; iterate :meth:`ToolBatch.events` to run them.

        Args:
            calls: The calls, in the order the model made them.
            ctx: The run's context.
            hooks: The agent's interception points.
            decisions: Human decisions by call id (a resumed run): a granted call skips the
                hooks and the approval stage; a denied one becomes an error result.
            tools: The tools this step may run (the run's current tool set; default: the
                executor's own).
        """
        known = self.tools if tools is None else tools
        prepared = [self._prepare(i, call, known) for i, call in enumerate(calls)]
        return ToolBatch(self, prepared, ctx, hooks, decisions or {})

    async def run_one(
        self, call: ToolCall, ctx: RunContext[Any], *, allow_approval: bool = False
    ) -> ToolOutcome:
        """Run one call through the gate and the result processors, without events.

        Used by tools that call other tools (code mode). A call that would need a human
        decision is refused (``approval_denied``) unless ``allow_approval``.
        """
        batch = ToolBatch(self, [self._prepare(0, call, self.tools)], ctx, None, {})
        async for _ in batch.admit(interactive=allow_approval):
            pass
        p = batch.prepared[0]
        if p.pending is not None:
            return error_outcome(p.call, "approval_denied", f"Tool {call.name!r} needs approval.")
        if p.outcome is None:
            p.outcome = await batch.execute(p, None)
        self.record(p.outcome, ctx)
        return p.outcome

    def with_gate(self, gate: ToolGate) -> ToolExecutor:
        """An executor like this one behind another gate (its cache, audit and chains shared)."""
        twin = ToolExecutor(
            self.tools,
            max_parallel=self.max_parallel,
            clock=self.clock,
            gate=gate,
            processors=self.processors,
            audit=self.audit,
            cancel_grace=self.cancel_grace,
            cache=self.cache,
            event_queue_depth=self.event_queue_depth,
            retry=self.retry,
            memory_guard=self.memory_guard,
        )
        twin._chains = self._chains
        twin.vault = self.vault
        return twin

    def chain(self, tool: Tool) -> tuple[ResultProcessor, ...]:
        """The processors that apply to ``tool`` (computed once per tool)."""
        cached = self._chains.get(tool.name)
        if cached is not None and cached[0] is tool:
            return cached[1]
        # Keyed by name, checked by identity: a registry may give a name to another tool.
        chain = tuple(p for p in self.processors if p.applies_to(tool))
        self._chains[tool.name] = (tool, chain)
        return chain

    def record(self, outcome: ToolOutcome, ctx: RunContext[Any]) -> None:
        """Count a finished call, and deliver its audit record when anyone listens."""
        audit = self.audit
        counters = audit.counters
        counters.incr("tool.executor.calls.total")
        if outcome.is_error:
            counters.incr("tool.executor.errors.total", kind=outcome.error_kind or "unknown")
        if outcome.truncation is not None:
            counters.incr("tool.result.truncated.total", strategy=outcome.truncation)
        if outcome.sanitization_hits:
            counters.incr("tool.inbound.sanitization.hits.total", outcome.sanitization_hits)
        if not audit.active:
            return
        tool = self.tools.get(outcome.call.name)
        audit.emit(
            AuditRecord(
                run_id=ctx.run_id,
                tool_call_id=outcome.call.id,
                tool_name=outcome.call.name,
                classification=tool.classification() if tool is not None else {},
                outcome=outcome.error_kind or "execution_failed" if outcome.is_error else "ok",
                duration=outcome.duration,
                truncation=outcome.truncation,
                original_tokens=outcome.original_tokens,
                sanitization_policy=outcome.sanitization_policy,
                sanitization_hits=outcome.sanitization_hits,
                cached=outcome.cached,
                timestamp=self.clock.now(),
                sandbox=None
                if tool is None
                else call_sandbox(ctx.runtime, tool.sandbox, ctx.sandbox),
                memory_changed=outcome.memory_changed,
            )
        )

    def _prepare(self, index: int, call: ToolCall, tools: Mapping[str, Tool]) -> _Prepared:
        tool = tools.get(call.name)
        if tool is None:
            available = ", ".join(repr(n) for n in sorted(tools)) or "none"
            return _Prepared(
                index=index,
                call=call,
                tool=None,
                outcome=error_outcome(
                    call,
                    "unknown_tool",
                    f"Unknown tool {call.name!r}. Available tools: {available}.",
                ),
            )
        if self.gate.denied(call.name):
            return _Prepared(
                index=index,
                call=call,
                tool=tool,
                outcome=error_outcome(
                    call, "capability_blocked", f"Tool {call.name!r} is not allowed in this run."
                ),
            )
        p = _Prepared(index=index, call=call, tool=tool)
        try:
            p.args, p.kwargs = tool.validator.validate(call.arguments)
        except ToolArgumentsError as exc:
            p.outcome = error_outcome(call, "invalid_input", exc.for_model(tool.name))
            if self.gate.repair is not None:
                p.invalid = exc
        return p


class ToolBatch:
    """The calls of one step. Iterate :meth:`events`; then read :attr:`outcomes`.

    After an interruption (abort), calls that did not finish have no outcome (``None``).
    Calls waiting for a human decision are in :attr:`pending`; they have no outcome.
    """

    def __init__(
        self,
        executor: ToolExecutor,
        prepared: list[_Prepared],
        ctx: RunContext[Any],
        hooks: ToolCallHooks | None,
        decisions: Mapping[str, ApprovalDecision],
    ) -> None:
        self._executor = executor
        self.prepared = prepared
        self._ctx = ctx
        self._hooks = hooks
        self._decisions = decisions
        self.outcomes: list[ToolOutcome | None] = [None] * len(prepared)
        self.pending: list[ApprovalRequest] = []
        self._order: list[int] = []  # indices owed an end event, in call order
        self.emitted = 0
        # Decisions a human gave on this batch's calls (asked live, or passed in on resume).
        self.decided: dict[str, ApprovalDecision] = {}
        # Notes for the model by call id, put before the call's result or error.
        self._notes: dict[str, str] = {}
        # Retry events of calls run without a live queue, yielded before the end events.
        self._held: list[AgentEvent] = []

    def refuse(self, call_id: str, kind: ToolErrorKind, message: str) -> None:
        """Decide a call before it runs: it does not run, and the model reads ``message``."""
        for p in self.prepared:
            if p.call.id == call_id:
                p.outcome = error_outcome(p.call, kind, message)
                p.invalid = None  # no repair round for a call that will not run

    def annotate(self, call_id: str, note: str) -> None:
        """Put ``note`` before the result (or error) the model reads for the call."""
        self._notes[call_id] = note

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        """Admit the calls, run those admitted, and yield their lifecycle events."""
        if self._admission_needed():  # no async generator at all on the plain path
            async for event in self.admit(interactive=True):
                yield event
        run_id = self._ctx.run_id
        for p in self.prepared:
            self.outcomes[p.index] = p.outcome
        owed = [p for p in self.prepared if p.pending is None]
        self._order = [p.index for p in owed]
        ctx = self._ctx
        runtime = ctx.runtime
        for p in owed:
            yield ToolExecuteStartEvent(
                run_id=run_id,
                tool_call_id=p.call.id,
                tool_name=p.call.name,
                arguments=p.call.arguments,
                sandbox=None
                if runtime is None or p.tool is None
                else call_sandbox(runtime, p.tool.sandbox, ctx.sandbox),
            )
        runnable = [p for p in owed if p.outcome is None]
        if not runnable or (len(runnable) == 1 and self._cannot_stream(runnable[0])):
            for p in runnable:
                self.outcomes[p.index] = await self._run_alone(p)
            for event in self._held:
                yield event
            for index in self._order:
                yield self._end_event(index)
                self.emitted += 1
            return
        # Closed with this generator: an abort cancels the calls (within the grace window)
        # before the run goes on, not whenever the event loop finalizes the generator.
        async with aclosing(self._run_concurrently(runnable)) as live:
            async for event in live:
                yield event

    def _approval_stages(self) -> bool:
        """Whether any call may meet hooks, a repair or an approval (stages 2 to 5)."""
        # The governance check (stage 0) does not by itself call for the approval stages.
        return not self._executor.gate.unattended or any(
            p.tool is not None and p.tool.needs_approval is not False for p in self.prepared
        )

    def _admission_needed(self) -> bool:
        gate = self._executor.gate
        return (
            bool(self._decisions)
            or gate.governor is not None
            or gate.guard is not None
            or self._approval_stages()
        )

    async def admit(self, *, interactive: bool) -> AsyncGenerator[AgentEvent, None]:
        """Stages 2 (repair) to 5 of the gate, in call order; yields approval events.

        With ``interactive=False`` nobody is asked: a call needing approval stays pending.
        """
        gate = self._executor.gate
        check_approval = self._approval_stages()
        guard = gate.guard
        if not check_approval and not self._decisions and gate.governor is None and guard is None:
            return
        for p in self.prepared:
            if p.invalid is not None:
                await self._repair(p, p.invalid)
            if p.outcome is not None or p.tool is None:
                continue
            if gate.governor is not None and not await self._govern(gate.governor, p, p.tool):
                continue
            decided = self._decisions.get(p.call.id)
            if decided is not None:
                for event in self._apply_decision(p, decided, timed_out=False):
                    yield event
                continue
            if guard is not None:
                verdict = await guard.check(p.tool, p.call, _args_view(p), self._ctx)
                if verdict is not None:
                    async for event in self._guarded(p, p.tool, verdict, interactive=interactive):
                        yield event
                    if verdict.decision is not None:
                        continue
            if not check_approval:
                continue
            async for event in self._admit_one(p, p.tool, interactive=interactive):
                yield event

    async def _guarded(
        self, p: _Prepared, tool: Tool, verdict: GuardVerdict, *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        """Report the guard's finding; apply its refusal, or ask a human."""
        yield GovernanceEvent(run_id=self._ctx.run_id, signal=verdict.signal, data=verdict.data)
        match verdict.decision:
            case Deny(reason=reason, kind=kind):
                p.outcome = error_outcome(p.call, kind, reason)
            case Ask(reason=reason):
                async for event in self._request_approval(p, tool, reason, interactive=interactive):
                    yield event
            case None:
                pass

    async def _govern(self, governor: ToolGovernor, p: _Prepared, tool: Tool) -> bool:
        """Stage 0, the governance check; False when it decided the call."""
        decision = await governor.check(tool, p.call, _args_view(p), self._ctx)
        match decision:
            case None | Allow():
                return True
            case Deny(reason=reason, kind=kind):
                p.outcome = error_outcome(p.call, kind, reason)
            case Mock(result=result):
                p.mock = result
            case Ask(reason=reason):
                p.pending = ApprovalRequest(
                    tool_call_id=p.call.id,
                    tool_name=tool.name,
                    arguments=dict(_args_view(p)),
                    classification=tool.classification(),
                    reason=reason,
                    step=self._ctx.step,
                )
                self.pending.append(p.pending)
            case Rewrite():
                raise UserError("A tool governor cannot rewrite arguments; use a hook.")
        return False

    async def _admit_one(
        self, p: _Prepared, tool: Tool, *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        gate = self._executor.gate
        decision = None
        if gate.before_tool_call:
            decision = await gate.decide(
                ToolCallRequest(tool=tool, call=p.call, arguments=_args_view(p), ctx=self._ctx)
            )
            match decision:
                case Deny(reason=reason, kind=kind):  # approval_denied unless the hook says
                    p.outcome = error_outcome(p.call, kind, reason)
                    return
                case Mock(result=result):
                    p.mock = result
                    return
                case Allow():
                    return
                case Rewrite(arguments=arguments):
                    if not self._revalidate(p, tool, arguments):
                        return
                case Ask() | None:
                    pass
        if not isinstance(decision, Ask) and not await gate.needs_approval(tool, _args_view(p)):
            return
        reason = decision.reason if isinstance(decision, Ask) else None
        async for event in self._request_approval(p, tool, reason, interactive=interactive):
            yield event

    async def _request_approval(
        self, p: _Prepared, tool: Tool, reason: str | None, *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        """Stage 5: ask ``on_approval``, or leave the call pending (the run suspends)."""
        gate = self._executor.gate
        request = ApprovalRequest(
            tool_call_id=p.call.id,
            tool_name=tool.name,
            arguments=dict(_args_view(p)),
            classification=tool.classification(),
            reason=reason,
            step=self._ctx.step,
        )
        on_approval = gate.approval.on_approval
        asks = on_approval is not None and interactive
        if asks and self._hooks is not None:  # durable before anyone sees the question
            await self._hooks.before_approval(request)
        yield ToolApprovalRequestedEvent(
            run_id=self._ctx.run_id,
            tool_call_id=p.call.id,
            tool_name=tool.name,
            arguments=p.call.arguments,
            classification=request.classification,
            reason=request.reason,
        )
        if not asks:
            p.pending = request
            self.pending.append(request)
            return
        decided, timed_out = await self._ask(request)
        for event in self._apply_decision(p, decided, timed_out=timed_out):
            yield event

    async def _ask(self, request: ApprovalRequest) -> tuple[ApprovalDecision, bool]:
        approval = self._executor.gate.approval
        on_approval = approval.on_approval
        assert on_approval is not None  # checked by the caller

        async def ask() -> Any:
            answer = on_approval(request, self._ctx)
            if isinstance(answer, Awaitable):
                answer = await answer
            return answer

        try:
            answer = await within(self._executor.clock, approval.timeout, ask())
        except DeadlineExceeded:
            if approval.timeout_action == "raise":
                raise ApprovalTimeout(
                    f"No decision on the call to {request.tool_name!r} within {approval.timeout} s."
                ) from None
            granted = approval.timeout_action == "approve"
            reason = None if granted else f"No decision within {approval.timeout} s."
            return ApprovalDecision(
                tool_call_id=request.tool_call_id, granted=granted, reason=reason
            ), True
        if isinstance(answer, ApprovalDecision):
            return replace(answer, tool_call_id=request.tool_call_id), False
        return ApprovalDecision(tool_call_id=request.tool_call_id, granted=bool(answer)), False

    def _apply_decision(
        self, p: _Prepared, decision: ApprovalDecision, *, timed_out: bool
    ) -> list[AgentEvent]:
        self.decided[p.call.id] = decision
        event = ToolApprovalResolvedEvent(
            run_id=self._ctx.run_id,
            tool_call_id=p.call.id,
            tool_name=p.call.name,
            granted=decision.granted,
            reason=decision.reason,
            timed_out=timed_out,
        )
        if decision.result is not None:  # marked done by a human: the tool does not run
            p.mock = decision.result
        elif not decision.granted:
            reason = decision.reason or "A human denied the call."
            p.outcome = error_outcome(p.call, "approval_denied", f"Denied: {reason}")
        elif decision.arguments is not None and p.tool is not None:
            self._revalidate(p, p.tool, decision.arguments)
        return [event]

    def _revalidate(self, p: _Prepared, tool: Tool, arguments: Mapping[str, Any]) -> bool:
        call = replace(p.call, arguments=json.dumps(arguments, separators=(",", ":")))
        p.call = call
        try:
            p.args, p.kwargs = tool.validator.validate(call.arguments)
        except ToolArgumentsError as exc:
            p.outcome = error_outcome(call, "invalid_input", exc.for_model(tool.name))
            return False
        return True

    async def _repair(self, p: _Prepared, error: ToolArgumentsError) -> None:
        tool = p.tool
        repair = self._executor.gate.repair
        assert tool is not None  # only marked for known tools
        assert repair is not None  # ... when a repair hook exists
        p.invalid = None
        fixed = repair(p.call, error)
        if isinstance(fixed, Awaitable):
            fixed = await fixed
        if fixed is None:
            return
        arguments = fixed if isinstance(fixed, str) else json.dumps(fixed, separators=(",", ":"))
        call = replace(p.call, arguments=arguments)
        try:
            p.args, p.kwargs = tool.validator.validate(call.arguments)
        except ToolArgumentsError as exc:
            p.outcome = error_outcome(call, "invalid_input", exc.for_model(tool.name))
            return
        p.call, p.outcome = call, None

    @staticmethod
    def _cannot_stream(p: _Prepared) -> bool:
        tool = p.tool
        return tool is not None and tool.kind != "async_gen" and not tool.takes_ctx

    async def _run_alone(self, p: _Prepared) -> ToolOutcome:
        """Run a lone call that cannot stream, without the live-event machinery."""
        tool = p.tool
        if tool is None or tool.kind == "sync":
            # Awaited in the caller's task: a worker thread's future cancels at once.
            return await self.execute(p, None)
        # Driven in the caller's task (no task per call); a tool that ignores a
        # cancellation is given the grace window, then closed (see ``_Inline``).
        return await InlineCall(self.execute(p, None), self._executor.cancel_grace)

    async def _run_concurrently(
        self, runnable: list[_Prepared]
    ) -> AsyncGenerator[AgentEvent, None]:
        counters = self._executor.audit.counters
        queue = ProgressQueue(
            self._executor.event_queue_depth,
            on_drop=lambda _: counters.incr("tool.streaming.dropped.total"),
        )
        order = self._order
        # A call's end event may go out only after its completion marker came through the
        # queue, so every progress event it queued before finishing is yielded first.
        ready = {index: self.outcomes[index] is not None for index in order}
        runner = asyncio.create_task(self._run_groups(runnable, queue))
        try:
            while True:
                while self.emitted < len(order) and ready[order[self.emitted]]:
                    yield self._end_event(order[self.emitted])
                    self.emitted += 1
                if self.emitted == len(order):
                    break
                item = await queue.get()
                if isinstance(item, int):
                    ready[item] = True
                else:
                    yield item
            await runner
        finally:
            if not runner.done():
                runner.cancel()
                # Tools that ignore cancellation are abandoned after the grace window (in
                # real time: it bounds a hung tool); their calls end as ``aborted``.
                await asyncio.wait({runner}, timeout=self._executor.cancel_grace)
                if not runner.done():
                    abandon(runner)

    async def _run_groups(self, runnable: list[_Prepared], queue: ProgressQueue) -> None:
        limit = asyncio.Semaphore(self._executor.max_parallel)

        async def run(p: _Prepared) -> None:
            async with limit:
                self.outcomes[p.index] = await self.execute(p, queue)
            queue.put_nowait(p.index)

        group: list[_Prepared] = []
        for p in runnable:
            if p.tool is not None and p.tool.execution_mode == "sequential":
                await self._run_group(group, run)
                group = []
                await run(p)
            else:
                group.append(p)
        await self._run_group(group, run)

    @staticmethod
    async def _run_group(
        group: list[_Prepared], run: Callable[[_Prepared], Coroutine[Any, Any, None]]
    ) -> None:
        if len(group) == 1:
            await run(group[0])
        elif group:
            async with asyncio.TaskGroup() as tg:
                for p in group:
                    tg.create_task(run(p))

    def unreported(self) -> list[tuple[ToolCall, ToolOutcome | None]]:
        """Calls whose end event was not emitted (the batch was interrupted), in call order.

        A call without an outcome did not finish.
        """
        order = self._order  # empty while admitting: no call has started yet
        return [(self.prepared[i].call, self.outcomes[i]) for i in order[self.emitted :]]

    def _end_event(self, index: int) -> AgentEvent:
        """The end of a call; for a call that stopped to ask, the question instead."""
        outcome = self.outcomes[index]
        assert outcome is not None  # the caller waited for it
        request = self.prepared[index].pending
        if request is not None:
            return ToolApprovalRequestedEvent(
                run_id=self._ctx.run_id,
                tool_call_id=request.tool_call_id,
                tool_name=request.tool_name,
                arguments=outcome.call.arguments,
                classification=request.classification,
                reason=request.reason,
            )
        if self._notes and (note := self._notes.get(outcome.call.id)) is not None:
            outcome.content = f"{note}\n\n{outcome.content}"
        self._executor.record(outcome, self._ctx)
        return end_event(outcome, self._ctx.run_id)

    async def execute(self, p: _Prepared, queue: ProgressQueue | None) -> ToolOutcome:
        """Run one admitted call and process its result (then account it, under governance)."""
        vault = self._executor.vault
        guard = self._executor.memory_guard
        assert p.tool is not None  # only runnable calls get here
        before = guard.snapshot(self._ctx) if guard is not None and guard.covers(p.tool) else None
        if vault is None:
            outcome = await self._execute(p, queue)
        else:
            outcome = await self._execute_with_secrets(vault, p, queue)
        if before is not None:
            assert guard is not None
            outcome = self._verify_memory(guard, before, outcome)
        governor = self._executor.gate.governor
        if governor is not None and p.pending is None:  # a call that asked runs again later
            assert p.tool is not None  # only runnable calls get here
            await governor.record(p.tool, outcome.call, outcome.content, self._ctx)
        return outcome

    def _verify_memory(
        self, guard: MemoryGuard, before: dict[str, object], outcome: ToolOutcome
    ) -> ToolOutcome:
        """Count and record the regions a call changed; withhold its result on ``fail``."""
        changed = guard.changed(before, self._ctx)
        if not changed:
            return outcome
        name = outcome.call.name
        counters = self._executor.audit.counters
        for region in changed:
            counters.incr("tool.executor.memory_guard.mismatch.total", tier=region, tool=name)
        if guard.on_mismatch == "audit" or outcome.is_error:
            return replace(outcome, memory_changed=changed)
        regions = ", ".join(map(repr, changed))
        return replace(
            outcome,
            content=f"Tool {name!r} declares no side effects but changed memory ({regions}); "
            "its result was withheld.",
            is_error=True,
            error_kind="sandbox_violation",
            memory_changed=changed,
        )

    async def _execute_with_secrets(
        self, vault: Vault, p: _Prepared, queue: ProgressQueue | None
    ) -> ToolOutcome:
        """Run the call in its secret scope; redact every revealed value from the outcome."""
        assert p.tool is not None  # only runnable calls get here
        scope = SecretScope(
            vault=vault, tool=p.tool.name, allowed=frozenset(p.tool.secrets_allowed)
        )
        with scope.active():
            outcome = await self._execute(p, queue)
        redacted = vault.redact(outcome.content)
        metadata = vault.redact_within(outcome.metadata)
        if not scope.used and redacted is outcome.content and metadata is outcome.metadata:
            return outcome
        return replace(outcome, content=redacted, metadata=metadata, secrets_used=tuple(scope.used))

    def _scrubbed(self, event: LiveEvent) -> LiveEvent:
        """A live event of a call with every value the vault revealed redacted."""
        vault = self._executor.vault
        return event if vault is None else vault.redact_within(event)

    async def _execute(self, p: _Prepared, queue: ProgressQueue | None) -> ToolOutcome:
        tool = p.tool
        assert tool is not None  # only runnable calls get here
        executor = self._executor
        clock = executor.clock
        started = clock.monotonic()
        call = p.call
        hooks = self._hooks
        cache_key: CacheKey | None = None
        idempotency: str | None = None
        try:
            skip = await hooks.before(tool, call, _args_view(p)) if hooks is not None else None
            hit = None
            if skip is not None:
                value: Any = skip.result
            elif p.mock is not _NO_MOCK:
                value = p.mock
            else:
                if tool.cache_ttl:
                    cache_key = executor.cache.key(tool, _args_view(p), self._ctx)
                    if cache_key is not None:
                        hit = executor.cache.get(tool, cache_key)
                if hit is None:
                    key = tool.idempotency_key
                    idempotency = key(dict(_args_view(p))) if key is not None else None
                    try:
                        value = await self._invoke(tool, p, queue, idempotency)
                    except Exception as error:  # a rate limit may be retried
                        value = await self._retry(tool, p, queue, idempotency, error)
                else:
                    value = ToolResult(
                        output=hit.content, metadata=dict(hit.metadata), untrusted=hit.untrusted
                    )
            result = value if isinstance(value, ToolResult) else None
            content = render_output(value if result is None else result.output)
            outcome = await self._finish(tool, call, content, result, started)
            outcome.cached = hit is not None
            outcome.idempotency_key = idempotency
            if cache_key is not None and hit is None and not outcome.is_error:  # successes only
                kept = result if result is not None else ToolResult(output=None)
                executor.cache.put(cache_key, content, kept.metadata, untrusted=kept.untrusted)
            return outcome
        except ToolError as exc:  # the tool's own error result, told as it is
            return ToolOutcome(
                call=call,
                content=exc.message,
                is_error=True,
                error_kind=exc.kind,
                duration=clock.monotonic() - started,
                metadata=exc.metadata,
                untrusted=exc.untrusted,
                spent=tuple(exc.usage.items()),
                idempotency_key=idempotency,
            )
        except InputRequired as exc:  # the call waits for a person's answer: the run suspends
            return self._asked(p, tool, exc.request, clock.monotonic() - started)
        except DeadlineExceeded:
            return error_outcome(
                call,
                "timeout",
                f"Tool {tool.name!r} timed out after {tool.timeout} s.",
                clock.monotonic() - started,
            )
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # the batch is being cancelled (an abort): let it through
            # The tool raised CancelledError itself: a failure like any other.
            return failed_outcome(tool, call, exc, clock.monotonic() - started)
        except Exception as exc:  # a tool failure is a value for the model, not a crash
            return failed_outcome(tool, call, exc, clock.monotonic() - started)

    def _asked(
        self, p: _Prepared, tool: Tool, question: InputRequest, duration: float
    ) -> ToolOutcome:
        """Leave a call that asked a question pending; its outcome is never reported.

        Where nobody can suspend (``run_one``), the outcome is what the caller reads.
        """
        asker = question.source or f"tool {tool.name!r}"
        p.pending = ApprovalRequest(
            tool_call_id=p.call.id,
            tool_name=tool.name,
            arguments=dict(_args_view(p)),
            classification=tool.classification(),
            reason=f"{asker} asks: {question.message}",
            step=self._ctx.step,
            input=question,
        )
        self.pending.append(p.pending)
        return error_outcome(
            p.call,
            "approval_denied",
            f"Tool {tool.name!r} stopped to ask a person ({asker} asks: {question.message}); "
            "nobody can answer here.",
            duration,
        )

    async def _finish(
        self, tool: Tool, call: ToolCall, content: str, result: ToolResult | None, started: float
    ) -> ToolOutcome:
        """The after hook and the result processors; ``started`` is when the call began."""
        clock = self._executor.clock
        if self._hooks is not None:
            content = await self._hooks.after(tool, call, content)
        chain = self._executor.chain(tool)
        if chain and _needed(chain, tool, content):
            envelope = ResultEnvelope(tool=tool, call=call, content=content)
            if result is not None:
                envelope.metadata = result.metadata
                envelope.untrusted = result.untrusted
            outcome = await _process(chain, envelope, self._ctx, clock.monotonic() - started)
        else:
            outcome = ToolOutcome(call=call, content=content, duration=clock.monotonic() - started)
            if result is not None:
                outcome.metadata = result.metadata
                outcome.untrusted = result.untrusted
        if result is not None and (result.promote_tools or result.usage):
            outcome.promote_tools = tuple(result.promote_tools)
            outcome.spent += tuple(result.usage.items())
        return outcome

    async def _retry(
        self,
        tool: Tool,
        p: _Prepared,
        queue: ProgressQueue | None,
        idempotency: str | None,
        error: Exception,
    ) -> Any:
        """Run a failed call again while it is rate-limited and may safely run again.

        Re-raises ``error`` (or the last attempt's) when it is not to be retried.
        """
        executor = self._executor
        retry = executor.retry
        if retry is None or not retries_safely(tool):
            raise error

        def retrying(attempt: int, delay: float, failure: BaseException) -> None:
            event = ToolRetryEvent(
                run_id=self._ctx.run_id,
                seq=0,  # numbered when yielded
                tool_call_id=p.call.id,
                tool_name=tool.name,
                attempt=attempt,
                delay=delay,
                error=f"{type(failure).__name__}: {failure}",
            )
            scrubbed = self._scrubbed(event)
            if queue is not None:
                queue.put_nowait(scrubbed)
            else:
                self._held.append(scrubbed)

        def again() -> Awaitable[Any]:
            return self._invoke(tool, p, queue, idempotency)

        return await retry_after_failure(retry, executor.clock, error, again, retrying)

    def _invoke(
        self, tool: Tool, p: _Prepared, queue: ProgressQueue | None, idempotency: str | None
    ) -> Awaitable[Any]:
        args = p.args
        sink: ProgressSink | None = None
        if tool.takes_ctx or tool.kind == "async_gen":
            vault = self._executor.vault
            scrub = self._scrubbed if vault is not None else None
            sink = ProgressSink(queue, self._ctx.run_id, p.call.id, scrub, vault)
            if tool.takes_ctx:
                decided = self.decided.get(p.call.id)
                ctx = self._ctx.for_tool_call(
                    p.call.id,
                    tool.name,
                    sink,
                    idempotency,
                    sandbox=tool.sandbox,
                    input_answer=decided.answer if decided is not None else None,
                )
                args = (ctx, *args)
        return invoke(tool, args, p.kwargs, sink, self._executor.clock)


def _needed(chain: tuple[ResultProcessor, ...], tool: Tool, content: str) -> bool:
    for processor in chain:  # noqa: SIM110 - a loop, not any(<genexpr>): it runs per result
        if processor.needs(tool, content):
            return True
    return False


async def _process(
    chain: tuple[ResultProcessor, ...],
    envelope: ResultEnvelope,
    ctx: RunContext[Any],
    duration: float,
) -> ToolOutcome:
    """Pass a result through the processors; ``duration`` is the tool's own run time."""
    for processor in chain:
        await processor.process(envelope, ctx)
        if envelope.error_kind is not None:
            break
    return ToolOutcome(
        call=envelope.call,
        content=envelope.content,
        is_error=envelope.error_kind is not None,
        error_kind=envelope.error_kind,
        duration=duration,
        metadata=envelope.metadata,
        provenance=_provenance(envelope.metadata),
        untrusted=envelope.untrusted,
        truncation=envelope.truncation,
        sanitization_hits=envelope.sanitization_hits,
        spent=tuple(envelope.spent),
        sanitization_policy=envelope.sanitization_policy,
        original_tokens=envelope.original_tokens,
        result_handle=envelope.result_handle,
    )


def _args_view(p: _Prepared) -> Mapping[str, Any]:
    if p.kwargs:
        return p.kwargs
    if p.args:
        first = p.args[0]
        if isinstance(first, dict):
            return first  # type: ignore[return-value]  # raw JSON-schema tools get a dict
        dump = getattr(first, "model_dump", None)
        if dump is not None:
            return dump()
    return {}


def _provenance(metadata: dict[str, Any]) -> Provenance | None:
    """The provenance label a processor put in the result's metadata, taken out of it."""
    label = metadata.pop(PROVENANCE, None)
    return label if isinstance(label, Provenance) else None
