"""Tool names on the wire: what each provider accepts, and the mapping back.

Bastion allows ``.`` in tool names (``srv.search``) and up to 128 characters; vendors accept
less (OpenAI and Anthropic: ``^[a-zA-Z0-9_-]{1,64}$``). A :class:`ToolNameMap` gives every
local name a wire name that the protocol accepts, unique within the request, and maps the
model's calls back.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

from bastion.core import ToolDefinition, UserError

__all__ = ["DEFAULT_WIRE_NAME", "ToolNameMap", "chosen_tool"]

DEFAULT_WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


class ToolNameMap:
    """Local tool name ↔ wire name, for one request."""

    __slots__ = ("_to_local", "_to_wire")

    def __init__(
        self,
        names: Iterable[str],
        *,
        pattern: re.Pattern[str] = DEFAULT_WIRE_NAME,
        max_length: int = 64,
    ) -> None:
        self._to_wire: dict[str, str] = {}
        self._to_local: dict[str, str] = {}
        pending: list[str] = []
        for name in names:  # names the protocol accepts keep their name, whatever the order
            if pattern.match(name):
                self._to_wire[name] = name
                self._to_local[name] = name
            else:
                pending.append(name)
        for name in pending:
            wire = _sanitize(name, max_length)
            while wire in self._to_local:  # taken by a valid name or another sanitised one
                wire = _with_hash(wire + "_", max_length, name)
            self._to_wire[name] = wire
            self._to_local[wire] = name

    def wire(self, name: str) -> str:
        """The name sent to the vendor for local tool ``name``."""
        return self._to_wire.get(name, name)

    def local(self, wire_name: str) -> str:
        """The local tool a model's call to ``wire_name`` means (unchanged if unknown)."""
        return self._to_local.get(wire_name, wire_name)


def _sanitize(name: str, max_length: int) -> str:
    cleaned = _INVALID.sub("_", name.replace(".", "__")) or "tool"
    if len(cleaned) <= max_length:
        return cleaned
    return _with_hash(cleaned, max_length, name)


def _with_hash(base: str, max_length: int, original: str) -> str:
    digest = hashlib.sha256(original.encode()).hexdigest()[:8]
    return f"{base[: max_length - 9]}_{digest}"


def chosen_tool(tools: Sequence[ToolDefinition], choice: str) -> ToolDefinition:
    """The tool a named ``tool_choice`` picks.

    Raises:
        UserError: The request does not offer a tool of that name (refused before sending:
            the vendor would answer 400, or silently ignore the choice).
    """
    for tool in tools:
        if tool.name == choice:
            return tool
    offered = ", ".join(repr(t.name) for t in tools)
    raise UserError(
        f"tool_choice names the tool {choice!r}, which this request does not offer. "
        f"Offered: {offered}; or use 'auto', 'required' or 'none'."
    )
