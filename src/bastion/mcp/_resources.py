"""``ServerResources``: a server's resources and prompts, as data, tools and instructions.

Also the :class:`~bastion.tools.ResultReader` of the resource links a server's tools return
(``mcp:<server>:<uri>``): pages of a linked resource, screened like the tool output.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypedDict

from bastion.core import JsonObject, RunContext
from bastion.security import InboundPolicy, sanitize_inbound
from bastion.tools import ResultReadError, Tool, ToolError
from bastion.tools._read_result import READ_RESULT_MAX_BYTES, read_line_range

from ._connection import ConnectionLost
from ._convert import RawSchema, link_handle, resource_text
from ._lifecycle import ServerConnection

__all__ = ["ResourceInfo", "ServerResources"]

_LINK_CACHE = 16  # resources kept for paging with read_result


class ResourceInfo(TypedDict):
    """One resource a server lists."""

    uri: str
    name: str
    description: str | None
    mime_type: str | None


class ServerResources(ServerConnection):
    """Resources, prompts and resource links on top of the server's connection."""

    async def list_resources(self) -> list[ResourceInfo]:
        """The server's resources: ``uri``, ``name``, ``description``, ``mime_type``."""
        from mcp.types import PaginatedRequestParams

        found: list[ResourceInfo] = []
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

        async def list_resources(ctx: RunContext[Any], arguments: JsonObject) -> list[ResourceInfo]:
            return await server.list_resources()

        async def read_resource(ctx: RunContext[Any], arguments: JsonObject) -> str:
            try:
                return await server.read_resource(str(arguments["uri"]))
            except ConnectionLost as exc:
                raise ToolError(str(exc)) from exc

        return [
            self._resource_tool(
                "list_resources",
                f"List the resources (documents, files, data) of {self.name}.",
                list_resources,
                {"type": "object", "properties": {}},
                "resources/list",
            ),
            self._resource_tool(
                "read_resource",
                f"Read a resource of {self.name} by its URI.",
                read_resource,
                {
                    "type": "object",
                    "properties": {"uri": {"type": "string", "description": "Its URI."}},
                    "required": ["uri"],
                },
                "resources/read",
            ),
        ]

    def _resource_tool(
        self,
        name: str,
        description: str,
        function: Callable[[RunContext[Any], JsonObject], Awaitable[object]],
        schema: JsonObject,
        action: str,
    ) -> Tool:
        """A read-only tool over the server's resources, governed as ``tool:<server>:<action>``."""
        return Tool(
            name=name,
            description=description,
            function=function,
            validator=RawSchema(schema),
            oracle_key=f"tool:{self.name}:{action}",
            takes_ctx=True,
            side_effect_class="read_only",
            trust_class="mcp_derived",
            source=self.name,
            timeout=self.options.timeout,
            inbound_sanitization=self.options.inbound_sanitization,
            kind="async",
        )

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
