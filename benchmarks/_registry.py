"""The frameworks under test: where each adapter lives, and what identifies the framework.

Adapters are imported lazily, so a subprocess measuring one framework (S4) imports only
that framework, and a framework that fails to import fails alone.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ._adapter import Adapter

__all__ = [
    "FRAMEWORKS",
    "Framework",
    "by_name",
    "installed_version",
    "load",
    "prepare_environment",
    "version_of",
]


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework under test.

    Attributes:
        name: Key on the command line and in results.
        adapter: ``"module:Class"`` of its adapter.
        distribution: The PyPI distribution whose version is reported.
        is_peer: A peer framework (the targets compare Bastion with the fastest peer).
    """

    name: str
    adapter: str
    distribution: str | None
    is_peer: bool = True


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("bastion", "benchmarks._bastion:BastionAdapter", "bastion", is_peer=False),
    Framework("floor", "benchmarks._floor:FloorAdapter", None, is_peer=False),
    Framework("pydantic-ai", "benchmarks._peers_pydantic_ai:PydanticAIAdapter", "pydantic-ai-slim"),
    Framework(
        "openai-agents", "benchmarks._peers_openai_agents:OpenAIAgentsAdapter", "openai-agents"
    ),
    Framework("langgraph", "benchmarks._peers_langchain:LangGraphAdapter", "langgraph"),
    Framework("langchain", "benchmarks._peers_langchain:LangChainAdapter", "langchain"),
)


def by_name(name: str) -> Framework:
    """The framework called ``name``."""
    for framework in FRAMEWORKS:
        if framework.name == name:
            return framework
    known = ", ".join(f.name for f in FRAMEWORKS)
    raise SystemExit(f"unknown framework {name!r}; known: {known}")


def load(name: str) -> Adapter:
    """Import and instantiate the adapter of the framework called ``name``."""
    module_name, _, class_name = by_name(name).adapter.partition(":")
    adapter_class: type[Adapter] = getattr(importlib.import_module(module_name), class_name)
    return adapter_class()


def installed_version(distribution: str) -> str:
    """The installed version of a distribution, or ``"not installed"``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def version_of(framework: Framework) -> str:
    """The installed version of the framework's distribution (``"-"`` for the floor)."""
    return "-" if framework.distribution is None else installed_version(framework.distribution)


_TRACING_OFF = {
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
}
BYTECODE_CACHE = Path(__file__).resolve().parent / "results" / "__pycache__"


def prepare_environment() -> None:
    """Set up this process and the subprocesses it starts.

    * Every framework's tracing is off.
    * Bytecode is cached. With ``PYTHONDONTWRITEBYTECODE`` set, every fresh interpreter
      would compile each framework from source, and S5 would time the compiler; the cache
      then goes to ``benchmarks/results/__pycache__`` (git-ignored), not next to sources.
    """
    os.environ.update(_TRACING_OFF)
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None or sys.dont_write_bytecode:
        prefix = os.environ.setdefault("PYTHONPYCACHEPREFIX", str(BYTECODE_CACHE))
        sys.pycache_prefix = prefix
        sys.dont_write_bytecode = False
