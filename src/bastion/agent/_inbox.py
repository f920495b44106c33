"""``Inbox``: messages sent to a plain run while it runs (``stream.steer`` / ``follow_up``).

The same two modes as a session's ``send`` (``bastion.sessions``), for a run with no
session: a steering message joins the transcript before the run's next model call (event
``agent.steered``); a follow-up waits until the run has its answer, then starts the next
turn of the same run (event ``agent.followup.queued``, with the answer it follows). A run
nobody writes to has no inbox and the loop does no work for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion.core import AgentFollowUpEvent, AgentSteeredEvent, UserMessage

if TYPE_CHECKING:
    from ._state import RunState

__all__ = ["Inbox"]


class Inbox:
    """Steering and follow-up messages waiting for a run's next drain point."""

    __slots__ = ("follow_ups", "steering")

    def __init__(self) -> None:
        self.steering: list[str] = []
        self.follow_ups: list[str] = []

    def steer(self, state: RunState) -> list[AgentSteeredEvent]:
        """Before a model call: steering messages join the transcript, in order."""
        events: list[AgentSteeredEvent] = []
        while self.steering:
            text = self.steering.pop(0)
            state.messages.append(UserMessage(content=text))
            events.append(AgentSteeredEvent(run_id=state.run_id, text=text))
        return events

    def follow_up(self, state: RunState) -> AgentFollowUpEvent | None:
        """The run completed a turn: the first follow-up, if any, starts the next one."""
        if not self.follow_ups or state.status != "completed":
            return None
        text = self.follow_ups.pop(0)
        output = state.output
        state.follow_up(UserMessage(content=text))
        return AgentFollowUpEvent(run_id=state.run_id, text=text, output=output)
