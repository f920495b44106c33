"""Bastion's one lazy-loading mechanism: modules and package attributes imported on first use.

Importing a package costs only what is used. Two forms of one idea:

* :func:`lazy_attributes`: a package lists its public names under ``if TYPE_CHECKING:``
  (for type checkers and readers) and maps each to the submodule that defines it; the
  module ``__getattr__`` it builds imports the submodule when the name is first read.
* :func:`lazy_module`: a module that needs another only inside some functions (a run's
  loop, a feature's machinery) binds a stand-in at module level, under the same name a
  ``TYPE_CHECKING`` import gives the type checker::

      if TYPE_CHECKING:
          from bastion.agent import _loop
      else:
          _loop = lazy_module("bastion.agent._loop")

  The real module is imported when an attribute of the stand-in is first read; the name
  is then rebound to the real module, so later reads cost what a plain import's do.

Both import through the import statement's machinery, so ``python -X importtime`` sees
the deferred imports where they happen.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "lazy_attributes", "lazy_module"]


def lazy_attributes(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps a name to its submodule."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        qualified = package + module
        __import__(qualified)
        value = getattr(sys.modules[qualified], name)
        namespace[name] = value
        return value

    return __getattr__


class LazyModule:
    """A stand-in for the module named ``name``, imported when an attribute is first read.

    On that first read the stand-in also rebinds the names it is bound to in the module
    that made it to the real module, so every later read there is a plain module attribute
    (no stand-in in the way, and monkeypatching the module is seen).
    """

    __slots__ = ("_module", "_name", "_namespace")

    def __init__(self, name: str, namespace: dict[str, object]) -> None:
        self._name = name
        self._namespace = namespace
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            __import__(self._name)
            module = self._module = sys.modules[self._name]
            namespace = self._namespace
            for key in [key for key, value in namespace.items() if value is self]:
                namespace[key] = module
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded"
        return f"<lazy module {self._name!r} ({state})>"


def lazy_module(name: str) -> LazyModule:
    """A :class:`LazyModule` for the module ``name``, bound in the calling module.

    Call it at module level, binding the name a ``TYPE_CHECKING`` import gives the type
    checker.
    """
    return LazyModule(name, sys._getframe(1).f_globals)
