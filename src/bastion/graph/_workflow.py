"""``Workflow``: a sequence of function steps over a state dict, as a thin layer on ``Graph``.

Each step is a function of the state returning updates (a mapping merged into a copy of the
state, or ``None``). ``when(condition, ...)`` runs its inner steps only when the condition
holds (a nested graph); ``parallel(...)`` runs its steps concurrently on the same state and
merges their updates in step order — a failing one does not stop the others. A step with a
:class:`RetryPolicy` is tried again after a failure, waiting on the graph's clock.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from bastion.core import Clock, SystemClock, UserError

from ._context import NodeContext
from ._graph import Graph
from ._nodes import Inputs, check_key
from ._signals import GraphStatus

__all__ = ["RetryPolicy", "Workflow", "WorkflowResult"]

State: TypeAlias = dict[str, Any]
"""The user's state: whatever values the steps put under their keys."""
Update: TypeAlias = Mapping[str, object]
"""What a step returns: the keys it sets (merged into a copy of the state)."""
StepFn: TypeAlias = Callable[[State], "Update | Awaitable[Update | None] | None"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a failing step is tried, and how long to wait between tries.

    Attributes:
        max_attempts: Tries in all (1: no retry).
        backoff: Seconds before the second try; each further wait is ``multiplier`` times
            the previous one.
        multiplier: Growth of the wait.
    """

    max_attempts: int = 3
    backoff: float = 0.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.backoff < 0 or self.multiplier < 1:
            raise UserError(
                "RetryPolicy needs max_attempts >= 1, backoff >= 0 and multiplier >= 1; got "
                f"{self.max_attempts}, {self.backoff}, {self.multiplier}."
            )


@dataclass(frozen=True, slots=True)
class WorkflowResult:
    """The final state, the status, and the error of each failed step (by step name)."""

    state: State
    status: GraphStatus
    errors: Mapping[str, BaseException] = field(default_factory=dict[str, BaseException])


@dataclass(frozen=True, slots=True)
class _Step:
    name: str
    fn: StepFn
    retry: RetryPolicy | None


@dataclass(frozen=True, slots=True)
class _When:
    name: str
    condition: Callable[[State], bool]
    inner: Workflow


@dataclass(frozen=True, slots=True)
class _Parallel:
    name: str
    steps: tuple[_Step, ...]


@dataclass(frozen=True, slots=True)
class _Delta:
    """What a parallel step hands on: the state it started from and its own updates."""

    base: Update
    update: Update


def _updates(item: object) -> Update:
    """A step node's input as a mapping (a state: the workflow's input or a step's output).

    Raises:
        TypeError: For anything but a mapping.
    """
    if not isinstance(item, Mapping):
        raise TypeError(f"A workflow state is a mapping of names to values; got {item!r}.")
    return cast("Update", item)  # the keys of a state are its names


def _is_state(output: object) -> bool:
    """Whether a node's output is a state (a step's) or a parallel step's delta."""
    return isinstance(output, dict | _Delta)


def _merge(inputs: Sequence[object]) -> State:
    """One state from a step's inputs: states, or parallel steps' updates in step order."""
    merged: State = {}
    for item in inputs:
        if isinstance(item, _Delta):
            if not merged:
                merged.update(item.base)
            merged.update(item.update)
        else:
            merged.update(_updates(item))
    return merged


async def _apply(step: _Step, state: State, clock: Clock) -> Update:
    retry = step.retry or RetryPolicy(max_attempts=1)
    wait = retry.backoff
    for attempt in range(retry.max_attempts):
        try:
            update = step.fn(dict(state))
            if inspect.isawaitable(update):
                update = await update
        except Exception:
            if attempt + 1 == retry.max_attempts:
                raise
            await clock.sleep(wait)
            wait *= retry.multiplier
            continue
        return update or {}
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


