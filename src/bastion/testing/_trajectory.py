"""Trajectory assertions: what an agent did, compared with what a test expects.

A run's *trajectory* is its tool calls, in the order they started (sub-agents' calls
included, from their ``subagent.event`` events), then its final answer::

    assert_trajectory(events, [
        call("search", query=contains("paris")),
        call("book", city="Paris").returns(contains("confirmed")),
        final(contains("booked")),
    ])

Modes: ``exact`` (the whole trajectory, in order), ``ordered`` (these steps in this order,
others may come between), ``unordered`` (the whole trajectory, any order) and ``subset``
(these steps, any order, others allowed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias, cast

from bastion.agent import RunResult
from bastion.core import (
    AgentEndEvent,
    AgentEvent,
    JsonValue,
    SubagentEvent,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteStartEvent,
    UserError,
)

from ._matchers import ANY, Matcher, mismatch, show

__all__ = [
    "ExpectedCall",
    "ExpectedFinal",
    "FinalStep",
    "ToolStep",
    "TrajectoryMode",
    "assert_trajectory",
    "call",
    "final",
    "trajectory",
]

TrajectoryMode: TypeAlias = Literal["exact", "ordered", "unordered", "subset"]
_MODES = ("exact", "ordered", "unordered", "subset")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStep:
    """A tool call the run made.

    Attributes:
        name: The tool.
        arguments: The arguments (a dict; the raw text when it is not JSON).
        result: What the model read back (``None``: the call never finished).
        is_error: The call failed.
        agent: The sub-agents the call was made in, outermost first (``()``: the run's
            own agent).
    """

    name: str
    arguments: JsonValue
    result: str | None = None
    is_error: bool = False
    agent: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = f"[{' > '.join(self.agent)}] " if self.agent else ""
        outcome = "" if self.result is None else f" -> {show(self.result)}"
        failed = " (error)" if self.is_error else ""
        return f"{where}{self.name}({_arguments(self.arguments)}){outcome}{failed}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalStep:
    """The run's end: its output and status."""

    output: object
    status: str

    def __str__(self) -> str:
        return f"final {show(self.output)} ({self.status})"


Step: TypeAlias = ToolStep | FinalStep


@dataclass(frozen=True, slots=True, repr=False)
class ExpectedCall:
    """An expected tool call; build it with :func:`call`, refine it with its methods.

    Attributes:
        name: The tool's name (or a matcher of it).
        args: The arguments to check, by name (values or matchers).
        agent: The innermost sub-agent the call must be made in (``None``: any).
        result: The result (or error message) to check.
        failed: Whether the call must have failed (``None``: not checked).
        exact: Arguments not in ``args`` must not be present.
    """

    name: str | Matcher
    args: Mapping[str, object]
    agent: str | Matcher | None = None
    result: object = ANY
    failed: bool | None = None
    exact: bool = False

    def in_agent(self, name: str | Matcher) -> ExpectedCall:
        """Only a call made inside the sub-agent ``name`` (the innermost one) matches."""
        return replace(self, agent=name)

    def returns(self, result: object) -> ExpectedCall:
        """The call succeeded with this result (a value or a matcher)."""
        return replace(self, result=result, failed=False)

    def fails(self, message: object = ANY) -> ExpectedCall:
        """The call failed; its error message matches ``message``."""
        return replace(self, result=message, failed=True)

    def no_other_args(self) -> ExpectedCall:
        """Arguments not named here must not be present (by default they are not checked)."""
        return replace(self, exact=True)

    def mismatch(self, step: Step) -> str | None:
        """Why ``step`` is not this call (``None`` when it is)."""
        if not isinstance(step, ToolStep):
            return f"expected {self}, got the {step}"
        reason = mismatch(self.name, step.name)
        if reason is not None:
            return f"tool name: {reason}"
        if self.agent is not None:
            inner = step.agent[-1] if step.agent else None
            reason = mismatch(self.agent, inner)
            if reason is not None:
                return f"sub-agent: {reason}"
        return self._mismatch_args(step) or self._mismatch_outcome(step)

    def _mismatch_args(self, step: ToolStep) -> str | None:
        arguments = step.arguments
        if not isinstance(arguments, Mapping):
            return f"arguments: expected an object, got {show(arguments)}"
        reason = mismatch(self.args, arguments)
        if reason is not None:
            return f"arguments: {reason}"
        extra = sorted(str(k) for k in arguments.keys() - self.args.keys())
        if self.exact and extra:
            return f"arguments: unexpected {', '.join(extra)}"
        return None

    def _mismatch_outcome(self, step: ToolStep) -> str | None:
        if self.failed is not None and step.is_error != self.failed:
            return "expected the call to fail" if self.failed else "the call failed"
        reason = mismatch(self.result, step.result)
        return None if reason is None else f"result: {reason}"

    def __repr__(self) -> str:
        where = f"[{self.agent}] " if self.agent is not None else ""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        name = self.name if isinstance(self.name, str) else repr(self.name)
        outcome = ""
        if self.failed is not None:
            outcome = f".fails({self.result!r})" if self.failed else f".returns({self.result!r})"
        return f"call {where}{name}({args}){outcome}"


