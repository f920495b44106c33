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
from typing import Literal, TypeAlias, TypedDict, TypeGuard, cast

from bastion import providers
from bastion.core import JsonObject, Model, UserError
from bastion.security import INBOUND_POLICIES, InboundPolicy
from bastion.tools import SideEffectClass

__all__ = ["ElicitContent", "ElicitHandler", "ServerOptions"]

ElicitContent: TypeAlias = dict[str, str | int | float | bool | list[str] | None]
"""The content of an accepted elicitation: flat primitive values (the MCP spec's form)."""

ElicitHandler = Callable[[str, JsonObject], Awaitable[ElicitContent | None]]
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
    side_effects: Mapping[str, SideEffectClass] = field(default_factory=dict[str, SideEffectClass])
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
    def build(cls, name: str, options: Mapping[str, object]) -> ServerOptions:
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
        values: _Fields = {}
        for key in ("timeout", "connect_timeout"):
            if key in options:
                values[key] = _seconds(where, key, options[key])
        values["side_effects"] = _side_effects(where, options.get("side_effects"))
        for key in ("idempotent", "exclude"):
            if (value := options.get(key)) is not None:
                values[key] = _patterns(where, key, value)
        if (include := options.get("include")) is not None:
            values["include"] = _patterns(where, "include", include)
        approval = options.get("needs_approval", False)
        values["needs_approval"] = (
            approval if isinstance(approval, bool) else _patterns(where, "needs_approval", approval)
        )
        policy = options.get("inbound_sanitization")
        if policy is not None:
            values["inbound_sanitization"] = _policy(where, policy)
        handler = options.get("on_elicit")
        if handler is not None:
            if not callable(handler):
                raise UserError(f"{where}: on_elicit must be an async function, got {handler!r}.")
            values["on_elicit"] = cast("ElicitHandler", handler)  # its signature is the user's
        if "elicitation" in options:
            values["elicitation"] = _elicitation(where, options["elicitation"])
        if (sampling := options.get("sampling")) is not None:
            values["sampling"] = _sampling_model(where, sampling)
        if "defer_loading" in options:
            defer = options["defer_loading"]
            if defer is not None and not isinstance(defer, bool):
                raise UserError(
                    f"{where}: defer_loading must be True, False or None, got {defer!r}."
                )
            values["defer_loading"] = defer
        if "resources" in options:
            values["resources"] = bool(options["resources"])
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


class _Fields(TypedDict, total=False):
    """The checked options, as ``ServerOptions`` takes them (absent: the field's default)."""

    timeout: float
    connect_timeout: float
    side_effects: Mapping[str, SideEffectClass]
    idempotent: tuple[str, ...]
    needs_approval: bool | tuple[str, ...]
    include: tuple[str, ...] | None
    exclude: tuple[str, ...]
    defer_loading: bool | None
    inbound_sanitization: InboundPolicy | None
    resources: bool
    on_elicit: ElicitHandler | None
    elicitation: Literal["suspend", "decline"]
    sampling: Model | None


def _seconds(where: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(f"{where}: {key} must be a number of seconds > 0, got {value!r}.")
    if not (value > 0 and math.isfinite(value)):
        raise UserError(f"{where}: {key} must be a number of seconds > 0, got {value!r}.")
    return value


def _side_effects(where: str, value: object) -> dict[str, SideEffectClass]:
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: side_effects must map tool patterns to classes, got {value!r}.")
    effects: dict[str, SideEffectClass] = {}
    for pattern, effect in cast("Mapping[object, object]", value).items():
        if not _is_class(effect):
            raise UserError(
                f"{where}: side_effects[{pattern!r}] must be one of "
                f"{', '.join(repr(c) for c in _CLASSES)}, got {effect!r}."
            )
        effects[str(pattern)] = effect
    return effects


def _is_class(value: object) -> TypeGuard[SideEffectClass]:
    return value in _CLASSES


def _policy(where: str, value: object) -> InboundPolicy:
    for policy in INBOUND_POLICIES:
        if value == policy:
            return policy
    raise UserError(
        f"{where}: unknown inbound_sanitization {value!r}. "
        f"Use one of: {', '.join(repr(p) for p in INBOUND_POLICIES)}."
    )


def _elicitation(where: str, value: object) -> Literal["suspend", "decline"]:
    if value == "suspend":
        return "suspend"
    if value == "decline":
        return "decline"
    raise UserError(f"{where}: elicitation must be 'suspend' or 'decline', got {value!r}.")


def _sampling_model(where: str, value: object) -> Model:
    if isinstance(value, Model):
        return value
    if not isinstance(value, str):
        raise UserError(
            f"{where}: sampling must be a Model or a 'provider:model' string, got {value!r}."
        )
    return providers.resolve_model(value)


def _patterns(where: str, key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise UserError(f"{where}: {key} must be a list of tool names or patterns, got {value!r}.")
    items = tuple(cast("Sequence[object]", value))
    patterns = tuple(p for p in items if isinstance(p, str) and p)
    if len(patterns) != len(items):
        raise UserError(f"{where}: {key} must hold non-empty strings, got {value!r}.")
    return patterns


def _matches(tool: str, patterns: Sequence[str]) -> bool:
    return any(fnmatchcase(tool, p) for p in patterns)
