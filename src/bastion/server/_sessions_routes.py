"""The HTTP routes of sessions: create, send (steer / queue), stream, history, decisions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.types import DecoratedCallable
from pydantic import JsonValue

from bastion.core import Message, message_adapter
from bastion.stores import MAX_SEQ
from bastion.tools import ApprovalDecision, Directive

from ._auth import Caller
from ._choices import denial, directive_of, raised_limit
from ._errors import NotFound, Unavailable, error_responses
from ._follow import sse
from ._models import Decision, RaiseBudget
from ._routes import _after  # pyright: ignore[reportPrivateUsage]
from ._served_session import ServedSession
from ._service import Service
from ._session_models import CreateSession, History, SendMessage, Sent, SessionList, SessionView
from ._sessions import Sessions

__all__ = ["sessions_router"]


def _sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.bastion_sessions
    return sessions


def _caller(request: Request) -> Caller:
    service: Service = request.app.state.bastion
    return service.caller(request)


Sess = Annotated[Sessions, Depends(_sessions)]
Who = Annotated[Caller, Depends(_caller)]

_ERRORS = error_responses(400, 401, 404, 409, 413, 422, 503)
sessions_router = APIRouter(responses=_ERRORS, tags=["sessions"])


def _decision_route(action: str) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """Route ``POST /sessions/{session_id}/approvals/{item_id}/<action>`` (202, the view)."""
    path = f"/sessions/{{session_id}}/approvals/{{item_id}}/{action}"
    return sessions_router.post(path, status_code=202, response_model=SessionView)


@sessions_router.post("/sessions", status_code=201, response_model=SessionView)
async def create_session(body: CreateSession, sessions: Sess, caller: Who) -> SessionView:
    """Open a conversation with a served agent; send it messages at ``/sessions/{id}/messages``."""
    served = await sessions.create(caller, body.agent, body.session_id, body.send_mode)
    return served.view()


@sessions_router.get("/sessions", response_model=SessionList)
async def list_sessions(
    *,
    sessions: Sess,
    caller: Who,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
) -> SessionList:
    """The caller's sessions, newest first."""
    return await sessions.list(caller, limit=limit, offset=offset)


@sessions_router.get("/sessions/{session_id}", response_model=SessionView)
async def get_session(session_id: str, sessions: Sess, caller: Who) -> SessionView:
    """One session: status (idle, running, waiting), its runs, what it waits for."""
    return (await sessions.get(session_id, caller)).view()


@sessions_router.post("/sessions/{session_id}/messages", status_code=202, response_model=Sent)
async def send_message(session_id: str, body: SendMessage, sessions: Sess, caller: Who) -> Sent:
    """Send a user message: it starts a turn, or steers or queues behind the running one."""
    served = await sessions.get(session_id, caller)
    if sessions.manager.draining:
        raise Unavailable("The server is shutting down; send the message to another one.")
    sent = served.session.send(body.text, body.mode)
    served.watch()
    return Sent(
        session_id=session_id, mode=sent.mode, status=sent.status,
        events=f"/sessions/{session_id}/events",
    )  # fmt: skip


@sessions_router.get("/sessions/{session_id}/messages", response_model=History)
async def history(session_id: str, sessions: Sess, caller: Who) -> History:
    """The transcript: user, assistant and tool messages, oldest first."""
    served = await sessions.get(session_id, caller)
    return History(session_id=session_id, messages=[_dump(m) for m in served.session.messages])


@sessions_router.post("/sessions/{session_id}/abort", response_model=SessionView)
async def abort_session(session_id: str, sessions: Sess, caller: Who) -> SessionView:
    """Abort the turn in flight and drop the messages waiting for a turn."""
    served = await sessions.get(session_id, caller)
    served.session.abort()
    served.watch()
    return served.view()


@sessions_router.get(
    "/sessions/{session_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def session_events(
    session_id: str,
    sessions: Sess,
    caller: Who,
    last_event_id: Annotated[str | None, Header()] = None,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
) -> StreamingResponse:
    """The session's events as Server-Sent Events (``id`` is the event's seq).

    The stream ends when the session settles (its ``idle`` event: idle, or waiting for a
    decision). Reconnect with ``Last-Event-ID`` (or ``?after=SEQ``) to get only the events
    after it.
    """
    served = await sessions.get(session_id, caller)
    start = _after(last_event_id, after)

    async def body() -> AsyncIterator[bytes]:
        async for event in sessions.events(served, start):
            yield sse(event)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


@_decision_route("approve")
async def approve(
    session_id: str, item_id: str, body: Decision, sessions: Sess, caller: Who
) -> SessionView:
    """Approve a call the session's turn waits for (``result``: record it instead)."""
    served = await _waiting(sessions, session_id, item_id, caller)
    decision = ApprovalDecision(tool_call_id=item_id, granted=True, result=body.result)
    return _decide(served, Directive(approvals=[decision]))


@_decision_route("deny")
async def deny(
    session_id: str, item_id: str, body: Decision, sessions: Sess, caller: Who
) -> SessionView:
    """Deny a call (the model reads the reason) or a budget interrupt."""
    served = await _waiting(sessions, session_id, item_id, caller)
    held = any(i.id == item_id and i.kind == "interrupt" for i in served.pending())
    return _decide(served, directive_of(denial(item_id, body.reason, interrupt=held)))


@_decision_route("raise")
async def raise_budget(
    session_id: str, item_id: str, body: RaiseBudget, sessions: Sess, caller: Who
) -> SessionView:
    """Raise the limit a budget interrupt stopped at to ``max``, and retry."""
    served = await _waiting(sessions, session_id, item_id, caller)
    item = next(i for i in served.pending() if i.id == item_id)
    if item.limit is None:
        raise NotFound(f"Session {session_id} has no pending budget interrupt {item_id!r}.")
    return _decide(served, directive_of(raised_limit(item, body.max)))


async def _waiting(
    sessions: Sessions, session_id: str, item_id: str, caller: Caller
) -> ServedSession:
    served = await sessions.get(session_id, caller)
    if item_id not in {i.id for i in served.pending()}:
        raise NotFound(f"Session {session_id} does not wait for a decision on {item_id!r}.")
    return served


def _decide(served: ServedSession, directive: Directive) -> SessionView:
    served.session.decide(directive)
    served.watch()
    return served.view()


def _dump(message: Message) -> dict[str, JsonValue]:
    dumped: dict[str, JsonValue] = message_adapter().dump_python(message, mode="json")
    return dumped
