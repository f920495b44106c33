"""``ServerConnection``: the base of :class:`~bastion.mcp.MCPServer`: its one connection.

Opened lazily, one per event loop, replaced when the server died or an HTTP session expired
(``_request`` retries once then); the server's own requests in the middle of a call
(elicitation, sampling) and its notifications are answered here.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Self, TypeVar

from bastion.tools import Tool

from ._asking import CallScope, Question, sample
from ._connection import Connection, ConnectionLost, is_connection_loss, is_session_expired
from ._options import ServerOptions
from ._transport import Transport

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client.session import ClientRequestContext, IncomingMessage
    from mcp.types import (
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        ErrorData,
    )
    from mcp.types import Tool as WireTool

__all__ = ["ServerConnection"]

T = TypeVar("T")


class ServerConnection:
    """An MCP server's connection: opened when first needed, shared, opened again."""

    def __init__(self, transport: Transport, options: ServerOptions) -> None:
        self.transport = transport
        self.options = options
        self.name = options.name
        self._conn: Connection | None = None
        self._locks: dict[int, tuple[asyncio.Lock, asyncio.Lock]] = {}
        self._tools: tuple[Tool, ...] | None = None
        self._wire_tools: tuple[WireTool, ...] = ()
        self._stale = True
        self._restarts = -1  # connections opened, minus the first
        self._links: OrderedDict[str, bytes] = OrderedDict()
        self._inflight = 0  # calls waiting for an answer of the server
        self._scopes: list[CallScope] = []  # the agent calls among them

    async def __aenter__(self) -> Self:
        await self._session()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def connected(self) -> bool:
        """Whether a session with the server is up."""
        conn = self._conn
        return conn is not None and conn.alive

    @property
    def restarts(self) -> int:
        """How often the connection was opened again after the first time."""
        return max(self._restarts, 0)

    async def aclose(self) -> None:
        """Stop the server (or end the HTTP session); a later call starts it again."""
        conn, self._conn = self._conn, None
        if conn is not None and conn.loop is asyncio.get_running_loop():
            await conn.close()

    async def _session(self) -> ClientSession:
        conn = self._conn
        loop = asyncio.get_running_loop()
        if conn is not None and conn.alive and conn.loop is loop:
            assert conn.session is not None
            return conn.session
        async with self._lock(0):
            conn = self._conn
            if conn is not None and conn.alive and conn.loop is loop:
                assert conn.session is not None
                return conn.session
            if conn is not None and conn.loop is loop:
                await conn.close(grace=1.0)
            self._conn = None
            fresh = Connection(
                self.name,
                self.transport,
                self._on_message,
                self._on_elicit,
                self._on_sample if self.options.sampling is not None else None,
            )
            session = await fresh.open(self.options.connect_timeout)
            self._conn = fresh
            self._restarts += 1
            if self._restarts > 0:
                self._stale = True  # a restarted server may list other tools
            return session

    def _lock(self, which: int) -> asyncio.Lock:
        # One pair of locks per event loop: an agent used by several asyncio.run() calls
        # (run_sync) must not share a lock bound to a closed loop.
        key = id(asyncio.get_running_loop())
        pair = self._locks.get(key)
        if pair is None:
            self._locks = {key: (pair := (asyncio.Lock(), asyncio.Lock()))}
        return pair[which]

    async def _on_message(self, message: IncomingMessage) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._stale = True

    def _only_scope(self) -> CallScope | None:
        """The agent call a server's request belongs to: the one call in flight, if any."""
        scopes = self._scopes
        return scopes[0] if self._inflight == 1 and len(scopes) == 1 else None

    async def _on_elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        """Answer a server's question asked in the middle of a call.

        ``on_elicit`` answers it when given. Otherwise, the question of an agent's call
        gets the answer a person gave (a resumed call), or suspends the run (see
        ``_asking.py``). Anything else is declined, so the server can go on (the SDK's
        default, "not supported", fails its call).
        """
        from mcp.types import INTERNAL_ERROR, ElicitRequestFormParams, ElicitResult, ErrorData

        if not isinstance(params, ElicitRequestFormParams):  # URL elicitation: not supported
            return ElicitResult(action="decline")
        handler = self.options.on_elicit
        if handler is not None:
            try:
                answer = await handler(params.message, dict(params.requested_schema))
            except Exception as exc:  # the server gets an error answer; the call goes on
                return ErrorData(code=INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}")
            if answer is None:
                return ElicitResult(action="decline")
            return ElicitResult(action="accept", content=answer)
        scope = self._only_scope()
        if scope is None or self.options.elicitation == "decline":
            return ElicitResult(action="decline")
        question = Question(params.message, dict(params.requested_schema))
        given = scope.answer_for(question)
        if given is not None:
            return ElicitResult(action=given["action"], content=given["content"])
        scope.ask(question)  # the tool drops the call's result and suspends the run
        return ElicitResult(action="cancel")  # nobody answered yet

    async def _on_sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        """Answer a server's ``sampling/createMessage`` with the configured model."""
        from mcp.types import INTERNAL_ERROR, ErrorData

        model = self.options.sampling
        assert model is not None  # the callback is installed only with a model
        scope = self._only_scope()
        if scope is None and self._scopes:
            return ErrorData(
                code=INTERNAL_ERROR,
                message="Several calls are in flight: cannot tell which run this sampling "
                "request belongs to, so it is refused.",
            )
        try:
            return await sample(model, params, scope, self.name)
        except Exception as exc:  # refused by the governor, or the model failed
            return ErrorData(code=INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}")

    async def _request(
        self, what: str, send: Callable[[ClientSession], Awaitable[T]], *, retry: bool
    ) -> T:
        """Send one request; a lost connection is dropped (and retried once if ``retry``).

        A request an HTTP server rejected for an unknown session (it restarted) is resent
        once on a new session whatever ``retry`` says: it never ran.

        Raises:
            ConnectionLost: The server could not be reached, or went away mid-request.
        """
        for attempt in (1, 2):
            session = await self._session()
            conn = self._conn
            try:
                return await send(session)
            except Exception as exc:
                expired = is_session_expired(exc)  # not run by the server: safe to resend
                if not expired and conn is not None and conn.alive and not is_connection_loss(exc):
                    raise
                if self._conn is conn:
                    self._conn = None
                if conn is not None:
                    await conn.close(grace=1.0)
                if not (retry or expired) or attempt == 2:
                    raise ConnectionLost(
                        f"MCP server {self.name!r} went away during {what} "
                        f"({type(exc).__name__}: {exc})"
                    ) from exc
        raise AssertionError("unreachable")  # pragma: no cover
