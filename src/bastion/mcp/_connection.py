"""One live session with an MCP server, owned by one long-lived task.

The SDK's transports and ``ClientSession`` are anyio context managers: entered in one task
and exited in another they raise "Attempted to exit cancel scope in a different task" (the
most reported MCP bug of the peer frameworks), and entered inside a request's cancel scope
they die with the request. So :class:`Connection` enters them in a task of its own that
lives until :meth:`Connection.close`; callers only send requests through the session,
which the SDK supports from any task. A request cancelled by its caller is abandoned with
a ``notifications/cancelled`` (the SDK's default), so cancelling a run cancels the call.

When the server goes away (its process died, the HTTP session ended) the task ends and
:attr:`Connection.alive` turns false; ``MCPServer`` then opens a new connection for the
next call.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, cast

from ._transport import Transport, open_transport

if TYPE_CHECKING:
    from anyio import CancelScope
    from mcp import ClientSession
    from mcp.client.session import ElicitationFnT, MessageHandlerFnT, SamplingFnT
    from mcp.types import InitializeResult

__all__ = ["Connection", "ConnectionLost", "is_connection_loss", "is_session_expired"]


class ConnectionLost(Exception):
    """The server went away while a request was in flight (or before it was sent)."""


def is_connection_loss(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (not an error answer of the server)."""
    import anyio
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(
        exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
    )


def is_session_expired(exc: BaseException) -> bool:
    """Whether an HTTP server rejected the request because it no longer knows the session.

    A restarted (or scaled, or idle-expired) server answers 404 "Session not found"; the
    request did not run, and the spec asks the client to start a new session. So it is
    safe to resend on a new connection, whatever the tool.
    """
    from mcp.shared.exceptions import MCPError

    if not isinstance(exc, MCPError):
        return False
    message = exc.message.lower()
    return "session not found" in message or "session terminated" in message


class Connection:
    """A session with one server, opened by :meth:`open` and ended by :meth:`close`.

    Args:
        name: The server's name (names the task).
        transport: Where the server is.
        on_message: Receives the server's notifications (``tools/list_changed``, ...).
        on_elicit: Answers the server's elicitation requests (``None``: the SDK declines).
        on_sample: Answers its sampling requests (``None``: the client cannot sample).
    """

    def __init__(
        self,
        name: str,
        transport: Transport,
        on_message: MessageHandlerFnT,
        on_elicit: ElicitationFnT | None = None,
        on_sample: SamplingFnT | None = None,
    ) -> None:
        self.name = name
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self.session: ClientSession | None = None
        self.initialized: InitializeResult | None = None
        self.error: BaseException | None = None
        self._on_message = on_message
        self._on_elicit = on_elicit
        self._on_sample = on_sample
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        """True while the session is up (initialized and its task still running)."""
        task = self._task
        return self.session is not None and task is not None and not task.done()

    async def open(self, seconds: float) -> ClientSession:
        """Start the owning task and wait for the ``initialize`` handshake.

        Raises:
            ConnectionLost: The server could not be started or did not complete the
                handshake within ``seconds`` (the task is stopped).
        """
        # Owned by this object, not by the caller's task group: the session must outlive
        # the request that happened to open it. close() ends it.
        self._task = asyncio.create_task(self._own(seconds), name=f"bastion-mcp:{self.name}")
        await self._ready.wait()
        if self.session is None:
            await self.close()
            error = self.error
            detail = f"{type(error).__name__}: {error}" if error is not None else "no answer"
            raise ConnectionLost(
                f"MCP server {self.name!r} ({self.transport.describe()}) did not start: "
                f"{_root_cause(detail, error)}"
            )
        return self.session

    async def close(self, grace: float = 5.0) -> None:
        """End the session and its transport (a stdio server's process is terminated)."""
        task = self._task
        if task is None:
            return
        self._closing.set()
        if not task.done():
            done, _ = await asyncio.wait({task}, timeout=grace)
            if not done:  # a transport that does not wind down: cancel its task
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.session = None

    async def _own(self, seconds: float) -> None:
        try:
            from mcp import ClientSession

            async with AsyncExitStack() as stack:
                read, write = await open_transport(self.transport, stack, seconds=seconds)
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._on_message,
                        elicitation_callback=self._on_elicit,
                        sampling_callback=self._on_sample,
                    )
                )
                with anyio_fail_after(seconds):
                    self.initialized = await session.initialize()
                self.session = session
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:  # reported to open(), or seen as alive == False
            self.error = exc
        finally:
            self._ready.set()


def anyio_fail_after(seconds: float) -> contextlib.AbstractContextManager[CancelScope]:
    """A deadline for the handshake (anyio's, as the SDK's own scopes are anyio's)."""
    import anyio

    return anyio.fail_after(seconds)


def _root_cause(detail: str, error: BaseException | None) -> str:
    """The innermost exception of an exception group (what actually failed)."""
    while isinstance(error, BaseExceptionGroup):
        inner = cast("tuple[BaseException, ...]", error.exceptions)
        if not inner:
            break
        error = inner[0]
        detail = f"{type(error).__name__}: {error}"
    return detail
