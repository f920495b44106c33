"""Names of MCP servers and tools, and keys derived from calls (used by ``MCPServer``)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from bastion.core import UserError

__all__ = ["arguments_key", "check_url", "local_name", "stdio_name", "url_name"]

_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]")
_NOT_SERVER = re.compile(r"[^A-Za-z0-9_-]")


def arguments_key(arguments: dict[str, object]) -> str:
    """The idempotency key of a call to an idempotent tool: its canonical arguments."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def local_name(remote: str) -> str:
    """The tool's name in Bastion: the server's, characters outside ``[A-Za-z0-9._-]`` as ``_``."""
    name = _NOT_NAME.sub("_", remote)[:128]
    return name or "tool"


def stdio_name(command: str, args: Sequence[str]) -> str:
    """``uvx mcp-server-git --repository x`` -> ``mcp-server-git``; ``./srv.py`` -> ``srv``."""
    words = [command, *args]
    launchers = {"uvx", "npx", "uv", "python", "python3", "node", "bunx", "pipx", "docker"}
    picked = command
    base = command.replace("\\", "/").rsplit("/", 1)[-1]
    if base in launchers or base.startswith("python"):
        rest = [w for w in words[1:] if not w.startswith("-") and w not in ("run", "tool")]
        picked = rest[0] if rest else base
    picked = picked.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0] or base
    return _NOT_SERVER.sub("_", picked.split("@", 1)[0] or picked)[:64] or "mcp"


def url_name(url: str) -> str:
    """A server name from a URL's host: ``mcp.example.com`` -> ``mcp_example_com``."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or "mcp"
    return _NOT_SERVER.sub("_", host)[:64]


def check_url(url: str) -> str:
    """The URL, if it is http(s).

    Raises:
        UserError: Any other scheme.
    """
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UserError(f"An MCP server URL must start with http:// or https://, got {url!r}.")
    return url