@dataclass(frozen=True, slots=True, repr=False)
class ExpectedFinal:
    """The expected end of the run; build it with :func:`final`."""

    output: object
    status: str

    def mismatch(self, step: Step) -> str | None:
        """Why ``step`` is not this end (``None`` when it is)."""
        if not isinstance(step, FinalStep):
            return f"expected {self!r}, got the call {step}"
        if step.status != self.status:
            return f"status: expected {self.status!r}, got {step.status!r}"
        reason = mismatch(self.output, step.output)
        return None if reason is None else f"output: {reason}"

    def __repr__(self) -> str:
        status = "" if self.status == "completed" else f", status={self.status!r}"
        return f"final({self.output!r}{status})"


Expected: TypeAlias = ExpectedCall | ExpectedFinal


def call(name: str | Matcher, /, **args: object) -> ExpectedCall:
    """An expected tool call: the tool's name, and the arguments to check.

    Each argument is a value or a matcher (``ANY``, ``contains``, ``regex``, ``where``);
    arguments not named are not checked (see :meth:`ExpectedCall.no_other_args`).
    """
    return ExpectedCall(name, dict(args))


def final(output: object = ANY, *, status: str = "completed") -> ExpectedFinal:
    """The run's end: its output (a value or a matcher) and status."""
    return ExpectedFinal(output, status)


def trajectory(
    source: RunResult[Any] | Iterable[AgentEvent], *, subagents: bool = True
) -> list[Step]:
    """The steps of a run: its tool calls in the order they started, then its end.

    ``source`` is the run's events (sub-agents' calls are read from their
    ``subagent.event`` events unless ``subagents=False``) or its ``RunResult`` (which
    holds the run's own calls only).
    """
    if isinstance(source, RunResult):
        return _from_result(source)
    return _Reader(subagents).read(source)


def assert_trajectory(
    source: RunResult[Any] | Iterable[AgentEvent],
    expected: Sequence[Expected],
    *,
    mode: TrajectoryMode = "exact",
    subagents: bool = True,
) -> list[Step]:
    """Assert that a run's trajectory matches ``expected``; return the trajectory.

    Raises:
        AssertionError: It does not; the message shows both trajectories and why.
        UserError: ``mode`` or an expected step is invalid.
    """
    if mode not in _MODES:
        raise UserError(f"mode={mode!r}: use one of {', '.join(map(repr, _MODES))}.")
    for item in expected:
        if not isinstance(item, (ExpectedCall, ExpectedFinal)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"Expected steps are call(...) or final(...), got {item!r}.")
    steps = trajectory(source, subagents=subagents)
    problem = _check(mode, expected, steps)
    if problem is not None:
        raise AssertionError(_report(mode, problem, expected, steps))
    return steps


def _check(mode: str, expected: Sequence[Expected], steps: Sequence[Step]) -> str | None:
    if mode == "exact":
        return _exact(expected, steps)
    if mode == "ordered":
        return _ordered(expected, steps)
    return _unordered(expected, steps, whole=mode == "unordered")


def _exact(expected: Sequence[Expected], steps: Sequence[Step]) -> str | None:
    for index, (item, step) in enumerate(zip(expected, steps, strict=False), start=1):
        reason = item.mismatch(step)
        if reason is not None:
            return f"step {index}: {reason}"
    if len(expected) != len(steps):
        more = steps[len(expected) :] if len(steps) > len(expected) else expected[len(steps) :]
        what = "unexpected" if len(steps) > len(expected) else "missing"
        return f"{len(expected)} step(s) expected, {len(steps)} made; {what}: {more[0]}"
    return None


