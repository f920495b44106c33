"""A session as one long-lived workflow: turns of the unchanged loop, steered by signals.

Each turn is one run of the agent's loop, configured as the agent workflow configures it
(activity models and tools, the workflow's clock and ids). A ``send`` signal queues a
message or steers the running turn: the turn's session link adds steering messages to the
transcript before its next model call, as a local session does. Approvals park the turn
until the ``decide`` update has decided every pending call; a governance interrupt (a
budget reached, a policy asking) parks it until the ``resolve`` update decides it, the
limits counted in the store every worker shares. Between two turns, once the history is
long (or Temporal suggests it), the workflow continues as new with the transcript, usage,
session state and waiting messages as the next run's input. Cancelling the workflow
closes the session: the running turn is aborted (what it waits on denied), the messages
still waiting are dropped, and the workflow ends with its view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from bastion.core import Message, Usage, UserMessage, id_source
from bastion.tools import ApprovalDecision, Deny, Directive

from ._events import SESSION_PATCH, WorkflowEvents
from ._governance import governed
from ._interrupts import DecidingWorkflow
from ._session_views import (
    SessionCarry,
    SessionStatusName,
    SessionView,
    carry_adapter,
    view_adapter,
)
from ._shared import cancel_as_abort, define_workflow
from ._wiring import workflow_config
from ._workflow import ABORTED

if TYPE_CHECKING:
    from bastion.agent import Agent, AgentStream, RunConfig, RunResult
    from bastion.core import ModelResponse, RunContext, RunErrorInfo
    from bastion.tools import ApprovalRequest, BeforeToolCall, ToolCallDecision, ToolCallRequest

    from ._proxies import Activities

__all__ = ["STEERED", "SessionWorkflow", "session_workflow"]

STEERED = "steered"
"""The reason a call not yet decided is denied when a steering message arrives."""


class _Link:
    """The session's side of each turn's run (``bastion.agent.SessionLink``)."""

    def __init__(self, owner: SessionWorkflow, state: dict[str, Any]) -> None:
        self._owner = owner
        self.state = state

    @property
    def before_tool_call(self) -> BeforeToolCall:
        return self._decide

    def _decide(self, request: ToolCallRequest) -> ToolCallDecision | None:
        """Steering arrived: the calls of this step not decided yet are skipped."""
        return Deny(STEERED) if self._owner.steering else None

    async def before_model_call(self, ctx: RunContext[object], messages: list[Message]) -> None:
        owner = self._owner
        owner.live = messages
        while owner.steering:
            messages.append(UserMessage(content=owner.steering.pop(0)))

    async def after_model_call(self, ctx: RunContext[object], response: ModelResponse) -> None:
        self._owner.live = ctx.messages


class SessionWorkflow(DecidingWorkflow):
    """The session workflow of one agent; :func:`session_workflow` makes one per agent."""

    agent: Agent[object, object]
    activities: Activities

    @workflow.init
    def __init__(self: SessionWorkflow, carry: str) -> None:  # the run method's parameters
        # the input is read here, not in run: signal and update handlers may run first
        super().__init__()
        given = carry_adapter().validate_json(carry)
        self.steering: list[str] = list(given.steering)
        self.live: list[Message] | None = None
        self._queue: list[str] = list(given.queue)
        self._messages: list[Message] = list(given.messages)
        self._base = given.usage
        self._spent = [Usage()]  # the model calls of this workflow run (the models add)
        self._turns = given.turns
        self._generation = given.generation
        self._limit = given.continue_after
        self._link = _Link(self, dict(given.state))
        self._running = False
        self._closed = False
        self._rolling = False
        self._marks = set(given.marks)  # the settle tokens whose mark signal arrived
        self._error: RunErrorInfo | None = given.error
        self._pending: dict[str, ApprovalRequest] = {}
        self._decided: dict[str, ApprovalDecision] = {}
        self._stream: AgentStream[object] | None = None
        self._aborted = False  # the workflow was cancelled: the session closes
        self._turn_aborted = False  # the ``abort`` update stopped the turn now running
        self._events = WorkflowEvents(
            activity=self.activities.publish, renumber=True, seq=given.published,
            patch=SESSION_PATCH,
        )  # fmt: skip

    async def execute(self) -> str:
        """Run the session; a cancellation of the workflow aborts its turn and closes it."""
        return await cancel_as_abort(self._body(), self._cancelled)

    def _cancelled(self) -> None:
        """The workflow was cancelled: abort the turn, drop what waits, close."""
        self._aborted = self._closed = True
        self.steering.clear()
        self._queue.clear()
        if self._stream is not None:
            self._stream.abort()

    async def _body(self) -> str:
        """Run turns as messages arrive until closed; continue as new when history is long."""
        config = workflow_config(self.agent.config, self.activities, self._spent)
        config = governed(config, self.activities.counters)
        link = self._link
        with id_source(lambda: workflow.uuid4().hex):
            while True:
                await workflow.wait_condition(lambda: self._waiting() > 0 or self._closed)
                if self._waiting() == 0:
                    break  # closed, and nothing waits
                await self._turn(config, link)
                if not self._closed and self._history_long(self._limit):
                    self._rolling = True  # a settle waiting now answers from the next run
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    if not self._closed:  # a close that came meanwhile ends this run
                        workflow.continue_as_new(self._carry())
                    self._rolling = False
        self._closed = True
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self.view()

    def _carry(self) -> str:
        carry = SessionCarry(
            messages=self._messages,
            usage=self._base + self._spent[0],
            turns=self._turns,
            steering=list(self.steering),
            queue=list(self._queue),
            state=self._link.state,
            continue_after=self._limit,
            generation=self._generation + 1,
            error=self._error,
            published=self._events.seq,
            marks=sorted(self._marks),  # a settle's update may come after its mark
        )
        return carry_adapter().dump_json(carry).decode()

    def _waiting(self) -> int:
        return len(self.steering) + len(self._queue)

    @staticmethod
    def _history_long(limit: int) -> bool:
        info = workflow.info()
        return info.get_current_history_length() >= limit or info.is_continue_as_new_suggested()

    async def _turn(self, config: RunConfig, link: _Link) -> None:
        """Run the next waiting message's turn to its end, through any approvals."""
        text = self.steering.pop(0) if self.steering else self._queue.pop(0)
        self._running, self._error = True, None
        history = [*self._messages, UserMessage(content=text)]
        stream = self.agent.stream(
            None,
            message_history=history,
            session_id=workflow.info().workflow_id,
            config=config,
            session_link=link,
        )
        result = await self._drive(stream)
        while result.status == "awaiting_approval":
            self._messages = _conversation(result.messages)  # what the view shows meanwhile
            await self._events.flush()  # a follower sees the turn park
            directive = await self._park(result)
            stream = self.agent.stream(
                result.state, directive=directive, config=config, session_link=link
            )
            result = await self._drive(stream)
        await self._events.flush()
        self._messages = _conversation(result.messages)
        self._turn_aborted = False
        self._error = result.error
        self._turns += 1
        self._running, self.live = False, None

    async def _drive(self, stream: AgentStream[object]) -> RunResult[object]:
        """Drain a turn's stream (aborted at once when the workflow was cancelled)."""
        self._stream = stream
        if self._aborted or self._turn_aborted:
            stream.abort()
        try:
            return await self._events.drain(stream)
        finally:
            self._stream = None

    async def _park(self, result: RunResult[object]) -> Directive:
        """Wait until every pending call and interrupt is decided, or steering denies the rest."""
        held = self.park_interrupts(result)  # calls held by an interrupt: decided with it
        pending = result.pending_approvals
        self._pending = {p.tool_call_id: p for p in pending if p.tool_call_id not in held}
        self.live = None
        await workflow.wait_condition(
            lambda: self._all_decided() or bool(self.steering) or self._stopping()
        )
        self.deny_the_rest(self._pending, self._decided, ABORTED if self._stopping() else STEERED)
        directive = Directive(
            approvals=[self._decided[c] for c in self._pending],
            interrupts=self.take_resolutions(),
        )
        self._pending, self._decided = {}, {}
        return directive

    # handlers

    @workflow.signal
    def send(self, text: str, mode: str) -> None:
        """A message: ``steer`` joins the running turn before its next model call."""
        (self.steering if mode == "steer" and self._running else self._queue).append(text)

    @workflow.signal
    def close(self) -> None:
        """End the session once the messages already sent have had their turns."""
        self._closed = True

    def _stopping(self) -> bool:
        return self._aborted or self._turn_aborted

    @workflow.update
    async def abort(self, mode: str) -> bool:
        """Drop the messages waiting; ``now`` also aborts the turn running (its waits denied).

        Returns whether there was anything to abort.
        """
        busy = self._running or self._waiting() > 0
        self.steering.clear()
        self._queue.clear()
        if mode == "now" and self._running:
            self._turn_aborted = True
            if self._stream is not None:
                self._stream.abort()
        return busy

    @abort.validator
    def check_abort(self, mode: str) -> None:
        """Refuse a mode other than ``now`` or ``after_turn``."""
        if mode not in ("now", "after_turn"):
            raise ApplicationError(f"abort mode must be 'now' or 'after_turn', got {mode!r}.")

    @workflow.signal
    def mark(self, token: str) -> None:
        """A settle's token: the signals sent before it have been applied."""
        self._marks.add(token)

    @workflow.update
    async def settle(self, token: str) -> str:
        """Wait until the session is idle, waits for decisions, or is closed; its view.

        It first waits for the ``mark`` signal of ``token``: an update may overtake
        signals sent before it, signals keep their order among themselves. An empty
        answer: the session continued as new meanwhile (ask the next run).
        """
        await workflow.wait_condition(
            lambda: token in self._marks and (self._status() != "running" or self._rolling)
        )
        self._marks.discard(token)
        return "" if self._status() == "running" else self.view()

    @workflow.query
    def view(self) -> str:
        """The session now: status, transcript, usage, pending calls, as JSON."""
        live = self.live
        view = SessionView(
            session_id=workflow.info().workflow_id,
            status=self._status(),
            messages=self._messages if live is None else _conversation(live),
            usage=self._base + self._spent[0],
            turns=self._turns,
            waiting=self._waiting(),
            pending=list(self._pending.values()),
            interrupts=self.interrupt_views(),
            error=self._error,
            generation=self._generation,
        )
        return view_adapter().dump_json(view).decode()

    def _status(self) -> SessionStatusName:
        if self._pending or self.interrupt_views():
            return "awaiting_approval"
        if self._running or self._waiting():
            return "running"
        return "closed" if self._closed else "idle"


def _conversation(messages: list[Message]) -> list[Message]:
    """``messages`` without the leading system prompt (the agent's, not the session's)."""
    start = 0
    while start < len(messages) and messages[start].role == "system":
        start += 1
    return list(messages[start:])


async def _run(self: SessionWorkflow, carry: str) -> str:
    """The run method every agent's session workflow class shares (``__init__`` read ``carry``)."""
    return await self.execute()


def session_workflow(agent: Agent[object, object], name: str, activities: Activities) -> type:
    """The session workflow class of ``agent``, registered under ``name``."""
    return define_workflow(SessionWorkflow, _run, agent, name, activities)
