"""Time windows of limits (minute, hour, day …) and the arithmetic of sliding windows.

Owned by the governor: a :class:`Window` turns the user's ``window=`` value into a length in
seconds (sliding windows) or a scope (``graph``, ``invocation``); :class:`SlidingCounter` is
the exact sliding sum the in-memory counter store keeps per counter.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal, TypeAlias

from bastion.core import UserError

__all__ = ["NAMED_WINDOWS", "SlidingCounter", "Window", "WindowSpec", "parse_window"]

WindowSpec: TypeAlias = (
    Literal["minute", "hour", "day", "week", "month", "graph", "invocation"] | float | int | None
)

NAMED_WINDOWS: dict[str, float] = {
    "minute": 60.0,
    "hour": 3_600.0,
    "day": 86_400.0,
    "week": 604_800.0,
    "month": 2_592_000.0,  # 30 days, as llmrx counts a month
}


@dataclass(frozen=True, slots=True)
class Window:
    """A parsed window.

    Attributes:
        label: Stable name used in counter keys and snapshots (``"day"``, ``"30s"``,
            ``"graph"``, ``"invocation"``, ``"all"``).
        seconds: Length of a sliding window; ``None`` for scoped and unbounded windows.
        scope: ``"graph"`` or ``"invocation"`` when counters are kept per graph execution or
            per invocation; ``None`` otherwise.
    """

    label: str
    seconds: float | None = None
    scope: Literal["graph", "invocation"] | None = None


_UNBOUNDED = Window(label="all")


def parse_window(spec: WindowSpec) -> Window:
    """Return the :class:`Window` for a ``window=`` value.

    Raises:
        UserError: For an unknown name or a non-positive number of seconds.
    """
    if spec is None:
        return _UNBOUNDED
    if isinstance(spec, bool):
        raise UserError(f"Invalid window {spec!r}: use a name or a number of seconds.")
    if isinstance(spec, int | float):
        if spec <= 0:
            raise UserError(f"Invalid window {spec!r}: a window in seconds must be > 0.")
        return Window(label=f"{float(spec):g}s", seconds=float(spec))
    if spec in NAMED_WINDOWS:
        return Window(label=spec, seconds=NAMED_WINDOWS[spec])
    if spec == "graph":
        return Window(label="graph", scope="graph")
    if spec == "invocation":
        return Window(label="invocation", scope="invocation")
    valid = ", ".join(repr(name) for name in [*NAMED_WINDOWS, "graph", "invocation"])
    raise UserError(f"Unknown window {spec!r}. Valid: {valid}, a number of seconds, or None.")


class SlidingCounter:
    """The sum of amounts added within the last ``seconds`` (or ever, when ``None``).

    Events older than ``now - seconds`` fall out; an event exactly ``seconds`` old has left
    the window. The running sum is clamped at zero and reset when the window empties, so
    floating-point subtraction never leaves a negative or drifting total.
    """

    __slots__ = ("events", "seconds", "total")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.events: deque[tuple[float, float]] = deque()
        self.total = 0.0

    def prune(self, now: float) -> None:
        """Drop the events that have left the window at ``now``."""
        if self.seconds is None:
            return
        events = self.events
        if not events:
            return
        horizon = now - self.seconds
        if events[0][0] > horizon:
            return  # nothing has left the window
        total = self.total
        while events and events[0][0] <= horizon:
            total -= events.popleft()[1]
        self.total = max(total, 0.0) if events else 0.0

    def add(self, amount: float, now: float) -> float:
        """Add ``amount`` at ``now``; return the new sum."""
        seconds = self.seconds
        if seconds is None:
            # Unbounded: one running sum is enough; no event list to grow.
            self.total += amount
            return self.total
        events = self.events
        if events and events[0][0] <= now - seconds:
            self.prune(now)
        if events and events[-1][0] == now:
            events[-1] = (now, events[-1][1] + amount)
        else:
            events.append((now, amount))
        self.total += amount
        return self.total

    def value(self, now: float) -> float:
        """Return the sum at ``now``."""
        self.prune(now)
        return self.total

    def start(self, now: float) -> float | None:
        """Return when the oldest counted event happened, or ``None`` when empty."""
        self.prune(now)
        return self.events[0][0] if self.events else None
