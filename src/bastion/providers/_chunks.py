"""Stream chunks the protocols' parsers build alike.

Called by the parsers of vendors that send each tool call whole, its arguments complete
(``gemini/``, ``ollama/``), rather than as deltas.
"""

from __future__ import annotations

from bastion.core import (
    JsonObject,
    StreamChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
)

__all__ = ["whole_tool_call"]


def whole_tool_call(
    call_id: str, name: str, arguments: str, *, details: JsonObject | None = None
) -> list[StreamChunk]:
    """The chunks of a tool call that arrived whole: its start, its arguments, its end.

    Args:
        call_id: The call's id.
        name: The tool's local name (already mapped back from the wire name).
        arguments: The call's JSON arguments, as text.
        details: Vendor data kept on the end chunk (sent back with the result).
    """
    return [
        ToolCallStartChunk(id=call_id, name=name),
        ToolCallDeltaChunk(id=call_id, arguments_delta=arguments),
        ToolCallEndChunk(id=call_id, provider_details=details),
    ]
