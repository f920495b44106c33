"""Rendering a tool's return value into the text the model reads."""

from __future__ import annotations

from typing import Any

__all__ = ["render_output"]


def render_output(value: Any) -> str:
    """Return ``value`` as text: strings unchanged, ``None`` empty, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    from pydantic_core import to_json

    return to_json(value, fallback=str).decode()
