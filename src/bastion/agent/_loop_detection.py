"""Loop detection: the model calling one tool with identical arguments again and again.

Counts come from the run's own record of its tool calls (``RunState.tool_calls``), which a
resumed or recovered run rebuilds from its state or journal, so a run that suspends or
crashes between the second and the third identical call still sees the third as the third.
Arguments are compared as parsed JSON (key order and spacing do not matter).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from bastion.core import ToolCall, ToolLoopDetectedEvent, UserError

from ._result import ToolCallRecord

__all__ = ["LoopDetection", "Repeat", "check_loop_detection", "find_repeats", "loop_note"]

LoopAction = Literal["warn", "fail", "off"]
_ACTIONS = ("warn", "fail", "off")


@dataclass(kw_only=True, slots=True, frozen=True)
class LoopDetection:
    """What the run does when the model repeats a tool call with identical arguments.

    Example::

        detection = LoopDetection(threshold=4, action="fail")
        agent = Agent("a", model=model, tools=[search],
                      tool_options=ToolOptions(loop_detection=detection))

    Attributes:
        threshold: The call count, in one run, at which the call counts as a loop (the
            third identical call with the default 3).
        action: ``warn`` (default): the call runs, its result starts with a note telling
            the model it repeats itself, and ``tool.loop.detected`` is emitted. ``fail``:
            the step's calls do not run and the run fails with code ``loop_detected``.
            ``off``: nothing is checked.
    """

    threshold: int = 3
    action: LoopAction = "warn"

    def __post_init__(self) -> None:
        threshold: object = self.threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int):
            raise UserError(f"LoopDetection.threshold must be an int, got {threshold!r}.")
        if self.threshold < 2:
            raise UserError(
                f"LoopDetection.threshold must be at least 2 (a call repeated once), "
                f"got {self.threshold}."
            )
        if self.action not in _ACTIONS:
            raise UserError(
                f"LoopDetection.action must be one of {', '.join(map(repr, _ACTIONS))}, "
                f"got {self.action!r}."
            )


@dataclass(kw_only=True, slots=True, frozen=True)
class Repeat:
    """A call of the current step that repeats earlier ones: ``count`` calls, this one too."""

    call: ToolCall
    count: int

    def event(self, run_id: str, action: Literal["warn", "fail"]) -> ToolLoopDetectedEvent:
        """The ``tool.loop.detected`` event reporting this repeat (the loop numbers it)."""
        return ToolLoopDetectedEvent(
            run_id=run_id,
            tool_call_id=self.call.id,
            tool_name=self.call.name,
            arguments=self.call.arguments,
            count=self.count,
            action=action,
        )


def check_loop_detection(value: LoopDetection | None, agent: str) -> LoopDetection | None:
    """The agent's ``loop_detection`` option, ``None`` when nothing is to be checked."""
    if value is None:
        return None
    if not isinstance(value, LoopDetection):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"Agent {agent!r}: loop_detection must be a LoopDetection or None, got {value!r}."
        )
    return None if value.action == "off" else value


def find_repeats(
    threshold: int, records: Iterable[ToolCallRecord], calls: Sequence[ToolCall]
) -> list[Repeat]:
    """The calls of this step made ``threshold`` times or more in the run, with their count.

    ``records`` are the run's earlier calls; calls earlier in ``calls`` count too.
    """
    seen = Counter(_key(r.name, r.arguments) for r in records)
    repeats: list[Repeat] = []
    for call in calls:
        key = _key(call.name, call.arguments)
        seen[key] += 1
        if seen[key] >= threshold:
            repeats.append(Repeat(call=call, count=seen[key]))
    return repeats


def loop_note(repeat: Repeat) -> str:
    """What the model reads before the result of a repeated call."""
    return (
        f"[Loop detected: this is call {repeat.count} of {repeat.call.name!r} with the same "
        "arguments in this run. Repeating it is unlikely to help: use the results you have, "
        "change the arguments, try another tool, or answer.]"
    )


def _key(name: str, arguments: str) -> tuple[str, str]:
    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments  # not JSON: compared as it was sent
    return name, canonical
