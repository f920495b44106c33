"""Names and attributes of the spans, after the OpenTelemetry GenAI semantic conventions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

from bastion.core import AgentEvent, AgentStartEvent

from ._run_view import RunView

__all__ = [
    "CONTINUES",
    "PARENT_RUN_ID",
    "PARENT_TOOL_CALL_ID",
    "agent_attributes",
    "chat_attributes",
    "event_attributes",
    "span_event_name",
    "split_model",
]

# Run metadata key holding the trace and span id of the run's latest span, so a resumed
# run (in this process or another) links to the trace of the run it continues.
CONTINUES = "bastion.trace"
# Run metadata keys an ``Agent.as_tool`` sub-agent run carries (set by the agent layer).
PARENT_RUN_ID = "bastion.parent_run_id"
PARENT_TOOL_CALL_ID = "bastion.parent_tool_call_id"

_SCALARS = (str, bool, int, float)


def split_model(model: str) -> tuple[str, str]:
    """``"provider:name"`` as ``(provider, name)``; ``("_OTHER", model)`` without a provider."""
    provider, sep, name = model.partition(":")
    return (provider, name) if sep else ("_OTHER", model)


def chat_attributes(model: str) -> dict[str, str]:
    """The attributes a model call's span starts with."""
    provider, name = split_model(model)
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": name,
    }


def agent_attributes(ctx: RunView, event: AgentStartEvent) -> dict[str, AttributeValue]:
    """The attributes of a run's ``invoke_agent`` span."""
    provider, name = split_model(event.model)
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": event.agent_name,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": name,
        "bastion.run.id": event.run_id,
        "bastion.run.resumed": event.resumed,
    }
    if ctx.session_id is not None:
        attributes["gen_ai.conversation.id"] = ctx.session_id
    return attributes


def span_event_name(event: AgentEvent) -> str:
    """The name of the span event an event becomes: ``bastion.`` and its type."""
    return "bastion." + event.type


def event_attributes(event: AgentEvent) -> dict[str, AttributeValue]:
    """An event's scalar fields as span-event attributes (the bulky ones left out)."""
    attributes: dict[str, AttributeValue] = {}
    for name in event.__slots__:  # pyright: ignore[reportAttributeAccessIssue]
        if name in ("run_id", "type", "arguments", "result", "output", "usage", "data"):
            continue
        value = getattr(event, name)
        if isinstance(value, _SCALARS):
            attributes["bastion." + name] = value
    if event.type == "governance.signal":
        attributes["bastion.signal"] = event.signal  # pyright: ignore[reportAttributeAccessIssue]
    return attributes
