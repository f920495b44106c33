"""``ServerTools``: a server's tools as Bastion tools: listed, cached, converted, called.

The listing is cached until the server says ``tools/list_changed`` or was restarted; each
tool calls ``tools/call`` on the shared connection, governed as ``tool:<server>:<tool>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bastion.core import JsonObject, JsonValue, RunContext
from bastion.observability import trace_headers
from bastion.tools import Tool, ToolError, ToolResult

from ._asking import CallScope, wait_or_ask
from ._connection import ConnectionLost
from ._convert import RawSchema, to_output
from ._naming import arguments_key, local_name
from ._resources import ServerResources

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import CallToolResult
    from mcp.types import Tool as WireTool

__all__ = ["DEFER_THRESHOLD", "ServerTools"]

DEFER_THRESHOLD = 20
"""With ``defer_loading=None``, a server listing more tools than this defers them all
behind ``tool_search`` (the model searches the catalogue instead of reading it whole)."""


class ServerTools(ServerResources):
    """The server's tools, on top of its connection and resources."""

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

        async def call_mcp_tool(ctx: RunContext[Any], arguments: JsonObject) -> ToolResult:
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
            return ToolResult(
                output=output, metadata=dict[str, object](metadata), usage=dict(scope.usage)
            )

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
        arguments: Mapping[str, JsonValue] | None = None,
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
        arguments: JsonObject,
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
