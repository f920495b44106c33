"""Call model: stream one model call into events, with retries and fallback models.

Transient errors are retried with backoff (``RetryConfig``); the errors of the agent's
``FallbackPolicy`` (by default rate-limit, capacity and context-length errors) then move
the step to the next fallback model with an ``agent.model.fellback`` event.
The policy's circuit breaker skips models that keep failing (``agent.model.circuit`` when a
circuit opens or closes). A stream that already emitted events is never restarted: its
error fails the step. Under governance each attempt is an action on
``llm:<provider>:<model>``: checked before it is sent, counted after (``_govern.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bastion.agent._fallback import CircuitBreaker
from bastion.agent._hooks import maybe_await
from bastion.agent._scope import RunAborted, RunScope
from bastion.agent.steps._govern import substitute_response
from bastion.core import (
    AgentEvent,
    CircuitOpen,
    Model,
    ModelCircuitEvent,
    ModelFellbackEvent,
    ModelRequest,
    ModelResponse,
    ModelRetryEvent,
    ReasoningChunk,
    ReasoningDeltaEvent,
    ResponseAssembler,
    SensitivityRefused,
    StreamChunk,
    TextChunk,
    TextCompleteEvent,
    TextDeltaEvent,
    ToolCallDeltaChunk,
    ToolCallDeltaEvent,
    ToolCallEndChunk,
    ToolCallEndEvent,
    ToolCallStartChunk,
    ToolCallStartEvent,
    ToolMessage,
)

__all__ = ["ModelCall"]


class ModelCall:
    """One step's model call. Iterate :meth:`events`, then read :attr:`response`."""

    __slots__ = ("_models", "_request", "_scope", "chunks", "model", "response")

    def __init__(self, scope: RunScope, request: ModelRequest, model: Model) -> None:
        self._scope = scope
        self._request = request
        self.response: ModelResponse | None = None
        self.model = model
        # The answer's chunks as the provider sent them, kept when the run records them.
        journal = scope.journal
        self.chunks: list[StreamChunk] | None = (
            [] if journal is not None and journal.recording else None
        )
        config = scope.config
        if model is scope.pinned_model:  # named explicitly: never swapped for a fallback
            self._models: tuple[Model, ...] = (model,)
        elif model is config.model:
            self._models = config.models
        else:
            self._models = (model, *(m for m in config.models[1:] if m is not model))

    async def events(self) -> AsyncIterator[AgentEvent]:
        """Stream the call, retrying and falling back as configured.

        One generator on purpose: every text delta passes through it, and each nested
        async generator would add a frame to that path.
        """
        scope = self._scope
        run_id, check_abort, quiet = scope.run_id, scope.check_abort, scope.quiet
        governance = scope.governance
        breaker = scope.config.fallback_policy.circuit_breaker
        for index, model in enumerate(self._models):
            self.model = model
            if breaker is not None and not breaker.allow(model.key):
                skipped = self._skip(index, breaker)  # raises CircuitOpen on the last model
                yield skipped
                await self._fell_back(skipped)
                continue
            attempt = 0
            while True:
                if governance is not None:  # a limit is checked before anything is sent
                    checked, answered = await self._checked(model)
                    for event in checked:
                        yield event
                    if answered:  # an interrupt decision gave the answer
                        return
                assembler = ResponseAssembler(model.key)
                add = assembler.add
                names: dict[str, str] = {}
                emitted = False
                chunks = model.stream(self._request)
                kept = self.chunks
                if kept is not None:
                    kept.clear()  # a retried or fallen-back call records its last attempt
                try:
                    if len(model.accepts_sensitivity) < 3:
                        _check_sensitivity(model, self._request)  # before anything is sent
                    try:
                        async for chunk in chunks:
                            add(chunk)
                            if kept is not None:
                                kept.append(chunk)
                            if quiet:  # nobody reads the deltas: assemble only
                                emitted = emitted or _shown(chunk)
                                check_abort()
                                continue
                            if isinstance(chunk, TextChunk):  # the hot path stays in line
                                event: AgentEvent = TextDeltaEvent(run_id=run_id, delta=chunk.text)
                            else:
                                other = _other_event(chunk, run_id, names, assembler)
                                if other is None:
                                    continue
                                event = other
                            emitted = True
                            yield event
                            check_abort()
                    except BaseException:
                        await chunks.aclose()  # end the provider's stream (its connection) now
                        raise
                except (RunAborted, asyncio.CancelledError):
                    if breaker is not None:
                        breaker.release(model.key)  # an abort gives a claimed probe back
                    raise
                except Exception as error:
                    failed = await self._failed(error, index, attempt, emitted=emitted)
                    for event in failed.events:
                        yield event
                    if failed.delay is not None:  # retried on the same model
                        attempt += 1
                        await scope.clock.sleep(failed.delay)
                        check_abort()
                        continue
                    if failed.fell_back is not None:  # the next model takes the step
                        await self._fell_back(failed.fell_back)
                        break
                    raise
                self.response = assembler.response()
                for event in await self._succeeded(model, self.response):
                    yield event
                return

    async def _checked(self, model: Model) -> tuple[list[AgentEvent], bool]:
        """Governance's check of the call: its signals, and whether a decision answered it."""
        scope = self._scope
        governance = scope.governance
        assert governance is not None  # only asked under governance
        substitute = await governance.check_model(model, self._request)
        events: list[AgentEvent] = list(governance.drain(scope.run_id))
        if substitute is None:
            return events, False
        self.chunks = None  # no provider answered: nothing to record
        self.response = substitute_response(model, substitute.value)
        events.append(TextCompleteEvent(run_id=scope.run_id, text=self.response.message.text))
        return events, True

    async def _failed(
        self, error: Exception, index: int, attempt: int, *, emitted: bool
    ) -> _Failure:
        """What a failed attempt on model ``index`` leads to: a retry, a fallback, or none."""
        scope = self._scope
        run_id = scope.run_id
        model = self._models[index]
        events: list[AgentEvent] = []
        if scope.governance is not None:  # a failed call counts as a call
            await scope.governance.record_model(model, None)
            events.extend(scope.governance.drain(run_id))
        policy = scope.config.fallback_policy
        breaker = policy.circuit_breaker
        tripped = False
        if breaker is not None:
            if breaker.counts_as_failure(error):
                tripped = breaker.record_failure(model.key, error)
                if tripped:
                    events.append(self._circuit(model, breaker, error))
            else:  # about the request, not the model's health
                breaker.release(model.key)
        retry = scope.config.retry
        if emitted:  # a stream that produced events is never restarted
            return _Failure(events)
        if (
            not tripped
            and retry is not None
            and attempt < retry.max_retries
            and retry.retryable(error)
        ):
            delay = retry.delay(attempt, error)
            retried = ModelRetryEvent(
                run_id=run_id,
                model=model.key,
                attempt=attempt + 1,
                delay=delay,
                error=_describe(error),
            )
            return _Failure([*events, retried], delay=delay)
        if (tripped or policy.moves_on(error)) and index + 1 < len(self._models):
            fell_back = ModelFellbackEvent(
                run_id=run_id,
                previous_model=model.key,
                next_model=self._models[index + 1].key,
                error=_describe(error),
            )
            return _Failure([*events, fell_back], fell_back=fell_back)
        return _Failure(events)

    async def _succeeded(self, model: Model, response: ModelResponse) -> list[AgentEvent]:
        """The events after a call that answered: circuit closed, governance, the text."""
        scope = self._scope
        run_id = scope.run_id
        events: list[AgentEvent] = []
        breaker = scope.config.fallback_policy.circuit_breaker
        if breaker is not None and breaker.record_success(model.key):
            events.append(ModelCircuitEvent(run_id=run_id, model=model.key, state="closed"))
        if scope.governance is not None:
            await scope.governance.record_model(model, response.usage)
            events.extend(scope.governance.drain(run_id))
        if not scope.quiet and any(p.type == "text" for p in response.message.parts):
            events.append(TextCompleteEvent(run_id=run_id, text=response.message.text))
        return events

    def _skip(self, index: int, breaker: CircuitBreaker) -> ModelFellbackEvent:
        """The event that skips the open model at ``index``; CircuitOpen if none is left."""
        models = self._models
        model = models[index]
        if index + 1 < len(models):
            scope = self._scope
            return ModelFellbackEvent(
                run_id=scope.run_id,
                previous_model=model.key,
                next_model=models[index + 1].key,
                error=f"circuit open for {breaker.retry_in(model.key):.3g} s more",
                reason="circuit_open",
            )
        waits = {m.key: breaker.retry_in(m.key) for m in models}
        listed = ", ".join(f"{key!r} ({wait:.3g} s)" for key, wait in waits.items())
        raise CircuitOpen(
            f"Every model of this step has an open circuit breaker after repeated failures: "
            f"{listed}. Each is probed again after its cool-down; add a fallback model, or "
            "raise CircuitBreaker(failure_threshold=...) to trip less readily.",
            retry_after=min(waits.values()),
        )

    def _circuit(
        self, model: Model, breaker: CircuitBreaker, error: BaseException
    ) -> ModelCircuitEvent:
        scope = self._scope
        return ModelCircuitEvent(
            run_id=scope.run_id,
            model=model.key,
            state="open",
            failures=breaker.failures(model.key),
            cool_down=breaker.cool_down,
            error=_describe(error),
        )

    async def _fell_back(self, event: ModelFellbackEvent) -> None:
        hook = self._scope.config.fallback_policy.on_fallback
        if hook is not None:
            await maybe_await(hook(event))


