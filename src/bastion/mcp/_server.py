"""``MCPServer``: an MCP server as a tool source of agents, started lazily, shared, restarted.

An agent asks the server for its tools before every model call (``ToolSource``); the first
ask starts the server (a subprocess, or an HTTP session) and lists its tools, later asks
return the cached tuple until the server says ``tools/list_changed`` or was restarted.
Every run of the agent shares the one connection (``_connection.py``), which a server that
died is replaced by at the next call. Each tool call is governed as
``tool:<server>:<tool>`` and its output is untrusted (trust class ``mcp_derived``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from bastion.core import RunContext, UserError
from bastion.observability import trace_headers
from bastion.security import InboundPolicy, sanitize_inbound
from bastion.tools import ResultReadError, Tool, ToolError, ToolResult
from bastion.tools._read_result import READ_RESULT_MAX_BYTES, read_line_range

from ._asking import CallScope, Question, sample, wait_or_ask
from ._connection import Connection, ConnectionLost, is_connection_loss, is_session_expired
from ._convert import RawSchema, link_handle, resource_text, to_output
from ._naming import arguments_key, check_url, local_name, stdio_name, url_name
from ._options import ServerOptions
from ._transport import Transport

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import CallToolResult
    from mcp.types import Tool as WireTool

__all__ = ["DEFER_THRESHOLD", "MCPServer"]

T = TypeVar("T")

DEFER_THRESHOLD = 20
"""With ``defer_loading=None``, a server listing more tools than this defers them all
behind ``tool_search`` (the model searches the catalogue instead of reading it whole)."""

_LINK_CACHE = 16  # resources kept for paging with read_result


class MCPServer:
    """One MCP server, used as tools by agents: ``Agent(tools=[MCPServer.stdio(...)])``.

    Build one with :meth:`stdio`, :meth:`http`, :meth:`sse`, :meth:`in_process` or
    :func:`bastion.mcp.load_config`. Nothing starts until a run (or a direct call such
    as :meth:`call_tool`) needs the server; :meth:`aclose` (or closing the agent) stops it.

    Args:
        transport: Where the server is.
        options: How its tools are exposed and called (:class:`ServerOptions`).
    """

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

    # -- construction -------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server run as a subprocess speaking MCP over its stdin and stdout.

        Args:
            command: The program (``"uvx"``, ``"npx"``, ``"mcp-server-time"``, ...).
            args: Its arguments.
            env: Variables added to the inherited environment.
            cwd: The working directory.
            name: The server's name (default: derived from the command line).
            **options: The fields of :class:`ServerOptions` (``timeout``, ...).

        Raises:
            UserError: An empty command, or invalid options.
        """
        if not isinstance(command, str) or not command.strip():
            raise UserError(f"MCPServer.stdio needs a command, got {command!r}.")
        if isinstance(args, str):
            raise UserError(f"MCPServer.stdio: args must be a list of strings, got {args!r}.")
        transport = Transport(
            kind="stdio", command=command, args=tuple(args), env=dict(env or {}), cwd=cwd
        )
        return cls(transport, ServerOptions.build(name or stdio_name(command, args), options))

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server reached over streamable HTTP (the current MCP HTTP transport).

        Args:
            url: The endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
            headers: Sent with every request (``{"Authorization": "Bearer ..."}``).
            name: The server's name (default: the URL's host).
            **options: The fields of :class:`ServerOptions`.

        Raises:
            UserError: The URL is not http(s), or invalid options.
        """
        return cls(
            Transport(kind="http", url=check_url(url), headers=dict(headers or {})),
            ServerOptions.build(name or url_name(url), options),
        )

    @classmethod
    def sse(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> MCPServer:
        """A server reached over the legacy HTTP+SSE transport (older servers only)."""
        return cls(
            Transport(kind="sse", url=check_url(url), headers=dict(headers or {})),
            ServerOptions.build(name or url_name(url), options),
        )

    @classmethod
    def in_process(cls, server: Any, *, name: str | None = None, **options: Any) -> MCPServer:
        """A server object of the ``mcp`` SDK (``mcp.server.MCPServer``) in this process.

        No transport at all: for tests, and for wrapping Python MCP servers you own.
        """
        default = getattr(server, "name", None)
        label = name or (default if isinstance(default, str) else "in_process")
        return cls(Transport(kind="memory", server=server), ServerOptions.build(label, options))

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {self.transport.kind}: {self.transport.describe()!r})"

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> MCPServer:
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

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._stale = True

    def _only_scope(self) -> CallScope | None:
        """The agent call a server's request belongs to: the one call in flight, if any."""
        scopes = self._scopes
        return scopes[0] if self._inflight == 1 and len(scopes) == 1 else None

    async def _on_elicit(self, context: Any, params: Any) -> Any:
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

    async def _on_sample(self, context: Any, params: Any) -> Any:
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

    # -- tools ----------------------------------------------------------------------------

    async def list_tools(self) -> tuple[Tool, ...]:
        """The server's tools as Bastion tools (cached until the list changes).

        Raises:
            ConnectionLost: The server could not be started or listed.
        """
        tools = self._tools
        if tools is not None and not self._stale:
            return tools
        async with self._lock(1):  # one listing at a time; the others get its result
            if self._tools is not None and not self._stale:
                return self._tools
            self._stale = False  # a notification during the listing marks it stale again
            try:
                wire = await self._request("tools/list", _list_all_tools, retry=True)
            except BaseException:
                self._stale = True
                raise
            self._wire_tools = tuple(wire)
            self._tools = self._build_tools(self._wire_tools)
            return self._tools

    async def describe_tools(self) -> tuple[WireTool, ...]:
        """The server's tool descriptions as the server sent them (for inspection)."""
        await self.list_tools()
        return self._wire_tools

    def _build_tools(self, wire: Sequence[WireTool]) -> tuple[Tool, ...]:
        options = self.options
        chosen = [t for t in wire if options.exposes(t.name)]
        defer = options.defer_loading
        if defer is None:
            defer = len(chosen) > DEFER_THRESHOLD
        with _gc_paused(len(chosen) > 1000):
            built = [self._tool(t, defer=defer) for t in chosen]
        if options.resources:
            built.extend(self._resource_tools())
        return tuple(built)

    def _tool(self, wire: WireTool, *, defer: bool) -> Tool:
        remote = wire.name
        options = self.options
        idempotent = options.is_idempotent(remote)
        server = self

        async def call_mcp_tool(ctx: RunContext[Any], arguments: dict[str, Any]) -> ToolResult:
            async def progress(progress: float, total: float | None, message: str | None) -> None:
                ctx.report_progress(progress, total, message)

            scope = CallScope.of(ctx)
            meta = trace_headers(ctx)  # the W3C trace context, when tracing is on
            call = server._call(
                remote, arguments, progress, retry=idempotent, scope=scope, meta=meta or None
            )
            try:
                result = await wait_or_ask(scope, call, server.name, remote)
                output, metadata = to_output(server.name, remote, result)
            except ToolError as exc:
                if scope.usage:  # what the call's sampling spent joins the run's usage
                    exc.usage = {**exc.usage, **scope.usage}
                raise
            return ToolResult(output=output, metadata=metadata, usage=dict(scope.usage))

        return Tool(
            name=local_name(remote),
            description=wire.description or wire.title or f"The {remote} tool of {self.name}.",
            function=call_mcp_tool,
            validator=RawSchema(wire.input_schema),  # as given: no copy, no compile
            takes_ctx=True,
            side_effect_class=options.side_effect_of(remote),
            idempotency_key=arguments_key if idempotent else None,
            needs_approval=options.needs_approval_of(remote),
            defer_loading=defer,
            trust_class="mcp_derived",
            source=self.name,
            label=wire.title,
            timeout=options.timeout,
            inbound_sanitization=options.inbound_sanitization,
            oracle_key=f"tool:{self.name}:{remote}",
            kind="async",
        )

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressFnT | None = None,
    ) -> CallToolResult:
        """Call a tool of the server directly (no agent, no governance), within its deadline.

        Raises:
            ConnectionLost: The server could not be reached or went away mid-call.
            TimeoutError: No answer within ``timeout`` seconds (the call is cancelled).
            mcp.shared.exceptions.MCPError: The server answered with a protocol error.
        """
        async with asyncio.timeout(self.options.timeout):
            return await self._call(
                name, dict(arguments or {}), progress, retry=self.options.is_idempotent(name)
            )

    async def _call(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None,
        *,
        retry: bool,
        scope: CallScope | None = None,
        meta: dict[str, str] | None = None,
    ) -> CallToolResult:
        from mcp.shared.exceptions import MCPError

        async def send(session: ClientSession) -> CallToolResult:
            return await session.call_tool(
                name,
                arguments,
                progress_callback=progress,
                meta=meta,  # pyright: ignore[reportArgumentType]
            )

        self._inflight += 1
        if scope is not None:
            self._scopes.append(scope)
        try:
            return await self._request(f"the call to {name!r}", send, retry=retry)
        except ConnectionLost as exc:
            hint = (
                " It was retried once (the tool is idempotent)."
                if retry
                else " The call may or may not have taken effect."
            )
            raise ToolError(f"{exc}.{hint} The server restarts on the next call.") from exc
        except MCPError as exc:
            raise ToolError(f"MCP server {self.name!r} refused the call: {exc.message}") from exc
        finally:
            self._inflight -= 1
            if scope is not None:
                self._scopes.remove(scope)

    # -- resources and prompts --------------------------------------------------------------

    async def list_resources(self) -> list[dict[str, Any]]:
        """The server's resources: ``uri``, ``name``, ``description``, ``mime_type``."""
        from mcp.types import PaginatedRequestParams

        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._request(
                "resources/list", lambda s, p=params: s.list_resources(params=p), retry=True
            )
            found.extend(
                {
                    "uri": str(r.uri),
                    "name": r.name,
                    "description": r.description,
                    "mime_type": r.mime_type,
                }
                for r in page.resources
            )
            cursor = page.next_cursor
            if not cursor:
                return found

    async def read_resource(self, uri: str) -> str:
        """The text of a resource (binary parts described, not inlined)."""
        result = await self._request(f"reading {uri!r}", lambda s: s.read_resource(uri), retry=True)
        return resource_text(result)

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> str:
        """The text of a prompt of the server, its messages joined (for instructions)."""
        from mcp.types import TextContent

        result = await self._request(
            f"the prompt {name!r}",
            lambda s: s.get_prompt(name, dict(arguments or {})),
            retry=True,
        )
        return "\n\n".join(
            m.content.text for m in result.messages if isinstance(m.content, TextContent)
        )

    def instructions(
        self, prompt: str, arguments: Mapping[str, str] | None = None
    ) -> Callable[[RunContext[Any]], Awaitable[str]]:
        """A prompt of the server as an agent's instructions, fetched at each run's start.

        Use as ``Agent(instructions=server.instructions("review", {"lang": "en"}))``.
        """

        async def fetch(ctx: RunContext[Any]) -> str:
            return await self.get_prompt(prompt, arguments)

        return fetch

    def _resource_tools(self) -> list[Tool]:
        server = self

        async def list_resources(ctx: RunContext[Any], arguments: dict[str, Any]) -> Any:
            return await server.list_resources()

        async def read_resource(ctx: RunContext[Any], arguments: dict[str, Any]) -> str:
            try:
                return await server.read_resource(str(arguments["uri"]))
            except ConnectionLost as exc:
                raise ToolError(str(exc)) from exc

        common: dict[str, Any] = {
            "takes_ctx": True,
            "side_effect_class": "read_only",
            "trust_class": "mcp_derived",
            "source": self.name,
            "timeout": self.options.timeout,
            "inbound_sanitization": self.options.inbound_sanitization,
            "kind": "async",
        }
        return [
            Tool(
                name="list_resources",
                description=f"List the resources (documents, files, data) of {self.name}.",
                function=list_resources,
                validator=RawSchema({"type": "object", "properties": {}}),
                oracle_key=f"tool:{self.name}:resources/list",
                **common,
            ),
            Tool(
                name="read_resource",
                description=f"Read a resource of {self.name} by its URI.",
                function=read_resource,
                validator=RawSchema(
                    {
                        "type": "object",
                        "properties": {"uri": {"type": "string", "description": "Its URI."}},
                        "required": ["uri"],
                    }
                ),
                oracle_key=f"tool:{self.name}:resources/read",
                **common,
            ),
        ]

    # -- ResultReader: resource links returned by tools --------------------------------------

    def owns(self, handle: str) -> bool:
        """Whether ``handle`` names a resource of this server (``mcp:<server>:<uri>``)."""
        return handle.startswith(f"mcp:{self.name}:")

    async def read(
        self,
        handle: str,
        *,
        offset: int | None,
        length: int | None,
        start_line: int | None,
        end_line: int | None,
    ) -> str:
        """A range of a linked resource, screened like the server's tool output.

        Raises:
            ResultReadError: The resource cannot be read, or the range is past its end.
        """
        uri = handle[len(link_handle(self.name, "")) :]
        data = self._links.get(uri)
        if data is None:
            try:
                text = await self.read_resource(uri)
            except Exception as exc:
                raise ResultReadError(f"Could not read {uri!r} from {self.name!r}: {exc}") from exc
            # The resource is as untrusted as the tool output that linked it.
            policy: InboundPolicy = self.options.inbound_sanitization or "detect-and-strip-and-wrap"
            data = sanitize_inbound(text, policy=policy).text.encode()
            self._links[uri] = data
            while len(self._links) > _LINK_CACHE:
                self._links.popitem(last=False)
        if start_line is not None or end_line is not None:
            return read_line_range(io.BytesIO(data), start_line or 1, end_line)
        return _byte_range(data, offset or 0, length)


async def _list_all_tools(session: ClientSession) -> list[WireTool]:
    from mcp.types import PaginatedRequestParams

    tools: list[WireTool] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


@contextlib.contextmanager
def _gc_paused(pause: bool) -> Generator[None, None, None]:
    """Pause the cyclic GC while a big catalogue's tools are built.

    Tens of thousands of new objects trigger full collections that walk the whole heap
    (the SDK's parsed listing included); they free nothing here and cost more than the
    building itself. The GC is resumed (if it was on) whatever happens.
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _byte_range(data: bytes, offset: int, length: int | None) -> str:
    size = len(data)
    if offset >= size:
        raise ResultReadError(
            f"offset {offset} is past the end of the resource ({size:,} bytes); "
            f"give an offset below {size}."
        )
    wanted = READ_RESULT_MAX_BYTES if length is None else length
    piece = data[offset : offset + min(wanted, READ_RESULT_MAX_BYTES)]
    end = offset + len(piece)
    header = f"[bytes {offset}-{end - 1} of {size:,}"
    if end < size:
        header += f"; next offset {end}"
    return f"{header}]\n{piece.decode('utf-8', 'replace')}"
