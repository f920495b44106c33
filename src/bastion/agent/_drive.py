"""``AgentDrive``: a run the application drives, deciding each tool call with ``asend``.

The drive is an async generator of the run's events. Before each tool call runs it yields
the call's ``tool.approval.requested`` event and waits: the value the application sends
next (``await drive.asend(decision)``) decides the call. ``None`` (what ``async for``
sends) or ``Allow()`` runs it, ``Rewrite(arguments)`` runs it with other arguments,
``Mock(result)`` skips it with that result, ``Deny(reason)`` refuses it (the model reads the
reason). An ``ApprovalDecision`` may be sent as well.

The decisions pass the agent's own tool gate as the approvals of an ``on_approval``
callback do: the agent's ``ToolOptions.deny``, governance and ``before_call`` hooks decide
first (a call they decide is not sent to the application), every other call is asked; the
journal is flushed before each question and records each decided call's start and result,
so a run resumed after a crash (``agent.drive(resume=run_id)``) asks again only about the
calls that had not started.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeAlias

from bastion.core import AgentEvent, RunContext, ToolApprovalRequestedEvent, UserError, UserPart
from bastion.tools import (
    Allow,
    ApprovalConfig,
    ApprovalDecision,
    ApprovalRequest,
    Ask,
    Deny,
    Directive,
    Mock,
    Rewrite,
    ToolExecutor,
)

from ._result import OutputT, RunResult
from ._state import RunState
from ._stream import AgentStream

if TYPE_CHECKING:
    from ._agent import Agent
    from ._run_args import DriveOptions

__all__ = ["AgentDrive", "DriveDecision", "start_drive"]

DriveDecision: TypeAlias = Allow | Deny | Rewrite | Mock | ApprovalDecision | None
"""What the application sends for a tool call (``None``: run it as asked)."""

_NO_TIMEOUT = 365 * 24 * 3600.0
"""The drive's questions never time out: the application answers before the run goes on."""


class _Desk:
    """The decisions sent for the calls asked, awaited by the gate's approval stage."""

    def __init__(self) -> None:
        self._decided: dict[str, asyncio.Future[ApprovalDecision]] = {}

    def _future(self, call_id: str) -> asyncio.Future[ApprovalDecision]:
        future = self._decided.get(call_id)
        if future is None:
            future = self._decided[call_id] = asyncio.get_running_loop().create_future()
        return future

    def decide(self, call_id: str, decision: ApprovalDecision) -> None:
        future = self._future(call_id)
        if not future.done():
            future.set_result(decision)

    async def on_approval(
        self, request: ApprovalRequest, ctx: RunContext[object]
    ) -> ApprovalDecision:
        try:
            return await self._future(request.tool_call_id)
        finally:
            self._decided.pop(request.tool_call_id, None)


