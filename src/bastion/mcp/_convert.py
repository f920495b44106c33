"""MCP wire objects to Bastion values: tool definitions, call results, resource contents.

Called by ``MCPServer`` when it lists tools and when a call returns. The server's input
schema is advertised exactly as given; it is compiled for validation only on a tool's first
call, so listing a server with 10,000 tools costs no schema compilation at all.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Required, TypedDict

from bastion.core import JsonObject, JsonValue
from bastion.tools import ToolArgumentsError, ToolError
from bastion.tools._schema import ArgsValidator, check_against, compile_schema, parse_arguments

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from mcp.types import CallToolResult, ContentBlock, ReadResourceResult

__all__ = [
    "CallMeta",
    "RawSchema",
    "ResourceLinkInfo",
    "error_text",
    "link_handle",
    "render_content",
    "resource_text",
    "to_output",
]


class ResourceLinkInfo(TypedDict):
    """A ``resource_link`` a tool returned, with the handle ``read_result`` pages it by."""

    uri: str
    name: str
    mime_type: str | None
    size: int | None
    handle: str


class CallMeta(TypedDict, total=False):
    """What an MCP tool call keeps for the application, in ``metadata["mcp"]``."""

    server: Required[str]
    tool: Required[str]
    structured_content: dict[str, Any]  # the SDK's type: the server's JSON object
    resource_links: list[ResourceLinkInfo]


class RawSchema(ArgsValidator):
    """An MCP tool's ``inputSchema``, used as given and compiled on first use.

    An invalid schema (servers do send them) is advertised as is and not enforced here:
    the server judges the arguments.
    """

    __slots__ = ("_validator", "parameters")

    def __init__(self, parameters: JsonObject) -> None:
        self.parameters = parameters
        self._validator: Validator | Literal[False] | None = None  # False: the schema is invalid

    def validate(self, arguments: str) -> tuple[tuple[JsonObject], dict[str, object]]:
        """Parse the JSON object and list every violation of the schema."""
        value = parse_arguments(arguments)
        if not isinstance(value, dict):
            raise ToolArgumentsError([f"arguments must be a JSON object, got {arguments[:80]!r}"])
        validator = self._validator
        if validator is None:
            validator = self._validator = compile_schema(self.parameters)
        if validator is not False:
            check_against(validator, value)
        return (value,), {}


def link_handle(server: str, uri: str) -> str:
    """The ``read_result`` handle of a resource of ``server``."""
    return f"mcp:{server}:{uri}"


def render_content(
    server: str, blocks: Sequence[ContentBlock]
) -> tuple[str, list[ResourceLinkInfo]]:
    """The text the model reads for content blocks, and the resource links among them.

    Text is kept; an embedded text resource is inlined; binary content (images, audio,
    blobs) is described, not inlined; a ``resource_link`` becomes a handle the model can
    page with ``read_result``.
    """
    from mcp.types import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    parts: list[str] = []
    links: list[ResourceLinkInfo] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ResourceLink):
            handle = link_handle(server, str(block.uri))
            links.append(
                {
                    "uri": str(block.uri),
                    "name": block.name,
                    "mime_type": block.mime_type,
                    "size": block.size,
                    "handle": handle,
                }
            )
            about = ", ".join(
                x
                for x in (
                    block.mime_type,
                    f"{block.size:,} bytes" if block.size is not None else None,
                    block.description,
                )
                if x
            )
            parts.append(
                f"[resource {block.name!r}{f' ({about})' if about else ''}: read it with "
                f"read_result(handle={handle!r})]"
            )
        elif isinstance(block, EmbeddedResource):
            res = block.resource
            if isinstance(res, TextResourceContents):
                parts.append(res.text)
            else:
                size = len(base64.b64decode(res.blob, validate=False))
                kind = res.mime_type or "unknown type"
                parts.append(f"[binary resource {res.uri} ({kind}, {size:,} bytes)]")
        elif isinstance(block, ImageContent | AudioContent):
            kind = "image" if isinstance(block, ImageContent) else "audio"
            size = len(block.data) * 3 // 4
            parts.append(f"[{kind} ({block.mime_type}, about {size:,} bytes) not shown]")
        else:  # a content type newer than this client
            parts.append(f"[{getattr(block, 'type', 'unknown')} content not shown]")
    return "\n".join(parts), links


def error_text(result: CallToolResult) -> str:
    """What the model reads of an ``isError`` result."""
    text, _ = render_content("", result.content)
    return text or "The MCP tool reported an error without a message."


def to_output(
    server: str, tool: str, result: CallToolResult
) -> tuple[JsonValue, dict[str, CallMeta]]:
    """The output the model reads and the metadata kept for the application.

    Structured content (``structuredContent``) is the output when present: a JSON value
    the application reads typed from ``metadata["mcp"]["structured_content"]``.

    Raises:
        ToolError: The server flagged the result ``isError``.
    """
    text, links = render_content(server, result.content)
    meta: CallMeta = {"server": server, "tool": tool}
    if result.structured_content is not None:
        meta["structured_content"] = result.structured_content
    if links:
        meta["resource_links"] = links
    if result.is_error:
        raise ToolError(error_text(result), metadata={"mcp": meta})
    if result.structured_content is not None and not links:
        return result.structured_content, {"mcp": meta}
    return text, {"mcp": meta}


def resource_text(result: ReadResourceResult) -> str:
    """The text of a resource's contents (binary parts described)."""
    from mcp.types import TextResourceContents

    parts: list[str] = []
    for item in result.contents:
        if isinstance(item, TextResourceContents):
            parts.append(item.text)
        else:
            size = len(base64.b64decode(item.blob, validate=False))
            parts.append(
                f"[binary {item.uri} ({item.mime_type or 'unknown type'}, {size:,} bytes)]"
            )
    return "\n".join(parts)
