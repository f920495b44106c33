"""A fan-out child's outcome as the journal keeps it, and back (``_fanout`` calls both)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

from bastion.core import RunErrorInfo

from ._composite import Part
from ._fanout_types import ChildResult, FanOutChild

if TYPE_CHECKING:
    from bastion.core import JsonObject, JsonValue, RunStatus

__all__ = ["from_record", "jsonable", "to_part"]


_STATUSES: tuple[RunStatus, ...] = (
    "running",
    "completed",
    "failed",
    "aborted",
    "awaiting_approval",
    "stopped",
)


def jsonable(value: object) -> JsonValue:
    """``value`` as JSON data (pydantic's JSON form; what it cannot convert, as a string)."""
    from pydantic_core import to_jsonable_python

    return cast("JsonValue", to_jsonable_python(value, fallback=str))


def to_part(outcome: ChildResult) -> Part:
    record: JsonObject = {
        "index": outcome.index,
        "status": outcome.status,
        "output": jsonable(outcome.output),
        "text": outcome.text,
        "run_id": outcome.run_id,
        "untrusted": outcome.untrusted,
        "error": None
        if outcome.error is None
        else {"code": outcome.error.code, "message": outcome.error.message},
    }
    return Part(
        key=outcome.name,
        name=outcome.name,
        record=record,
        usage=outcome.usage,
        is_error=not outcome.ok,
    )


def _error(data: JsonValue) -> RunErrorInfo | None:
    if not isinstance(data, Mapping):
        return None
    return RunErrorInfo(code=str(data.get("code")), message=str(data.get("message")))


def _status(value: JsonValue) -> RunStatus:
    """A journaled status (``failed`` when missing or unknown)."""
    for status in _STATUSES:
        if value == status:
            return status
    return "failed"


def from_record(child: FanOutChild, index: int, part: Part) -> ChildResult:
    record = part.record
    error = record.get("error")
    output: object = record.get("output")
    config = getattr(child.agent, "config", None)
    output_type = getattr(config, "output_type", str)
    if output is not None and output_type is not str:
        from pydantic import TypeAdapter

        output = TypeAdapter(output_type).validate_python(output)
    return ChildResult(
        name=child.label,
        index=index,
        status=_status(record.get("status", "failed")),
        output=output,
        text=str(record.get("text", "")),
        error=_error(error),
        usage=part.usage,
        run_id=str(record.get("run_id", "")),
        untrusted=bool(record.get("untrusted")),
        restored=True,
    )