class AgentDrive(AsyncGenerator[AgentEvent, DriveDecision], Generic[OutputT]):
    """A run driven by the application: its events, and a decision sent for each tool call.

    Example::

        async with agent.drive("Tidy the repo") as run:
            event = await run.asend(None)
            while True:
                decision = None
                if event.type == "tool.approval.requested":
                    decision = Deny("not today") if event.tool_name == "rm" else None
                try:
                    event = await run.asend(decision)
                except StopAsyncIteration:
                    break
        print(run.result.output)
    """

    def __init__(self, stream: AgentStream[OutputT], desk: _Desk) -> None:
        self._stream = stream
        self._desk = desk
        self._asking: ToolApprovalRequestedEvent | None = None

    @property
    def run_id(self) -> str:
        """Id of the run."""
        return self._stream.run_id

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result, once ``agent.end`` was received (else ``UserError``)."""
        return self._stream.result

    @property
    def asking(self) -> ToolApprovalRequestedEvent | None:
        """The call waiting for a decision: the last event, when it asks for one."""
        return self._asking

    async def asend(self, value: DriveDecision) -> AgentEvent:
        """Decide the call the last event asked about (if any); return the next event.

        Raises:
            UserError: A decision was sent when no call waits for one, or it is not a
                decision (``Ask`` is not one: the application is the one asked).
            StopAsyncIteration: The run has ended.
        """
        asking = self._asking
        if asking is not None:
            self._desk.decide(asking.tool_call_id, _approval(asking, value))
            self._asking = None
        elif value is not None:
            raise UserError(
                f"A decision ({value!r}) was sent, but no tool call waits for one: send "
                "decisions after a 'tool.approval.requested' event, None otherwise."
            )
        event = await self._stream.__anext__()
        if isinstance(event, ToolApprovalRequestedEvent):
            self._asking = event
        return event

    async def athrow(
        self,
        typ: type[BaseException] | BaseException,
        val: object = None,
        tb: TracebackType | None = None,
    ) -> AgentEvent:
        """Stop the run (it is aborted when it has not ended), then raise the exception."""
        await self.aclose()
        if isinstance(typ, BaseException):
            raise typ
        raise typ(val) if val is not None else typ()

    async def aclose(self) -> None:
        """Stop driving; a run not yet ended is aborted so it ends cleanly."""
        asking, self._asking = self._asking, None
        if asking is not None:  # the call is refused, so the run's abort can go on
            self._desk.decide(
                asking.tool_call_id,
                ApprovalDecision(tool_call_id=asking.tool_call_id, granted=False),
            )
        await self._stream.aclose()

    async def __aenter__(self) -> AgentDrive[OutputT]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _approval(asking: ToolApprovalRequestedEvent, value: object) -> ApprovalDecision:
    """The application's decision on ``asking`` as the gate's ``ApprovalDecision``."""
    call_id = asking.tool_call_id
    match value:
        case None | Allow():
            return ApprovalDecision(tool_call_id=call_id, granted=True)
        case Deny(reason=reason):
            return ApprovalDecision(tool_call_id=call_id, granted=False, reason=reason)
        case Rewrite(arguments=arguments):
            return ApprovalDecision(tool_call_id=call_id, granted=True, arguments=dict(arguments))
        case Mock(result=result):
            text = result if isinstance(result, str) else json.dumps(result, default=str)
            return ApprovalDecision(tool_call_id=call_id, granted=True, result=text)
        case ApprovalDecision():
            return replace(value, tool_call_id=call_id)
        case Ask():
            raise UserError(
                f"Ask() is not a decision for the call to {asking.tool_name!r}: the "
                "application is the one asked. Send None/Allow(), Deny(reason), "
                "Rewrite(arguments) or Mock(result)."
            )
        case _:
            raise UserError(
                f"{value!r} is not a decision for the call to {asking.tool_name!r}: send "
                "None/Allow(), Deny(reason), Rewrite(arguments) or Mock(result)."
            )


def start_drive(  # noqa: PLR0917 - the options of Agent.drive, passed on
    agent: Agent[Any, OutputT],
    input: str | Sequence[UserPart] | RunState | None,
    resume: str | None,
    directive: Directive | None,
    deps: object,
    options: DriveOptions,
) -> AgentDrive[OutputT]:
    """The drive of a new run, of a kept state, or of the journaled run ``resume``."""
    desk = _Desk()
    config = agent.config
    asking = ApprovalConfig(policy="all", on_approval=desk.on_approval, timeout=_NO_TIMEOUT)

    def ask(executor: ToolExecutor) -> ToolExecutor:
        gate = executor.gate
        return executor.with_gate(gate.with_approval(asking, gate.governor))

    variant = replace(config, executor=ask(config.executor), handoff_gate=ask)
    driven = agent._derive(variant)  # pyright: ignore[reportPrivateUsage]
    if resume is not None:
        if input is not None or options:
            raise UserError(
                "drive(resume=run_id) continues a journaled run: pass no input and no run "
                "options (only directive= and deps=)."
            )
        return AgentDrive(driven.resume_stream(resume, directive=directive, deps=deps), desk)
    stream = driven.stream(input, deps=deps, directive=directive, **options)
    return AgentDrive(stream, desk)