class Workflow:
    """Steps over a state dict, run in order. Build it, then ``await run(state)``.

    Args:
        name: The workflow's name (its graph's key).
        retry: The retry policy of steps that have none of their own.
        clock: Where retries wait (tests: a ``VirtualClock``).
    """

    def __init__(
        self,
        name: str = "workflow",
        *,
        retry: RetryPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = check_key("workflow", name)
        self.retry = retry
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._items: list[_Step | _When | _Parallel] = []

    def _next_name(self, fn: Callable[..., object] | None, prefix: str) -> str:
        base = getattr(fn, "__name__", prefix) if fn is not None else prefix
        base = base if base.isidentifier() and base != "<lambda>" else prefix
        return f"s{len(self._items)}_{base}"

    def step(self, fn: StepFn, *, retry: RetryPolicy | None = None) -> Workflow:
        """Add a function step (``fn(state) -> updates | None``, sync or async)."""
        self._items.append(_Step(self._next_name(fn, "step"), fn, retry or self.retry))
        return self

    def when(self, condition: Callable[[State], bool], *steps: StepFn | Workflow) -> Workflow:
        """Add steps that run (in order) only when ``condition(state)`` is true."""
        inner = Workflow(f"{self.name}_{len(self._items)}", retry=self.retry, clock=self.clock)
        for item in steps:
            if isinstance(item, Workflow):
                inner._items.extend(item._items)
            else:
                inner.step(item)
        self._items.append(_When(self._next_name(None, "when"), condition, inner))
        return self

    def parallel(self, *steps: StepFn, retry: RetryPolicy | None = None) -> Workflow:
        """Add steps that run concurrently; their updates merge in step order."""
        if not steps:
            raise UserError("Workflow.parallel() needs at least one step.")
        name = self._next_name(None, "parallel")
        subs = tuple(
            _Step(
                f"{name}_{i}_{getattr(fn, '__name__', 'step')}".replace("<lambda>", "step"),
                fn,
                retry or self.retry,
            )
            for i, fn in enumerate(steps)
        )
        self._items.append(_Parallel(name, subs))
        return self

    def to_graph(self) -> Graph:
        """The graph this workflow runs as (one node per step, a fan-out per parallel)."""
        graph = Graph(self.name, clock=self.clock, output="__end__")
        previous: list[str] = []
        clock = self.clock

        def link(keys: list[str]) -> None:
            for key in keys:
                for before in previous:
                    graph.add_edge(before, key)

        for item in self._items:
            if isinstance(item, _Parallel):
                keys = [sub.name for sub in item.steps]
                for sub in item.steps:
                    graph.add_node(sub.name, _runner(sub, clock, parallel=True))
            elif isinstance(item, _When):
                keys = [item.name]
                graph.add_node(item.name, _branch(item))
            else:
                keys = [item.name]
                graph.add_node(item.name, _runner(item, clock))
            link(keys)
            previous = keys
        graph.add_node("__end__", _merge)
        link(["__end__"])
        return graph

    async def run(self, state: Mapping[str, object] | None = None) -> WorkflowResult:
        """Run the steps on a copy of ``state`` and return the final state.

        A step that still fails after its retries stops the steps after it (the state so
        far is returned with status ``failed``); a failing parallel step does not stop its
        siblings, whose updates are kept.
        """
        initial = dict(state or {})
        if not self._items:
            return WorkflowResult(state=initial, status="completed")
        result = await self.to_graph().run(initial)
        output = result.output
        if output is not None:
            final = _merge([output])
        else:  # a step failed before the end: the last state that was made
            made = [_merge([v]) for v in result.outputs.values() if _is_state(v)]
            final = made[-1] if made else initial
        return WorkflowResult(state=final, status=result.status, errors=dict(result.errors))


def _runner(
    step: _Step, clock: Clock, *, parallel: bool = False
) -> Callable[[Inputs], Awaitable[State | _Delta]]:
    async def run(inputs: Inputs) -> State | _Delta:
        state = _merge(inputs)
        update = await _apply(step, state, clock)
        return _Delta(state, update) if parallel else {**state, **update}

    return run


def _branch(item: _When) -> Callable[[Inputs, NodeContext], Awaitable[State]]:
    async def run(inputs: Inputs, ctx: NodeContext) -> State:
        state = _merge(inputs)
        if not item.condition(dict(state)):
            return state
        if not item.inner._items:
            return state
        done = await ctx.spawn(item.inner.to_graph(), state)
        return _merge([done.raise_for_status().output])

    return run
