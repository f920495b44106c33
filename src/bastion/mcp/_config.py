"""Load the common ``mcpServers`` JSON (Claude Desktop, Cursor, VS Code, Claude Code).

The format users already have::

    {"mcpServers": {
        "git":    {"command": "uvx", "args": ["mcp-server-git"], "env": {"X": "1"}},
        "remote": {"url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}

``${VAR}`` and ``${VAR:-default}`` in strings are read from the environment. Entries with
``"disabled": true`` are skipped; keys of other tools (``autoApprove``, ...) are ignored;
``"timeout"`` is honoured; Bastion options (:class:`ServerOptions`) go in ``"bastion"``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from bastion.core import JsonObject, JsonValue, UserError

from ._server import MCPServer

__all__ = ["load_config", "servers_from_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HTTP_TYPES = {"http": "http", "streamable-http": "http", "streamable_http": "http", "sse": "sse"}


def load_config(path: str | os.PathLike[str], **options: object) -> dict[str, MCPServer]:
    """Read an ``mcpServers`` JSON file; returns the servers by name, in file order.

    Args:
        path: The file.
        **options: :class:`ServerOptions` fields applied to every server (an entry's own
            ``"bastion"`` options win).

    Raises:
        UserError: The file is missing, not JSON, or an entry is invalid (named).
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"Cannot read MCP config {str(file)!r}: {exc.strerror or exc}.") from None
    try:
        data: JsonValue = json.loads(text)
    except ValueError as exc:
        raise UserError(f"MCP config {str(file)!r} is not valid JSON: {exc}.") from None
    return servers_from_config(data, where=f"MCP config {str(file)!r}", **options)


def servers_from_config(
    data: object, *, where: str = "MCP config", **options: object
) -> dict[str, MCPServer]:
    """Build servers from parsed ``mcpServers`` JSON (``{"mcpServers": {...}}`` or the inner map).

    Raises:
        UserError: The data does not have the expected shape, or an entry is invalid.
    """
    root = _object(data)
    if root is None:
        raise UserError(
            f"{where}: expected a JSON object with 'mcpServers', got {type(data).__name__}."
        )
    entries = _object(root.get("mcpServers", root.get("servers", root)))
    if entries is None:
        raise UserError(f"{where}: 'mcpServers' must be an object of servers by name.")
    servers: dict[str, MCPServer] = {}
    for name, entry in entries.items():
        spec = _object(entry)
        if spec is None:
            raise UserError(f"{where}: server {name!r} must be an object, got {entry!r}.")
        if spec.get("disabled") is True:
            continue
        servers[name] = _server(name, spec, f"{where}: server {name!r}", options)
    return servers


def _server(name: str, spec: JsonObject, where: str, defaults: Mapping[str, object]) -> MCPServer:
    own = _object(spec.get("bastion") or {})
    if own is None:
        raise UserError(f"{where}: 'bastion' must be an object of options.")
    options: dict[str, object] = {**defaults, **own}
    if "timeout" in spec and "timeout" not in own:
        options["timeout"] = spec["timeout"]
    kind = spec.get("type", spec.get("transport"))
    if "command" in spec and kind in (None, "stdio"):
        command = _expand(spec["command"], where, "command")
        args = spec.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UserError(f"{where}: 'args' must be a list of strings.")
        return MCPServer.stdio(
            command,
            [_expand(a, where, "args") for a in args],
            env=_strings(spec.get("env"), where, "env"),
            cwd=_expand(spec["cwd"], where, "cwd") if spec.get("cwd") else None,
            name=name,
            **options,
        )
    if "url" in spec or "serverUrl" in spec:
        url = _expand(spec.get("url", spec.get("serverUrl")), where, "url")
        chosen = _HTTP_TYPES.get(str(kind or "http"))
        if chosen is None:
            raise UserError(f"{where}: unknown type {kind!r}; use 'http' or 'sse'.")
        factory = MCPServer.sse if chosen == "sse" else MCPServer.http
        return factory(
            url, headers=_strings(spec.get("headers"), where, "headers"), name=name, **options
        )
    raise UserError(f"{where}: give 'command' (a stdio server) or 'url' (an HTTP server).")


def _object(value: object) -> JsonObject | None:
    """Decoded JSON ``value`` as an object, or None when it is not one."""
    return cast("JsonObject", value) if isinstance(value, dict) else None


def _strings(value: JsonValue, where: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    items = _object(value)
    if items is None:
        raise UserError(f"{where}: {key!r} must be an object of strings.")
    return {str(k): _expand(v, where, f"{key}.{k}") for k, v in items.items()}


def _expand(value: JsonValue, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise UserError(f"{where}: {key!r} must be a string, got {value!r}.")

    def variable(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1))
        if found is not None:
            return found
        if match.group(2) is not None:
            return match.group(2)
        raise UserError(
            f"{where}: {key!r} uses ${{{match.group(1)}}}, which is not set in the environment."
        )

    return _VAR.sub(variable, value)
