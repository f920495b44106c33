"""A tool source's tools as data: what the worker tells the workflow about each one."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from bastion.security import InboundPolicy
from bastion.tools import ExecutionMode, Sensitivity, SideEffectClass, ToolTrustClass
from bastion.tools._tool import FunctionKind

if TYPE_CHECKING:
    from bastion.tools import Tool

__all__ = ["PREFIX", "WireTool", "describe", "tools_adapter"]

PREFIX = "source:"
"""How the workflow addresses a source's tool to the tool activity: ``source:<source>:<tool>``."""


@dataclass(kw_only=True, slots=True, frozen=True)
class WireTool:
    """What the workflow needs of a source's tool to offer it and to run it as an activity."""

    name: str
    description: str
    parameters: dict[str, object]
    takes_ctx: bool = False
    kind: FunctionKind = "async"
    side_effect_class: SideEffectClass = "side_effecting"
    idempotent: bool = False
    needs_approval: bool = False
    """A function deciding it per call stays on the worker: the call then always asks."""
    execution_mode: ExecutionMode = "parallel"
    defer_loading: bool = False
    sensitivity: Sensitivity = "public"
    trust_class: ToolTrustClass = "first_party_user_defined"
    label: str | None = None
    timeout: float | None = None
    max_result_tokens: int | None = None
    output_schema: dict[str, object] | None = None
    inbound_sanitization: InboundPolicy | None = None
    oracle_key: str | None = None
    source: str | None = None
    secrets_allowed: list[str] = field(default_factory=list[str])


@cache
def tools_adapter() -> TypeAdapter[list[WireTool]]:
    return TypeAdapter(list[WireTool])


def describe(tool: Tool) -> WireTool:
    return WireTool(
        name=tool.name,
        description=tool.description,
        parameters=tool.parameters,
        takes_ctx=tool.takes_ctx,
        kind=tool.kind,
        side_effect_class=tool.side_effect_class,
        idempotent=tool.idempotency_key is not None,
        needs_approval=bool(tool.needs_approval),
        execution_mode=tool.execution_mode,
        defer_loading=tool.defer_loading,
        sensitivity=tool.sensitivity,
        trust_class=tool.trust_class,
        label=tool.label,
        timeout=tool.timeout,
        max_result_tokens=tool.max_result_tokens,
        output_schema=None if tool.output_schema is None else dict[str, object](tool.output_schema),
        inbound_sanitization=tool.inbound_sanitization,
        oracle_key=tool.oracle_key,
        source=tool.source,
        secrets_allowed=list(tool.secrets_allowed),
    )
