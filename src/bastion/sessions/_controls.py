"""``SessionControls``: what a caller does to a session: send, decide, abort, wait."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Literal

from bastion.core import JsonValue, UserError
from bastion.tools import ApprovalDecision, Directive

from ._events import SendMode, check_mode
from ._sent import SentMessage
from ._suspension import Suspension
from ._transcript import DECIDED
from ._turns import TurnRunner

__all__ = ["SessionControls"]


class SessionControls(TurnRunner):
    """Sending, approvals and aborts on top of the loop of turns."""

    # sending

    def send(self, text: str, mode: SendMode | None = None) -> SentMessage:
        """Send a user message; returns at once with a handle to abort its work.

        Idle: starts the loop. Running and ``steer``: the message joins before the next
        model call and tool calls not yet decided are denied (``steered``); a turn waiting
        for approvals has them denied and goes on. Running (or waiting) and ``queue``: the
        message is processed after the current turn, in the same loop.

        Raises:
            UserError: ``mode`` is not ``steer`` or ``queue``.
        """
        chosen = self.send_mode if mode is None else check_mode(mode, "mode")
        sent = SentMessage(self, text, chosen)
        (self._steering if chosen == "steer" else self._queue).append(sent)
        self._kick()
        return sent

    async def wait_for_idle(self) -> None:
        """Return when the loop settles or waits for approvals; raise the loop's error."""
        while self._records:  # decisions being stored
            await asyncio.gather(*self._records)
        task = self._task
        if task is None:
            return
        await asyncio.shield(task)

    # approvals

    def approve(
        self, tool_call_id: str, *, arguments: Mapping[str, JsonValue] | None = None
    ) -> None:
        """Approve a pending call (optionally with edited ``arguments``); see :meth:`decide`."""
        edited = dict[str, object](arguments) if arguments is not None else None
        decision = ApprovalDecision(tool_call_id=tool_call_id, granted=True, arguments=edited)
        self.decide(Directive(approvals=[decision]))

    def deny(self, tool_call_id: str, reason: str | None = None) -> None:
        """Deny a pending call; the model reads ``reason``. See :meth:`decide`."""
        decision = ApprovalDecision(tool_call_id=tool_call_id, granted=False, reason=reason)
        self.decide(Directive(approvals=[decision]))

    def decide(self, directive: Directive) -> None:
        """Decide pending approvals (and governance interrupts); returns at once.

        Once every pending call and interrupt is decided, the turn goes on where it stopped
        (``wait_for_idle()`` to wait for it). Each decision is stored at once (a ``decided``
        entry), so a session reopened in another process keeps it.

        Raises:
            UserError: The session waits for no decision, or the directive names a call or
                interrupt that is not pending.
        """
        if self._suspended is None:
            if not self._loaded and self._agent.config.store is not None:
                raise UserError(
                    f"Session {self.id!r} has not been read from its store yet: open it with "
                    f"`await Session.resume(agent, {self.id!r})` to decide what it waits for."
                )
            raise UserError(f"Session {self.id!r} is not waiting for approvals.")
        self._suspended.add(directive, self.id)
        self._record(directive)
        self._kick()

    def _record(self, directive: Directive) -> None:
        """Store a decision at once (a ``decided`` entry), before the turn resumes."""
        write = self._transcript.mark(DECIDED, Suspension.payload(directive))
        task = asyncio.get_running_loop().create_task(write)
        self._records.add(task)
        task.add_done_callback(self._records.discard)

    # aborting

    def abort(self, mode: Literal["now", "after_turn"] = "now") -> bool:
        """Abort the current turn (or let it end) and drop the messages waiting for a turn.

        ``now``: the run stops (tools are cancelled, calls waiting for approval are
        denied), every tool call gets a result, listeners get ``error`` with
        :class:`TurnAborted`. ``after_turn``: the turn in progress runs to its end (a turn
        waiting for approvals waits for them) and nothing after it runs. Either way what
        the turn did is stored (messages, and the usage of each model call), the transcript
        stays valid, and the session takes the next ``send()``. Returns False when there
        was nothing to do.

        Raises:
            UserError: ``mode`` is not ``now`` or ``after_turn``.
        """
        if mode not in ("now", "after_turn"):
            raise UserError(f"abort(mode={mode!r}): use 'now' or 'after_turn'.")
        dropped = [*self._steering, *self._queue]
        for sent in dropped:
            sent.status = "aborted"
        self._steering.clear()
        self._queue.clear()
        if mode == "after_turn":
            return bool(dropped) or self._in_turn or self._suspended is not None
        return self._abort_turn() or bool(dropped)
