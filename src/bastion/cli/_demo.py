"""Finding the demo app (``examples/repo_assistant.py``) for ``bastion demo``.

A wheel may ship the examples inside the package (``bastion/examples/``); an editable
install from a checkout finds them at the repository's top level.
"""

from __future__ import annotations

from pathlib import Path

import bastion

from ._load import SpecError

__all__ = ["DEMO_FILE", "demo_candidates", "find_demo"]

DEMO_FILE = "repo_assistant.py"


def demo_candidates() -> tuple[Path, ...]:
    """Return where the demo app may be, in the order they are tried."""
    package = Path(bastion.__file__).resolve().parent
    return (package / "examples" / DEMO_FILE, package.parent.parent / "examples" / DEMO_FILE)


def find_demo() -> Path:
    """Return the path of the demo app.

    Raises:
        SpecError: It is in none of the places it may be.
    """
    candidates = demo_candidates()
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(repr(str(c)) for c in candidates)
    raise SpecError(
        f"The demo app {DEMO_FILE!r} is not installed (looked in {looked}). "
        "Run it from a checkout of Bastion instead: python examples/repo_assistant.py"
    )
