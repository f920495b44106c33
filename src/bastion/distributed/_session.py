"""``TemporalSession``: a client's handle on a session that lives as one Temporal workflow."""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Literal, TypeAlias

from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from bastion.core import UserError
from bastion.tools import ApprovalDecision

from ._interrupts import raise_resolution, send_resolutions
from ._session_views import SessionCarry, SessionView, carry_adapter, view_adapter
from ._shared import send_decisions

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from temporalio.client import Client, WorkflowHandle

    from bastion.core import AgentEvent, Message
    from bastion.tools import InterruptResolution

__all__ = ["TemporalSession", "open_session"]

_MODES = ("steer", "queue")

Follower: TypeAlias = "Callable[[str, int, float], AsyncIterator[AgentEvent]]"
"""Follows a workflow's published events: (workflow id, after, poll) -> the events."""


class TemporalSession:
    """A conversation with an agent that lives as one long-lived Temporal workflow.

    Get one with ``await TemporalAgent.session(client, session_id)``. Every call goes to the
    workflow by its id, so a handle keeps working across continue-as-new and from any
    process.
    """

    def __init__(
        self, handle: WorkflowHandle[object, str], send_mode: str, follower: Follower | None = None
    ) -> None:
        self._handle = handle
        self._send_mode = send_mode
        self._follower = follower

    @property
    def id(self) -> str:
        """The session's id (its workflow id)."""
        return self._handle.id

    async def send(self, text: str, mode: Literal["steer", "queue"] | None = None) -> None:
        """Send a message (the ``send`` signal); returns once the server has it.

        ``steer`` (default: the agent's ``session_send_mode``) joins the running turn before
        its next model call, denying the calls of that turn still waiting for a decision;
        ``queue`` waits for the turn to end. With no turn running, either starts one.

        Raises:
            UserError: Empty text, a mode other than ``steer`` or ``queue``, or a closed
                session.
        """
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("TemporalSession.send needs a non-empty text.")
        chosen: str = self._send_mode if mode is None else mode
        if chosen not in _MODES:  # typed, but a caller may still pass any string
            raise UserError(f"send mode must be 'steer' or 'queue', got {chosen!r}.")
        try:
            await self._handle.signal("send", args=[text, chosen])
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            raise UserError(f"Session {self.id!r} is closed: {error.message}") from None

    def follow(self, *, after: int = 0, poll: float = 0.1) -> AsyncIterator[AgentEvent]:
        """Yield the session's events with ``seq > after`` as the workers publish them.

        The events of its turns, one seq across them (each turn is a run of its own), in
        order, each once; it ends at the ``agent.end`` of a turn that ended or parked for a
        decision, or when the session is closed. Follow again from the last seq seen for
        the next turn; any process on the event store may follow, from any seq.

        Raises:
            UserError: The agent publishes no events (``TemporalAgent(events=...)``), or
                ``after`` < 0.
        """
        if self._follower is None:
            raise UserError(
                f"Session {self.id!r} publishes no events: give the TemporalAgent "
                "events='sqlite:///runs.db' (or the agent a store), on workers and clients."
            )
        if after < 0:
            raise UserError(f"after must be an event seq >= 0, got {after!r}.")
        return self._follower(self.id, after, poll)

    async def view(self) -> SessionView:
        """The session now (the ``view`` query): status, transcript, usage, pending calls."""
        return view_adapter().validate_json(await self._handle.query("view", result_type=str))

    async def history(self) -> list[Message]:
        """The transcript, with what the running turn added so far."""
        return (await self.view()).messages

    async def settle(self) -> SessionView:
        """Wait until the session is idle, waits for decisions, or is closed; its view.

        Idle: no turn runs and no message waits for one, counting every message sent
        before this call (a ``mark`` signal goes after them, and the ``settle`` update
        waits for it).
        """
        while True:
            token = uuid.uuid4().hex
            try:
                await self._handle.signal("mark", token)
                text: str = await self._handle.execute_update("settle", token, result_type=str)  # pyright: ignore[reportUnknownMemberType]
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                return await self._last()  # closed meanwhile
            if text:  # empty: the run continued as new before it settled; ask the next one
                return view_adapter().validate_json(text)

    async def decide(self, *decisions: ApprovalDecision) -> list[str]:
        """Decide calls the turn waits for (the ``decide`` update); the ids still waiting.

        Raises:
            UserError: No decision, or the workflow refused them (a call not waiting, or
                already decided).
        """
        return await send_decisions(self._handle, decisions, "TemporalSession.decide")

    async def approve(self, call_id: str) -> list[str]:
        """Approve one pending call (see :meth:`decide`)."""
        return await self.decide(ApprovalDecision(tool_call_id=call_id, granted=True))

    async def deny(self, call_id: str, reason: str | None = None) -> list[str]:
        """Deny one pending call; the model reads ``reason`` (see :meth:`decide`)."""
        return await self.decide(
            ApprovalDecision(tool_call_id=call_id, granted=False, reason=reason)
        )

    async def resolve(self, *resolutions: InterruptResolution) -> list[str]:
        """Decide governance interrupts the turn waits on (the ``resolve`` update).

        Decisions are those of ``TemporalAgent.resolve`` (``mutate``, ``deny``, ``retry``,
        ``result``). Returns the interrupt ids still waiting; the turn goes on once every
        interrupt and call it waits for is decided.

        Raises:
            UserError: No decision, or the workflow refused one (an interrupt not waiting,
                decided already, a raise that raises nothing or by someone who may not).
        """
        return await send_resolutions(self._handle, resolutions, "TemporalSession.resolve")

    async def raise_budget(
        self, interrupt_id: str, maximum: float, *, approver: str | None = None
    ) -> list[str]:
        """Raise the limit interrupt ``interrupt_id`` waits on to ``maximum``, for all workers.

        The limit's rules (``mutable_by``, ``ceiling``) judge the raise when the turn goes
        on: a refused raise leaves the interrupt pending. Returns the interrupt ids still
        waiting.

        Raises:
            UserError: ``maximum`` is no number >= 0, or the workflow refused the raise.
        """
        resolution = raise_resolution(interrupt_id, maximum, approver)
        return await self.resolve(resolution)

    async def close(self) -> SessionView:
        """Close the session once the messages sent have had their turns; its last view."""
        try:
            await self._handle.signal("close")
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        return await self._last()

    async def abort(self, mode: Literal["now", "after_turn"] = "now") -> bool:
        """Drop the messages waiting for a turn; ``now`` also aborts the turn running.

        As a local session's ``abort``: ``now`` stops the running turn (its calls waiting
        for a decision are denied; it ends ``aborted``), ``after_turn`` lets it end. The
        session stays open for the next ``send``. Returns False when there was nothing to
        abort.

        Raises:
            UserError: A mode other than ``now`` or ``after_turn``, or a closed session.
        """
        if mode not in ("now", "after_turn"):  # typed, but a caller may pass any string
            raise UserError(f"abort mode must be 'now' or 'after_turn', got {mode!r}.")
        try:
            busy: bool = await self._handle.execute_update("abort", mode, result_type=bool)  # pyright: ignore[reportUnknownMemberType]
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            raise UserError(f"Session {self.id!r} is closed: {error.message}") from None
        return busy

    async def cancel(self) -> SessionView:
        """Close the session now: abort the running turn, drop the messages still waiting.

        What the turn waits on is denied and it ends ``aborted`` (the view's ``error``);
        the transcript stays readable. Returns the session's last view.
        """
        try:
            await self._handle.cancel()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        return await self._last()

    async def _last(self) -> SessionView:
        """The view a closed session ended with."""
        return view_adapter().validate_json(await self._handle.result())


async def open_session(
    client: Client,
    *,
    workflow: str,
    task_queue: str,
    session_id: str,
    send_mode: str,
    continue_after: int,
    follower: Follower | None = None,
) -> TemporalSession:
    """Start the session's workflow, or attach to the one running (or closed) under its id."""
    if not isinstance(session_id, str) or not session_id.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError("A Temporal session needs a non-empty session id.")
    if continue_after < 10:
        raise UserError(
            f"continue_after must be at least 10 history events, got {continue_after!r}."
        )
    carry = carry_adapter().dump_json(SessionCarry(continue_after=continue_after)).decode()
    # already closed under this id: its transcript is still readable, sends are refused
    with contextlib.suppress(WorkflowAlreadyStartedError):
        await client.start_workflow(
            workflow,
            carry,
            id=session_id,
            task_queue=task_queue,
            result_type=str,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
    handle = client.get_workflow_handle(session_id, result_type=str)  # the latest run, always
    return TemporalSession(handle, send_mode, follower)
