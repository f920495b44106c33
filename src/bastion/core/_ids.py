"""Identifier generation for runs, tool calls and events' owners.

Ids are random by default. A host that must replay a run deterministically (a Temporal
workflow) installs its own source for the code it runs with :func:`id_source`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

__all__ = ["id_source", "new_id"]

_SOURCE: ContextVar[Callable[[], str] | None] = ContextVar("bastion_id_source", default=None)


def new_id(prefix: str) -> str:
    """Return a fresh identifier such as ``run_3f9c…`` (128 bits of randomness by default)."""
    source = _SOURCE.get()
    if source is None:
        return f"{prefix}_{os.urandom(16).hex()}"
    return f"{prefix}_{source()}"


@contextmanager
def id_source(source: Callable[[], str]) -> Generator[None]:
    """Make :func:`new_id` take its random part from ``source`` in this context.

    The setting follows the context: tasks started inside the ``with`` block inherit it.
    """
    token = _SOURCE.set(source)
    try:
        yield
    finally:
        # Closed from another context (a coroutine finalized by the garbage collector, as
        # Temporal does with evicted workflows), the token cannot be reset there: that
        # context's value is not ours to restore, and this one ends with the coroutine.
        with suppress(ValueError):
            _SOURCE.reset(token)
