"""Observability: audit records, counters and OpenTelemetry tracing."""

from ._audit import AuditRecord, AuditSink, Counters, ToolAudit
from ._tracing import instrument, trace_headers, uninstrument

__all__ = [
    "AuditRecord",
    "AuditSink",
    "Counters",
    "ToolAudit",
    "instrument",
    "trace_headers",
    "uninstrument",
]
