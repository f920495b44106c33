"""Loading the object a ``module:attr`` spec names, for ``bastion run`` and ``bastion demo``.

A spec names a module (``pkg.app:agent``) or a Python file (``path/to/app.py:agent``); the
attribute may be dotted (``app:agents.support``). The current directory is put on
``sys.path`` first, the way ``python -m`` does, so a project's own modules import.
Every failure is a :class:`SpecError` with a one-line message the CLI prints as is.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, cast

from bastion.agent import Agent
from bastion.core import UserError
from bastion.graph import Graph

if TYPE_CHECKING:
    from bastion.graph import Graph

__all__ = ["SpecError", "import_file", "load_agent", "load_agent_or_graph", "load_object"]


class SpecError(UserError):
    """A ``module:attr`` spec could not be resolved to an object."""


def load_agent(spec: str) -> Agent[object, object]:
    """Return the :class:`~bastion.Agent` that ``spec`` names, calling it if it is a factory.

    Args:
        spec: ``module:attr`` or ``path/to/file.py:attr``; ``attr`` is an agent, or a
            function taking no arguments that returns one.

    Raises:
        SpecError: The spec cannot be resolved, or does not lead to an agent.
    """
    value = load_object(spec)
    if isinstance(value, Agent):
        return cast("Agent[object, object]", value)
    made = _call_factory(value, spec)
    if isinstance(made, Agent):
        return cast("Agent[object, object]", made)
    what = type(value).__name__ if made is value else f"a factory returning {type(made).__name__}"
    raise SpecError(
        f"{spec!r} is {what}, not a bastion Agent. Point at an Agent object, "
        "or at a function that takes no arguments and returns one."
    )


def load_agent_or_graph(spec: str) -> Agent[object, object] | Graph:
    """The :class:`~bastion.Agent` or :class:`~bastion.graph.Graph` that ``spec`` names.

    A factory of no arguments is called once.

    Raises:
        SpecError: The spec cannot be resolved, or leads to neither.
    """
    value = load_object(spec)
    served = _agent_or_graph(value)
    if served is not None:
        return served
    made = _call_factory(value, spec)
    served = _agent_or_graph(made)
    if served is not None:
        return served
    what = type(value).__name__ if made is value else f"a factory returning {type(made).__name__}"
    raise SpecError(f"{spec!r} is {what}, not a bastion Agent or Graph.")


def _agent_or_graph(value: object) -> Agent[object, object] | Graph | None:

    if isinstance(value, Graph):
        return value
    return cast("Agent[object, object]", value) if isinstance(value, Agent) else None


def load_object(spec: str) -> object:
    """Import the module or file that ``spec`` names and return its attribute.

    Args:
        spec: ``module:attr`` or ``path/to/file.py:attr``.

    Raises:
        SpecError: The spec is malformed, the module cannot be imported, or the attribute
            does not exist.
    """
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise SpecError(
            f"Invalid spec {spec!r}: use 'module:attribute' or 'path/to/file.py:attribute', "
            "e.g. 'examples/repo_assistant.py:agent'."
        )
    _add_to_path(Path.cwd())
    looks_like_file = target.endswith(".py") or "/" in target or "\\" in target
    module = import_file(Path(target)) if looks_like_file else _import_module(target)
    value: object = module
    for name in attr.split("."):
        if not hasattr(value, name):
            agents = sorted(n for n, v in vars(module).items() if isinstance(v, Agent))
            hint = f" Agents it defines: {', '.join(agents)}." if agents else ""
            raise SpecError(f"{target!r} has no attribute {attr!r}.{hint}")
        value = getattr(value, name)
    return value


def _call_factory(value: object, spec: str) -> object:
    if not callable(value) or isinstance(value, type):
        return value
    try:
        inspect.signature(value).bind()
    except TypeError:
        raise SpecError(
            f"{spec!r} is a callable that needs arguments; point at an agent or at a "
            "function that takes none and returns one."
        ) from None
    except ValueError:
        pass  # no signature to inspect (some builtins): just call it
    try:
        made: object = value()
    except UserError as exc:
        raise SpecError(f"Calling {spec!r} failed: {exc}") from exc
    except Exception as exc:  # the factory's own code failed
        raise SpecError(f"Calling {spec!r} failed: {_where(exc)}") from exc
    if inspect.isawaitable(made):
        if inspect.iscoroutine(made):
            made.close()
        raise SpecError(f"{spec!r} is an async function; make the agent factory a plain function.")
    return made


def import_file(path: Path) -> ModuleType:
    """Import a Python file as a module (reusing it if it is already imported).

    The file's directory goes on ``sys.path`` as when running ``python path/to/file.py``.

    Raises:
        SpecError: The file does not exist, or importing it raised ``ImportError`` or
            :class:`~bastion.core.UserError`, or the module's code raised (a
            ``SyntaxError`` too): the message names the file and line.
    """
    resolved = path.resolve()
    if not resolved.is_file():
        raise SpecError(f"No such file: {str(path)!r}.")
    name = resolved.stem
    existing = sys.modules.get(name)
    if existing is not None:
        if getattr(existing, "__file__", None) == str(resolved):
            return existing
        name = f"_bastion_run_{name}"
    _add_to_path(resolved.parent)
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(f"Cannot import {str(path)!r}: it is not a Python source file.")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except (ImportError, UserError) as exc:
        del sys.modules[name]
        raise SpecError(f"Importing {str(path)!r} failed: {exc}") from exc
    except Exception as exc:  # the module's own code failed: say where, without a traceback
        del sys.modules[name]
        raise SpecError(f"Importing {str(path)!r} failed: {_where(exc)}") from exc
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _where(exc: Exception) -> str:
    """``file:line: Type: message`` for an exception raised by imported code."""
    if isinstance(exc, SyntaxError):
        return f"{exc.filename}:{exc.lineno}: {type(exc).__name__}: {exc.msg}"
    frames = traceback.extract_tb(exc.__traceback__)
    place = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    return f"{place}{type(exc).__name__}: {exc}"


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(f"{exc.name}.")):
            raise SpecError(
                f"No module named {name!r} (looked in the current directory and sys.path). "
                "Check the spelling, or give a file path: 'path/to/file.py:attribute'."
            ) from exc
        raise SpecError(f"Importing {name!r} failed: {exc}") from exc
    except (ImportError, UserError) as exc:
        raise SpecError(f"Importing {name!r} failed: {exc}") from exc
    except Exception as exc:  # the module's own code failed
        raise SpecError(f"Importing {name!r} failed: {_where(exc)}") from exc


def _add_to_path(directory: Path) -> None:
    entry = str(directory)
    if entry not in sys.path:
        sys.path.insert(0, entry)
