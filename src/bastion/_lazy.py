"""Package attributes imported on first use, so importing a package costs only what is used.

A package lists its public names under ``if TYPE_CHECKING:`` (for type checkers and
readers) and maps each to the submodule that defines it; :func:`lazy_attributes` builds
the module ``__getattr__`` that imports the submodule when the name is first read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps a name to its submodule."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        qualified = package + module
        __import__(qualified)  # the import statement's machinery (seen by -X importtime)
        value = getattr(sys.modules[qualified], name)
        namespace[name] = value
        return value

    return __getattr__
