"""Running one admitted tool call and turning what it produced into a :class:`ToolOutcome`.

In order: the ``before`` hook (it may skip the tool), a mock, the results cache, the call
itself (retried while rate-limited when the tool may safely run again), the ``after`` hook
and the result processors. Around it: the secret scope of a run with a vault (revealed
values are redacted from the outcome), the memory guard, and the governor's accounting.
A tool's failure, timeout or question becomes an outcome; only an abort goes through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Any

from bastion.core import AgentEvent, RunContext, ToolCall, ToolRetryEvent
from bastion.security import PROVENANCE, Provenance, SecretScope, Vault

from ._cache import CacheKey
from ._input import InputRequest, InputRequired
from ._invoke import DeadlineExceeded, LiveEvent, ProgressQueue, ProgressSink, invoke
from ._memory_guard import MemoryGuard
from ._outcome import ToolError, ToolOutcome, error_outcome, failed_outcome
from ._pipeline import ResultEnvelope, ResultProcessor
from ._prepared import NO_MOCK, BatchScope, ExecutorView, PreparedCall, approval_request, args_view
from ._result import render_output
from ._retry import retries_safely, retry_after_failure
from ._tool import Tool, ToolResult

__all__ = ["CallRunner"]


@dataclass(frozen=True, slots=True)
class CallRunner:
    """Runs the admitted calls of one batch, one at a time or side by side.

    A call that stopped to ask a person leaves its request in the scope's ``pending``;
    one that asked before reads the answer from its ``decided``.

    Attributes:
        executor: The executor's settings (read when a call runs).
        scope: What the batch's parts share.
        held: Where retry events of calls run without a live queue wait to be yielded.
    """

    executor: ExecutorView
    scope: BatchScope
    held: list[AgentEvent]

    async def execute(self, p: PreparedCall, queue: ProgressQueue | None) -> ToolOutcome:
        """Run one admitted call and process its result (then account it, under governance).

        Args:
            p: The call.
            queue: Where its live events go (``None``: a lone call, no live events).
        """
        vault = self.executor.vault
        guard = self.executor.memory_guard
        assert p.tool is not None  # only runnable calls get here
        before = (
            guard.snapshot(self.scope.ctx) if guard is not None and guard.covers(p.tool) else None
        )
        if vault is None:
            outcome = await self._execute(p, queue)
        else:
            outcome = await self._execute_with_secrets(vault, p, queue)
        if before is not None:
            assert guard is not None
            outcome = self._verify_memory(guard, before, outcome)
        governor = self.executor.gate.governor
        if governor is not None and p.pending is None:  # a call that asked runs again later
            assert p.tool is not None  # only runnable calls get here
            await governor.record(p.tool, outcome.call, outcome.content, self.scope.ctx)
        return outcome

    def _verify_memory(
        self, guard: MemoryGuard, before: dict[str, object], outcome: ToolOutcome
    ) -> ToolOutcome:
        """Count and record the regions a call changed; withhold its result on ``fail``."""
        changed = guard.changed(before, self.scope.ctx)
        if not changed:
            return outcome
        name = outcome.call.name
        counters = self.executor.audit.counters
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
        self, vault: Vault, p: PreparedCall, queue: ProgressQueue | None
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

    def scrubbed(self, event: LiveEvent) -> LiveEvent:
        """A live event of a call with every value the vault revealed redacted."""
        vault = self.executor.vault
        return event if vault is None else vault.redact_within(event)

    async def _execute(self, p: PreparedCall, queue: ProgressQueue | None) -> ToolOutcome:
        tool = p.tool
        assert tool is not None  # only runnable calls get here
        executor = self.executor
        clock = executor.clock
        started = clock.monotonic()
        call = p.call
        hooks = self.scope.hooks
        cache_key: CacheKey | None = None
        idempotency: str | None = None
        try:
            skip = await hooks.before(tool, call, args_view(p)) if hooks is not None else None
            hit = None
            if skip is not None:
                value: object = skip.result
            elif p.mock is not NO_MOCK:
                value = p.mock
            else:
                if tool.cache_ttl:
                    cache_key = executor.cache.key(tool, args_view(p), self.scope.ctx)
                    if cache_key is not None:
                        hit = executor.cache.get(tool, cache_key)
                if hit is None:
                    key = tool.idempotency_key
                    idempotency = key(dict(args_view(p))) if key is not None else None
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
        self, p: PreparedCall, tool: Tool, question: InputRequest, duration: float
    ) -> ToolOutcome:
        """Leave a call that asked a question pending; its outcome is never reported.

        Where nobody can suspend (``run_one``), the outcome is what the caller reads.
        """
        asker = question.source or f"tool {tool.name!r}"
        reason = f"{asker} asks: {question.message}"
        p.pending = approval_request(p, tool, reason, self.scope.ctx.step, question)
        self.scope.pending.append(p.pending)
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
        clock = self.executor.clock
        if self.scope.hooks is not None:
            content = await self.scope.hooks.after(tool, call, content)
        chain = self.executor.chain(tool)
        if chain and _needed(chain, tool, content):
            envelope = ResultEnvelope(tool=tool, call=call, content=content)
            if result is not None:
                envelope.metadata = result.metadata
                envelope.untrusted = result.untrusted
            outcome = await _process(chain, envelope, self.scope.ctx, clock.monotonic() - started)
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
        p: PreparedCall,
        queue: ProgressQueue | None,
        idempotency: str | None,
        error: Exception,
    ) -> object:
        """Run a failed call again while it is rate-limited and may safely run again.

        Re-raises ``error`` (or the last attempt's) when it is not to be retried.
        """
        executor = self.executor
        retry = executor.retry
        if retry is None or not retries_safely(tool):
            raise error

        def retrying(attempt: int, delay: float, failure: BaseException) -> None:
            event = ToolRetryEvent(
                run_id=self.scope.ctx.run_id,
                seq=0,  # numbered when yielded
                tool_call_id=p.call.id,
                tool_name=tool.name,
                attempt=attempt,
                delay=delay,
                error=f"{type(failure).__name__}: {failure}",
            )
            scrubbed = self.scrubbed(event)
            if queue is not None:
                queue.put_nowait(scrubbed)
            else:
                self.held.append(scrubbed)

        def again() -> Awaitable[object]:
            return self._invoke(tool, p, queue, idempotency)

        return await retry_after_failure(retry, executor.clock, error, again, retrying)

    def _invoke(
        self, tool: Tool, p: PreparedCall, queue: ProgressQueue | None, idempotency: str | None
    ) -> Awaitable[object]:
        args = p.args
        sink: ProgressSink | None = None
        if tool.takes_ctx or tool.kind == "async_gen":
            vault = self.executor.vault
            scrub = self.scrubbed if vault is not None else None
            sink = ProgressSink(queue, self.scope.ctx.run_id, p.call.id, scrub, vault)
            if tool.takes_ctx:
                decided = self.scope.decided.get(p.call.id)
                ctx = self.scope.ctx.for_tool_call(
                    p.call.id,
                    tool.name,
                    sink,
                    idempotency,
                    sandbox=tool.sandbox,
                    input_answer=decided.answer if decided is not None else None,
                )
                args = (ctx, *args)
        return invoke(tool, args, p.kwargs, sink, self.executor.clock)


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


def _provenance(metadata: dict[str, object]) -> Provenance | None:
    """The provenance label a processor put in the result's metadata, taken out of it."""
    label = metadata.pop(PROVENANCE, None)
    return label if isinstance(label, Provenance) else None
