"""Where a warning of the tools package points: the first frame outside a package."""

from __future__ import annotations

import sys

__all__ = ["stacklevel_outside"]


def stacklevel_outside(package: str) -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside ``package``.

    Counted from the caller of this function (the function that calls ``warnings.warn``).

    Args:
        package: A module-name prefix, e.g. ``"bastion."`` or ``"bastion.tools"``.
    """
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(package):
        frame = frame.f_back
        level += 1
    return level