_TIERS = ("public", "internal", "secret")


def _check_sensitivity(model: Model, request: ModelRequest) -> None:
    """Refuse a model that may not see the most sensitive data in the request."""
    highest = 0
    for message in request.messages:
        if isinstance(message, ToolMessage):
            highest = max(highest, _TIERS.index(message.sensitivity))
    tier = _TIERS[highest]
    if tier not in model.accepts_sensitivity:
        accepted = ", ".join(repr(t) for t in model.accepts_sensitivity)
        raise SensitivityRefused(
            f"{model.key} does not accept {tier!r} data (it accepts {accepted}), and the "
            f"conversation holds {tier!r} tool output. Add a fallback model that accepts it."
        )


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _shown(chunk: object) -> bool:
    """Whether a chunk would have been streamed as an event (the consumer saw output)."""
    if isinstance(chunk, ReasoningChunk):
        return bool(chunk.text)
    return isinstance(chunk, (TextChunk, ToolCallStartChunk, ToolCallDeltaChunk, ToolCallEndChunk))


@dataclass(frozen=True, slots=True)
class _Failure:
    """A failed attempt's events, then: retry after ``delay``, or fall back, or neither."""

    events: list[AgentEvent]
    delay: float | None = None
    fell_back: ModelFellbackEvent | None = None


def _other_event(
    chunk: StreamChunk, run_id: str, names: dict[str, str], assembler: ResponseAssembler
) -> AgentEvent | None:
    """The event of a chunk other than text (``None``: nothing to show)."""
    if isinstance(chunk, ReasoningChunk):
        return ReasoningDeltaEvent(run_id=run_id, delta=chunk.text) if chunk.text else None
    if isinstance(chunk, ToolCallStartChunk):
        names[chunk.id] = chunk.name
        return ToolCallStartEvent(run_id=run_id, tool_call_id=chunk.id, tool_name=chunk.name)
    if isinstance(chunk, ToolCallDeltaChunk):
        return ToolCallDeltaEvent(
            run_id=run_id, tool_call_id=chunk.id, args_delta=chunk.arguments_delta
        )
    if isinstance(chunk, ToolCallEndChunk):
        return ToolCallEndEvent(
            run_id=run_id,
            tool_call_id=chunk.id,
            tool_name=names.get(chunk.id, ""),
            arguments=assembler.arguments_of(chunk.id),
        )
    return None
