"""Short, single-line text for the renderer: tool calls, result previews, durations.

Pure functions, no rich: the live and the plain renderer (``_render``) share them, and they
are unit-tested on their own.
"""

from __future__ import annotations

import json

from bastion.core import JsonValue, RunStatus, Usage

__all__ = ["format_call", "format_duration", "format_summary", "preview"]

_ARG_WIDTH = 48
_PREVIEW_WIDTH = 72


def preview(text: str, width: int = _PREVIEW_WIDTH) -> str:
    """Return ``text`` on one line, whitespace collapsed, cut to ``width`` characters with '…'."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_call(name: str, arguments: str) -> str:
    """Return a tool call as ``name(key=value, ...)``, each value shown as JSON, shortened.

    Arguments that are not a JSON object (the model may write malformed JSON) are shown raw.
    """
    try:
        parsed: JsonValue = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return f"{name}({preview(arguments, _ARG_WIDTH)})"
    if not isinstance(parsed, dict):
        return f"{name}({preview(arguments, _ARG_WIDTH)})"
    pairs = ", ".join(
        f"{key}={preview(json.dumps(value, ensure_ascii=False), _ARG_WIDTH)}"
        for key, value in parsed.items()
    )
    return f"{name}({pairs})"


def format_duration(seconds: float) -> str:
    """Return a duration for humans: ``0.4 ms``, ``12 ms``, ``1.25 s``, ``2m 05s``."""
    if seconds < 0.01:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s"


def format_summary(
    *, status: RunStatus, steps: int, tool_calls: int, usage: Usage, duration: float
) -> str:
    """Return the run's closing line: status, steps, tool calls, tokens, cost and duration.

    Tokens a server never reported read "not reported", not "0 tokens"; the cost is left
    out when unknown, and marked as a lower bound when some calls were not reported.
    """
    parts = [
        status,
        _plural(steps, "step"),
        _plural(tool_calls, "tool call"),
        usage.describe_tokens(),
    ]
    if usage.cost_usd is not None and usage.reported:
        bound = "≥ " if usage.unreported_requests else ""
        parts.append(f"{bound}${usage.cost_usd:.4f}")
    parts.append(format_duration(duration))
    return " · ".join(parts)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
