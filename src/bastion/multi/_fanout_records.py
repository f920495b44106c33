"""A fan-out child's outcome as the journal keeps it, and back (``_fanout`` calls both)."""

from __future__ import annotations

from typing import Any, cast

from bastion.core import RunErrorInfo

from ._composite import Part
from ._fanout_types import ChildResult, FanOutChild

__all__ = ["from_record", "jsonable", "to_part"]


def jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)


def to_part(outcome: ChildResult) -> Part:
    record: dict[str, Any] = {
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


def _error(data: object) -> RunErrorInfo | None:
    if not isinstance(data, dict):
        return None
    fields = cast("dict[str, object]", data)
    return RunErrorInfo(code=str(fields.get("code")), message=str(fields.get("message")))


def from_record(child: FanOutChild, index: int, part: Part) -> ChildResult:
    record = part.record
    error: object = record.get("error")
    output = record.get("output")
    config = getattr(child.agent, "config", None)
    output_type = getattr(config, "output_type", str)
    if output is not None and output_type is not str:
        from pydantic import TypeAdapter

        output = TypeAdapter(output_type).validate_python(output)
    return ChildResult(
        name=child.label,
        index=index,
        status=record.get("status", "failed"),
        output=output,
        text=str(record.get("text", "")),
        error=_error(error),
        usage=part.usage,
        run_id=str(record.get("run_id", "")),
        untrusted=bool(record.get("untrusted")),
        restored=True,
    )
