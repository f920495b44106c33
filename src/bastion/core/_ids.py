"""Identifier generation for runs, tool calls and events' owners."""

from __future__ import annotations

import os

__all__ = ["new_id"]


def new_id(prefix: str) -> str:
    """Return a fresh random identifier such as ``run_3f9c…`` (128 bits of randomness)."""
    return f"{prefix}_{os.urandom(16).hex()}"
