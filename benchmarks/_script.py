"""The one script every framework replays, and the tool bodies every framework calls.

A fake model in each adapter turns the framework's request into the list of tool results
it carries (:class:`Seen`), asks :func:`reply` what to answer, and turns the :class:`Reply`
back into the framework's response type. The decision depends only on the request, so one
model instance serves any number of concurrent runs.

The final answer echoes the tool results the model saw (``"done: 2,3,4"``), so checking the
output also checks that every result made it back to the model, in order.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = [
    "CALLS",
    "CONCURRENCY",
    "EXPECTED_CALLS",
    "EXPECTED_OUTPUT",
    "INSTRUCTIONS",
    "LONGEST_TOOL",
    "PARALLEL_CALLS",
    "PROMPT",
    "SCENARIO",
    "STREAM_DELTAS",
    "STREAM_TEXT",
    "TOOLS",
    "WORKLOADS",
    "Call",
    "Reply",
    "Scenario",
    "Seen",
    "ToolSpec",
    "Workload",
    "reply",
]

INSTRUCTIONS = "be brief"
PROMPT = "go"
LOOP_STEPS = 3
PARALLEL_CALLS = 8
LONGEST_TOOL = 0.010
STREAM_DELTAS = 200
CONCURRENCY = (100, 1000)  # S4: the per-run cost at the second is compared with the first
STREAM_TEXT = "".join(f"w{i} " for i in range(STREAM_DELTAS))

Scenario: TypeAlias = Literal["loop", "parallel", "invalid", "stream"]
Workload: TypeAlias = Literal["loop_sync", "loop_async", "parallel", "invalid"]
WORKLOADS: tuple[Workload, ...] = ("loop_sync", "loop_async", "parallel", "invalid")


class CallCounter:
    """Counts tool-body executions; thread-safe because sync tools run in worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0

    @property
    def value(self) -> int:
        """Tool bodies run so far."""
        return self._value

    def hit(self) -> None:
        """Record one execution."""
        with self._lock:
            self._value += 1


CALLS = CallCounter()


def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.hit()
    return a + b


async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.hit()
    return a + b


async def pause(i: int) -> int:
    """Wait 10 ms, then return ``i``."""
    CALLS.hit()
    await asyncio.sleep(LONGEST_TOOL)
    return i


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool to register: the name the model calls and the function behind it."""

    name: str
    function: Callable[..., Any]
    description: str


def _spec(name: str, function: Callable[..., Any]) -> ToolSpec:
    return ToolSpec(name=name, function=function, description=(function.__doc__ or "").strip())


TOOLS: dict[Workload, tuple[ToolSpec, ...]] = {
    "loop_sync": (_spec("add", add),),
    "loop_async": (_spec("add", add_async),),
    "parallel": (_spec("pause", pause),),
    "invalid": (_spec("add", add_async),),
}

EXPECTED_OUTPUT: dict[Workload, str] = {
    "loop_sync": "done: 2,3,4",
    "loop_async": "done: 2,3,4",
    "parallel": "done: " + ",".join(str(i) for i in range(PARALLEL_CALLS)),
    "invalid": "done: error,2",
}
EXPECTED_CALLS: dict[Workload, int] = {
    "loop_sync": LOOP_STEPS,
    "loop_async": LOOP_STEPS,
    "parallel": PARALLEL_CALLS,
    # The invalid call must never reach the tool body: only the corrected call counts.
    "invalid": 1,
}


SCENARIO: dict[Workload, Scenario] = {
    "loop_sync": "loop",
    "loop_async": "loop",
    "parallel": "parallel",
    "invalid": "invalid",
}


@dataclass(frozen=True, slots=True)
class Seen:
    """One tool result as the model receives it."""

    text: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call the model asks for."""

    id: str
    name: str
    args: dict[str, Any]

    @property
    def arguments(self) -> str:
        """The arguments as the JSON text a provider sends."""
        return json.dumps(self.args)


@dataclass(frozen=True, slots=True)
class Reply:
    """One model answer: tool calls, or final text (streamed as ``deltas`` when given)."""

    calls: tuple[Call, ...] = ()
    text: str = ""
    deltas: tuple[str, ...] = ()


_STREAM_REPLY = Reply(text=STREAM_TEXT, deltas=tuple(f"w{i} " for i in range(STREAM_DELTAS)))


def _done(seen: Sequence[Seen]) -> Reply:
    return Reply(text="done: " + ",".join("error" if s.is_error else s.text for s in seen))


def reply(scenario: Scenario, seen: Sequence[Seen]) -> Reply:
    """Decide the next model answer from the tool results already in the request.

    * ``loop``: step k (k = 1..3) calls ``add(a=k, b=1)``, then answers with the results.
    * ``parallel``: one step calling ``pause(i)`` for i = 0..7, then the answer.
    * ``invalid``: calls ``add`` with ``a="not a number"``, then (after the error comes
      back) ``add(a=1, b=1)``, then the answer, which shows the error as ``error``.
    * ``stream``: no tools; 200 text deltas.
    """
    done = len(seen)
    if scenario == "loop":
        if done < LOOP_STEPS:
            return Reply(calls=(Call(f"call_{done}", "add", {"a": done + 1, "b": 1}),))
        return _done(seen)
    if scenario == "parallel":
        if done == 0:
            return Reply(
                calls=tuple(Call(f"call_{i}", "pause", {"i": i}) for i in range(PARALLEL_CALLS))
            )
        return _done(seen)
    if scenario == "invalid":
        if done == 0:
            return Reply(calls=(Call("call_0", "add", {"a": "not a number", "b": 1}),))
        if done == 1:
            return Reply(calls=(Call("call_1", "add", {"a": 1, "b": 1}),))
        return _done(seen)
    return _STREAM_REPLY
