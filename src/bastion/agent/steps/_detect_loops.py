"""Detect loops: report a step's tool calls that repeat earlier identical calls.

Runs after the step's batch is bound and before any of its calls runs. With ``warn`` the
repeated call still runs and the model reads a note before its result; with ``fail`` none
of the step's calls runs (each gets an error result, so the transcript stays valid) and the
run fails with code ``loop_detected``.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.agent._loop_detection import find_repeats, loop_note
from bastion.agent._scope import RunScope
from bastion.core import AgentEvent, ToolCall
from bastion.tools import ToolBatch

__all__ = ["check_loops"]

_NOT_RUN = "Not run: the run failed because the model repeated a tool call (loop detected)."


def check_loops(scope: RunScope, batch: ToolBatch, calls: Sequence[ToolCall]) -> list[AgentEvent]:
    """The ``tool.loop.detected`` events of this step's calls; annotates or fails as configured."""
    config = scope.config.loop_detection
    if config is None or config.action == "off":
        return []
    state = scope.state
    repeats = find_repeats(config.threshold, state.tool_calls, calls)
    if not repeats:
        return []
    action = config.action
    events: list[AgentEvent] = [r.event(scope.run_id, action) for r in repeats]
    if action == "warn":
        for repeat in repeats:
            batch.annotate(repeat.call.id, loop_note(repeat))
        return events
    for call in calls:
        batch.refuse(call.id, "aborted", _NOT_RUN)
    first = repeats[0]
    state.fail(
        "loop_detected",
        f"The model called {first.call.name!r} {first.count} times with the same arguments "
        f"({first.call.arguments}). Raise LoopDetection(threshold=...), or use action='warn' "
        "to let the model see a warning instead.",
    )
    return events
