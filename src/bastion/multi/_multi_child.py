"""Running one child of a multi-agent operation (fan-out, team, evaluator): :func:`run_child`.

Every child of a fan-out, every member call of a team and every generator / evaluator call
of an evaluator loop goes through :func:`run_child`, so the way a child runs (today: a run
of its own, linked to its parent by ``metadata``, under the parent's governor and store)
changes in this one place. It enforces the child's :class:`ChildBudget`:

- ``tool_calls``: a first ``before_tool_call`` hook on the child's gate counts the calls
  and refuses the one over the budget (an ``Agent`` child; other children are counted from
  their ``tool.execute.start`` events);
- ``tokens``: checked at each ``step.end`` event (after the model call that crossed it);
  a child without steps (a team, an external agent) on the usage it reports at its end;
- ``duration``: a watchdog sleeping on the parent's clock.

Given a ``run_id`` (a fan-out derives one per child), an ``Agent`` child is a durable child
run: with a store that already holds the run, the child continues from its own journal
(``resume_stream``: a finished run gives its result again, a crashed one goes on where it
stopped, repeating no recorded model call or tool) instead of starting over; its tool-call
budget counts the calls its journal already finished. A ``Team`` child with a store of its
own runs under that id too (its own composite run, continued the same way). ``on_event``
sees each of the child's events (``None``: the child is drained, with no per-event cost).

A child over its budget is aborted and reported ``failed`` with code ``budget_exceeded``.
Any exception of the child becomes a ``failed`` outcome: a failing child never raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar, Protocol, TypeGuard, cast

from bastion.agent._config import RunConfig
from bastion.core import RunErrorInfo, StepEndEvent, ToolExecuteStartEvent, Usage
from bastion.tools import Deny

from ._fanout_types import ChildBudget, ChildResult, FanOutChild

if TYPE_CHECKING:
    from bastion.agent._agent_like import AgentRun
    from bastion.agent._result import RunResult
    from bastion.core import AgentEvent, Clock
    from bastion.stores import Stores
    from bastion.tools import BeforeToolCall, ToolCallDecision, ToolCallRequest

__all__ = ["ChildHandle", "run_child"]


class _ContinuesRuns(Protocol):
    """An agent-like that continues a run of its own by id (a ``Team`` with a ``store``).

    It says so with ``continues_runs``.
    """

    continues_runs: ClassVar[bool]

    @property
    def store(self) -> Stores | None: ...

    def stream(
        self, input: str, *, metadata: Mapping[str, object] | None = None, run_id: str | None = None
    ) -> AgentRun: ...


def _continues(agent: object) -> TypeGuard[_ContinuesRuns]:
    return getattr(agent, "continues_runs", False) and getattr(agent, "store", None) is not None


class _Configured(Protocol):
    """An ``Agent``: its runs take a derived configuration."""

    @property
    def config(self) -> RunConfig: ...

    def stream(
        self,
        input: str,
        *,
        metadata: dict[str, object] | None = None,
        config: RunConfig | None = None,
        run_id: str | None = None,
    ) -> AgentRun: ...

    def resume_stream(self, run_id: str, *, config: RunConfig | None = None) -> AgentRun: ...

    async def stores(self) -> Stores: ...


@dataclass(slots=True)
class ChildHandle:
    """The parent's grip on a running child: its stream, and why it was stopped."""

    stream: AgentRun | None = None
    over: str | None = None  # the budget the child went over
    cancelled: bool = False  # stopped by the parent (a sibling won ``first_success``)
    late: bool = False  # found over its token budget only when it ended

    def cancel(self) -> None:
        """Abort the child (it ends ``aborted``)."""
        self.cancelled = True
        if self.stream is not None:
            self.stream.abort()

    def exceeded(self, what: str, *, drain: bool = False) -> None:
        """Stop the child: it went over its budget (``drain``: after its current step)."""
        if self.over is None:
            self.over = what
            if self.stream is not None:
                self.stream.abort(drain=drain)


