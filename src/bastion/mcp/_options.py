"""``ServerOptions``: how one MCP server's tools are exposed, classified and called.

Checked once when the server is configured (a ``UserError`` names the bad option), so a
run never starts with a configuration that cannot work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from fnmatch import fnmatchcase
from typing import Any, Literal

from bastion.core import Model, UserError
from bastion.security import INBOUND_POLICIES, InboundPolicy
from bastion.tools import SideEffectClass

__all__ = ["ElicitHandler", "ServerOptions"]

ElicitHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Answers a server's elicitation: given its message and the JSON Schema of the answer,
returns the answer's content (accept) or ``None`` (decline)."""

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CLASSES: tuple[str, ...] = ("pure", "read_only", "side_effecting", "external_stateful")


@dataclass(kw_only=True, frozen=True, slots=True)
class ServerOptions:
    """Options of one MCP server (the keyword arguments of ``MCPServer.stdio`` & co.).

    Tool patterns are ``fnmatch`` patterns over the server's own tool names.

    Attributes:
        name: The server's name: in governance keys (``tool:<name>:<tool>``), prefixed
            tool names after a collision, events and the CLI. Letters, digits, ``_``, ``-``.
        timeout: Seconds one call may take before it fails with ``timeout`` (and is
            cancelled on the server).
        connect_timeout: Seconds to start the server and complete the handshake.
        side_effects: Side-effect class per tool pattern, first match wins; any other
            tool is ``external_stateful`` (MCP annotations are hints from the server, not
            trusted).
        idempotent: Tools safe to call twice: retried once on a fresh connection when the
            server goes away mid-call, and re-run on resume after a crash.
        needs_approval: True for every tool, or the tool patterns needing a human decision.
        include: Only these tools are exposed (``None``: all).
        exclude: These tools are never exposed.
        defer_loading: ``True`` hides the tools behind ``tool_search``; ``None`` (default)
            does so when the server lists more than 20 tools.
        inbound_sanitization: The inbound policy of the tools' output (default for MCP:
            ``detect-and-strip-and-wrap``).
        resources: Also expose ``list_resources`` and ``read_resource`` tools.
        on_elicit: Answers the server's elicitation requests (questions to the user in
            the middle of a call) in this process.
        elicitation: Without ``on_elicit``: ``"suspend"`` (default) suspends the run on
            the question (``awaiting_approval``) until a person answers it with
            ``Directive(inputs=[...])``, then calls the tool again with the answer;
            ``"decline"`` declines it and the server goes on. Calls made outside a run
            (``call_tool``, ``bastion mcp call``) always decline.
        sampling: The model that answers the server's ``sampling/createMessage``
            requests (a ``Model`` or ``"provider:model"``), under the run's governor as
            ``mcp:<server>:sampling`` and ``llm:<provider>:<model>``. ``None`` (default):
            the server is told the client cannot sample.
    """

    name: str
    timeout: float = 60.0
    connect_timeout: float = 30.0
    side_effects: Mapping[str, SideEffectClass] = field(default_factory=dict[str, Any])
    idempotent: tuple[str, ...] = ()
    needs_approval: bool | tuple[str, ...] = False
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    defer_loading: bool | None = None
    inbound_sanitization: InboundPolicy | None = None
    resources: bool = False
    on_elicit: ElicitHandler | None = None
    elicitation: Literal["suspend", "decline"] = "suspend"
    sampling: Model | None = None

    @classmethod
    def build(cls, name: str, options: Mapping[str, Any]) -> ServerOptions:
        """Check and normalize keyword options.

        Raises:
            UserError: An unknown option or an invalid value, named.
        """
        known = {f.name for f in fields(cls)} - {"name"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise UserError(
                f"MCP server {name!r}: unknown option {unknown[0]!r}. "
                f"Options: {', '.join(sorted(known))}."
            )
        if not isinstance(name, str) or not _NAME.match(name):
            raise UserError(
                f"Invalid MCP server name {name!r}: use 1-64 letters, digits, '_' or '-'."
            )
        where = f"MCP server {name!r}"
        values = dict(options)
        for key in ("timeout", "connect_timeout"):
            if key in values:
                value = values[key]
                if (
                    isinstance(value, bool)
                    or not isinstance(value, int | float)
                    or not (value > 0 and math.isfinite(value))
                ):
                    raise UserError(
                        f"{where}: {key} must be a number of seconds > 0, got {value!r}."
                    )
        effects = dict(values.get("side_effects") or {})
        for pattern, effect in effects.items():
            if effect not in _CLASSES:
                raise UserError(
                    f"{where}: side_effects[{pattern!r}] must be one of "
                    f"{', '.join(repr(c) for c in _CLASSES)}, got {effect!r}."
                )
        values["side_effects"] = effects
        for key in ("idempotent", "exclude", "include"):
            if values.get(key) is not None:
                values[key] = _patterns(where, key, values[key])
        approval = values.get("needs_approval", False)
        if not isinstance(approval, bool):
            values["needs_approval"] = _patterns(where, "needs_approval", approval)
        policy = values.get("inbound_sanitization")
        if policy is not None and policy not in INBOUND_POLICIES:
            raise UserError(
                f"{where}: unknown inbound_sanitization {policy!r}. "
                f"Use one of: {', '.join(repr(p) for p in INBOUND_POLICIES)}."
            )
        handler = values.get("on_elicit")
        if handler is not None and not callable(handler):
            raise UserError(f"{where}: on_elicit must be an async function, got {handler!r}.")
        if values.get("elicitation", "suspend") not in ("suspend", "decline"):
            raise UserError(
                f"{where}: elicitation must be 'suspend' or 'decline', "
                f"got {values['elicitation']!r}."
            )
        if values.get("sampling") is not None:
            values["sampling"] = _sampling_model(where, values["sampling"])
        defer = values.get("defer_loading")
        if defer is not None and not isinstance(defer, bool):
            raise UserError(f"{where}: defer_loading must be True, False or None, got {defer!r}.")
        return cls(name=name, **values)

    def exposes(self, tool: str) -> bool:
        """Whether the server's tool ``tool`` is shown to agents."""
        if self.include is not None and not _matches(tool, self.include):
            return False
        return not _matches(tool, self.exclude)

    def is_idempotent(self, tool: str) -> bool:
        """Whether ``tool`` was declared idempotent."""
        return _matches(tool, self.idempotent)

    def side_effect_of(self, tool: str) -> SideEffectClass:
        """The side-effect class of ``tool`` (first matching pattern, else external)."""
        for pattern, effect in self.side_effects.items():
            if fnmatchcase(tool, pattern):
                return effect
        return "external_stateful"

    def needs_approval_of(self, tool: str) -> bool:
        """Whether a call of ``tool`` waits for a human decision."""
        approval = self.needs_approval
        return approval if isinstance(approval, bool) else _matches(tool, approval)


def _sampling_model(where: str, value: Any) -> Model:
    if isinstance(value, Model):
        return value
    if not isinstance(value, str):
        raise UserError(
            f"{where}: sampling must be a Model or a 'provider:model' string, got {value!r}."
        )
    from bastion.providers import resolve_model

    return resolve_model(value)


def _patterns(where: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise UserError(f"{where}: {key} must be a list of tool names or patterns, got {value!r}.")
    items: Sequence[Any] = value  # pyright: ignore[reportUnknownVariableType]
    if not all(isinstance(p, str) and p for p in items):
        raise UserError(f"{where}: {key} must hold non-empty strings, got {value!r}.")
    return tuple(items)


def _matches(tool: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(tool, p) for p in patterns)
