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

The pieces: ``_prepared.py`` (stages 1 and 2, the call's state), ``_admission.py`` (the
later stages and approvals), ``_call_runner.py`` (one call and its result), ``_schedule.py``
(parallelism, sequential tools, cancellation); the batch orders their events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from bastion.core import (
    AgentEvent,
    Clock,
    RunContext,
    ToolApprovalRequestedEvent,
    ToolCall,
    ToolErrorKind,
    ToolExecuteStartEvent,
    call_sandbox,
)
from bastion.observability import AuditRecord, ToolAudit
from bastion.security import Vault

from ._admission import Admission, ApprovalTimeout
from ._cache import ToolCache
from ._call_runner import CallRunner
from ._gate import ApprovalDecision, ApprovalRequest, ToolGate
from ._invoke import DEFAULT_EVENT_QUEUE_DEPTH, ProgressQueue
from ._memory_guard import MemoryGuard
from ._outcome import SkipTool, ToolOutcome, end_event, error_outcome
from ._pipeline import ResultProcessor
from ._prepared import BatchScope, PreparedCall, ToolCallHooks, prepare_call
from ._retry import ToolRetry
from ._schedule import cannot_stream, run_alone, run_groups, stop
from ._tool import Tool

__all__ = [
    "ApprovalTimeout",
    "SkipTool",
    "ToolBatch",
    "ToolCallHooks",
    "ToolExecutor",
    "ToolOutcome",
    "end_event",
]


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
        prepared = [prepare_call(i, call, known, self.gate) for i, call in enumerate(calls)]
        return ToolBatch(self, prepared, ctx, hooks, decisions or {})

    async def run_one(
        self, call: ToolCall, ctx: RunContext[Any], *, allow_approval: bool = False
    ) -> ToolOutcome:
        """Run one call through the gate and the result processors, without events.

        Used by tools that call other tools (code mode). A call that would need a human
        decision is refused (``approval_denied``) unless ``allow_approval``.
        """
        batch = ToolBatch(self, [prepare_call(0, call, self.tools, self.gate)], ctx, None, {})
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
        twin = self._twin(gate, self.clock, self.cache)
        twin._chains = self._chains
        return twin

    def on_clock(self, clock: Clock) -> ToolExecutor:
        """An executor like this one on another clock, with a result cache of its own."""
        return self._twin(self.gate, clock, None)

    def _twin(self, gate: ToolGate, clock: Clock, cache: ToolCache | None) -> ToolExecutor:
        twin = ToolExecutor(
            self.tools,
            max_parallel=self.max_parallel,
            clock=clock,
            gate=gate,
            processors=self.processors,
            audit=self.audit,
            cancel_grace=self.cancel_grace,
            cache=cache,
            event_queue_depth=self.event_queue_depth,
            retry=self.retry,
            memory_guard=self.memory_guard,
        )
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


class ToolBatch:
    """The calls of one step. Iterate :meth:`events`; then read :attr:`outcomes`.

    After an interruption (abort), calls that did not finish have no outcome (``None``).
    Calls waiting for a human decision are in :attr:`pending`; they have no outcome.
    """

    def __init__(
        self,
        executor: ToolExecutor,
        prepared: list[PreparedCall],
        ctx: RunContext[Any],
        hooks: ToolCallHooks | None,
        decisions: Mapping[str, ApprovalDecision],
    ) -> None:
        self._executor = executor
        self.prepared = prepared
        self._ctx = ctx
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
        scope = BatchScope(ctx=ctx, hooks=hooks, pending=self.pending, decided=self.decided)
        self._admission = Admission(
            gate=executor.gate, clock=executor.clock, scope=scope, decisions=decisions
        )
        self._runner = CallRunner(executor=executor, scope=scope, held=self._held)

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
        if self._admission.needed(self.prepared):  # no async generator on the plain path
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
        if not runnable or (len(runnable) == 1 and cannot_stream(runnable[0])):
            grace = self._executor.cancel_grace
            for p in runnable:
                self.outcomes[p.index] = await run_alone(p, self._runner, grace)
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

    def admit(self, *, interactive: bool) -> AsyncGenerator[AgentEvent, None]:
        """Stages 2 (repair) to 5 of the gate, in call order; yields approval events.

        With ``interactive=False`` nobody is asked: a call needing approval stays pending.
        """
        return self._admission.admit(self.prepared, interactive=interactive)

    async def execute(self, p: PreparedCall, queue: ProgressQueue | None) -> ToolOutcome:
        """Run one admitted call and process its result (then account it, under governance)."""
        return await self._runner.execute(p, queue)

    async def _run_concurrently(
        self, runnable: list[PreparedCall]
    ) -> AsyncGenerator[AgentEvent, None]:
        executor = self._executor
        counters = executor.audit.counters
        queue = ProgressQueue(
            executor.event_queue_depth,
            on_drop=lambda _: counters.incr("tool.streaming.dropped.total"),
        )
        order = self._order
        # A call's end event may go out only after its completion marker came through the
        # queue, so every progress event it queued before finishing is yielded first.
        ready = {index: self.outcomes[index] is not None for index in order}
        runner = asyncio.create_task(
            run_groups(runnable, self._runner, queue, self.outcomes, executor.max_parallel)
        )
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
            await stop(runner, executor.cancel_grace)

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