async def run_child(  # noqa: PLR0917 - one child's parts
    child: FanOutChild,
    index: int,
    handle: ChildHandle,
    budget: ChildBudget | None,
    host: RunConfig | None,
    clock: Clock,
    metadata: Mapping[str, object],
    started: Callable[[str], None] | None = None,
    *,
    run_id: str | None = None,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> ChildResult:
    """Run (or continue, see ``run_id``) ``child`` to its end under ``budget``.

    Returns its outcome, never an exception.
    """
    tool_budget = budget.tool_calls if budget is not None else None
    try:
        stream, counted = await _open(child, handle, tool_budget, host, metadata, run_id)
    except Exception as exc:
        return _failed(child.label, index, exc, run_id or "")
    handle.stream = stream
    if started is not None:
        started(stream.run_id)
    watchdog = None
    if budget is not None and budget.duration is not None:
        watchdog = asyncio.create_task(_watch(handle, clock, budget.duration))
    try:
        if handle.cancelled:
            stream.abort()
        tokens = budget.tokens if budget is not None else None
        drain = cast(
            "Callable[[], Awaitable[RunResult[object]]] | None", getattr(stream, "drain", None)
        )
        if tokens is None and not counted and on_event is None and drain is not None:
            result = await drain()  # nobody needs the events: no per-event cost
        else:
            limit = tool_budget if counted else None
            result = await _follow(stream, handle, tokens, limit, on_event)
    except Exception as exc:
        return _failed(child.label, index, exc, _run_id(stream))
    finally:
        if watchdog is not None:
            watchdog.cancel()
    return _outcome(child.label, index, handle, result)


async def _open(  # noqa: PLR0917 - one child's parts
    child: FanOutChild,
    handle: ChildHandle,
    tool_budget: int | None,
    host: RunConfig | None,
    metadata: Mapping[str, object],
    run_id: str | None,
) -> tuple[AgentRun, bool]:
    """The child's stream (a new run, or its run already in the store).

    Also whether its tool calls are counted from its events (a child that is no ``Agent``).
    """
    agent = child.agent
    if not isinstance(getattr(agent, "config", None), RunConfig):
        if run_id is not None and _continues(agent):
            # A team with a store of its own: a durable run of its own, continued by id.
            stream = agent.stream(child.input, metadata=dict(metadata), run_id=run_id)
            return stream, tool_budget is not None
        return agent.stream(child.input, metadata=dict(metadata)), tool_budget is not None
    configured = cast("_Configured", agent)
    store = configured.config.store or (host.store if host is not None else None)
    if run_id is not None and store is not None:
        if store is configured.config.store:
            await configured.stores()  # the child's own store: open it (the host's is open)
        if await store.journal.get_run(run_id) is not None:
            spent = await _tools_run(store, run_id) if tool_budget is not None else 0
            config = _child_config(configured.config, host, _hook(handle, tool_budget, spent))
            return configured.resume_stream(run_id, config=config), False
    config = _child_config(configured.config, host, _hook(handle, tool_budget, 0))
    stream = configured.stream(child.input, metadata=dict(metadata), config=config, run_id=run_id)
    return stream, False


def _hook(handle: ChildHandle, tool_budget: int | None, spent: int) -> BeforeToolCall | None:
    return _tool_counter(handle, tool_budget, spent) if tool_budget is not None else None


async def _tools_run(store: Stores, run_id: str) -> int:
    """How many tool calls the child's run finished in an earlier attempt (its journal)."""
    entries = await store.journal.read(run_id)
    return len({str(e.payload.get("tool_call_id")) for e in entries if e.kind == "tool_result"})


def _failed(name: str, index: int, exc: Exception, run_id: str) -> ChildResult:
    """A child that raised; ``run_busy``: its run is live in another process (untouched)."""
    code = "run_busy" if type(exc).__name__ == "RunBusy" else "child_error"
    return ChildResult(
        name=name,
        index=index,
        status="failed",
        error=RunErrorInfo(code=code, message=f"{type(exc).__name__}: {exc}"),
        run_id=run_id,
    )


async def _follow(
    stream: AgentRun,
    handle: ChildHandle,
    tokens: int | None,
    tool_calls: int | None,
    on_event: Callable[[AgentEvent], None] | None,
) -> RunResult[object]:
    """Iterate the child's events, stopping it when it goes over ``tokens`` / ``tool_calls``.

    Each event goes to ``on_event`` first.
    """
    spent = 0
    calls = 0
    async for event in stream:
        if on_event is not None:
            on_event(event)
        if tokens is not None and isinstance(event, StepEndEvent):
            spent += event.usage.total_tokens
            if spent > tokens:
                handle.exceeded(f"tokens ({spent:,} > {tokens:,})")
        elif tool_calls is not None and isinstance(event, ToolExecuteStartEvent):
            calls += 1
            if calls > tool_calls:
                handle.exceeded(f"tool_calls ({calls} > {tool_calls})")
    result = stream.result
    total = result.usage.total_tokens
    if tokens is not None and handle.over is None and total > tokens:
        # A team or an external agent reports its usage only at its end: over is over.
        handle.over = f"tokens ({total:,} > {tokens:,})"
        handle.late = True
    return result


def _tool_counter(handle: ChildHandle, limit: int, spent: int = 0) -> BeforeToolCall:
    """A gate hook refusing the child's tool calls past ``limit``, and stopping the child.

    ``spent``: the calls an earlier attempt of the child's run already made.
    """
    count = spent

    def count_call(request: ToolCallRequest) -> ToolCallDecision | None:
        nonlocal count
        count += 1
        if count <= limit:
            return None
        # The step's other calls were admitted before this one: they still run.
        handle.exceeded(f"tool_calls ({count} > {limit})", drain=True)
        return Deny(f"Not run: this agent's tool-call budget ({limit}) is spent.")

    return count_call


async def _watch(handle: ChildHandle, clock: Clock, seconds: float) -> None:
    await clock.sleep(seconds)
    handle.exceeded(f"duration ({seconds:g} s)")


def _child_config(
    child: RunConfig, host: RunConfig | None, hook: BeforeToolCall | None
) -> RunConfig:
    """The child's configuration under ``host``: its governor and store, plus the budget hook."""
    governance = child.governance
    store = child.store
    if host is not None:
        ruling = host.governance
        if ruling is not None and (
            governance is None or governance.governor is not ruling.governor
        ):
            governance = ruling.for_child(child.name)
        if store is None:
            store = host.store
    gate = child.executor.gate
    if governance is not child.governance:
        gate = gate.with_approval(gate.approval, governance)
    if hook is not None:
        gate = gate.with_first_hook(hook)
    if gate is child.executor.gate and store is child.store:
        return child
    executor = child.executor.with_gate(gate)
    return replace(child, governance=governance, store=store, executor=executor)


def _run_id(stream: AgentRun) -> str:
    return stream.run_id


def _outcome(name: str, index: int, handle: ChildHandle, result: RunResult[object]) -> ChildResult:
    """The child's outcome from its run's result (and its budget)."""
    state = result.state
    untrusted = state is not None and state.untrusted_seen
    status = result.status
    error = result.error
    if handle.over is not None and (status != "completed" or handle.late):
        status = "failed"
        error = RunErrorInfo(
            code="budget_exceeded",
            message=f"Child {name!r} went over its budget: {handle.over}.",
        )
    elif status == "aborted" and handle.cancelled:
        error = RunErrorInfo(code="cancelled", message=f"Child {name!r} was cancelled.")
    return ChildResult(
        name=name,
        index=index,
        status=status,
        output=result.output if status == "completed" else None,
        text=result.text,
        error=error,
        usage=result.usage if isinstance(result.usage, Usage) else Usage(),
        run_id=result.run_id,
        untrusted=untrusted,
    )