def _ordered(expected: Sequence[Expected], steps: Sequence[Step]) -> str | None:
    position = 0
    for index, item in enumerate(expected, start=1):
        while position < len(steps) and item.mismatch(steps[position]) is not None:
            position += 1
        if position == len(steps):
            return f"expected step {index} ({item!r}) was not made after the steps before it"
        position += 1
    return None


def _unordered(expected: Sequence[Expected], steps: Sequence[Step], *, whole: bool) -> str | None:
    if whole and len(expected) != len(steps):
        return f"{len(expected)} step(s) expected, {len(steps)} made"
    owner: dict[int, int] = {}  # step index -> expected index (a bipartite matching)

    def place(item: int, seen: set[int]) -> bool:
        for index, step in enumerate(steps):
            if index in seen or expected[item].mismatch(step) is not None:
                continue
            seen.add(index)
            if index not in owner or place(owner[index], seen):
                owner[index] = item
                return True
        return False

    unmatched = [i for i in range(len(expected)) if not place(i, set())]
    if unmatched:
        return "no step matches " + "; ".join(repr(expected[i]) for i in unmatched)
    return None


def _report(mode: str, problem: str, expected: Sequence[Expected], steps: Sequence[Step]) -> str:
    lines = [f"Trajectory does not match (mode={mode!r}): {problem}", "expected:"]
    lines.extend(f"  {i}. {item!r}" for i, item in enumerate(expected, start=1))
    lines.append("actual:")
    lines.extend(f"  {i}. {step}" for i, step in enumerate(steps, start=1))
    if not steps:
        lines.append("  (no steps)")
    return "\n".join(lines)


class _Reader:
    """Collects the steps of an event stream, sub-agents' included."""

    def __init__(self, subagents: bool) -> None:
        self.subagents = subagents
        self.steps: list[Step] = []
        self.calls: dict[tuple[tuple[str, ...], str], int] = {}  # (agent, call id) -> step

    def read(self, events: Iterable[AgentEvent]) -> list[Step]:
        for event in events:
            self._event(event, ())
        return self.steps

    def _event(self, event: AgentEvent, agent: tuple[str, ...]) -> None:
        if isinstance(event, SubagentEvent):
            if self.subagents:
                self._event(event.event, (*agent, event.agent_name))
        elif isinstance(event, ToolExecuteStartEvent):
            self.calls[agent, event.tool_call_id] = len(self.steps)
            arguments = _parsed(event.arguments)
            self.steps.append(ToolStep(name=event.tool_name, arguments=arguments, agent=agent))
        elif isinstance(event, (ToolExecuteEndEvent, ToolExecuteErrorEvent)):
            self._finished(event, agent)
        elif isinstance(event, AgentEndEvent) and not agent:
            self.steps.append(FinalStep(output=event.output, status=event.status))

    def _finished(
        self, event: ToolExecuteEndEvent | ToolExecuteErrorEvent, agent: tuple[str, ...]
    ) -> None:
        index = self.calls.get((agent, event.tool_call_id))
        if index is None:
            return
        step = self.steps[index]
        assert isinstance(step, ToolStep)  # indexed when its start was read
        failed = isinstance(event, ToolExecuteErrorEvent)
        result = event.message if failed else event.result
        self.steps[index] = ToolStep(
            name=step.name, arguments=step.arguments, result=result, is_error=failed, agent=agent
        )


def _from_result(result: RunResult[Any]) -> list[Step]:
    steps: list[Step] = [
        ToolStep(
            name=record.name,
            arguments=_parsed(record.arguments),
            result=record.result,
            is_error=record.is_error,
        )
        for record in result.tool_calls
    ]
    steps.append(FinalStep(output=result.output, status=result.status))
    return steps


def _parsed(arguments: str) -> JsonValue:
    try:
        return cast("JsonValue", json.loads(arguments))
    except ValueError:
        return arguments


def _arguments(arguments: JsonValue) -> str:
    if isinstance(arguments, Mapping):
        return ", ".join(f"{k}={show(v)}" for k, v in arguments.items())
    return show(arguments)
