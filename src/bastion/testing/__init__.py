"""Test doubles for Bastion and for your own tests: scripted models, a clock, MCP servers."""

from typing import TYPE_CHECKING

from ._clock import VirtualClock
from ._models import Call, FunctionModel, ScriptedModel, Turn, TurnLike

if TYPE_CHECKING:
    from ._mcp import fake_mcp_server
    from ._store_conformance import ProcessStoreConformance, StoreConformance

__all__ = [
    "Call",
    "FunctionModel",
    "ProcessStoreConformance",
    "ScriptedModel",
    "StoreConformance",
    "Turn",
    "TurnLike",
    "VirtualClock",
    "fake_mcp_server",
]


def __getattr__(name: str) -> object:
    # The store conformance suites import pytest, so they load on first use only.
    if name in {"ProcessStoreConformance", "StoreConformance"}:
        from . import _store_conformance

        return getattr(_store_conformance, name)
    if name == "fake_mcp_server":  # needs the mcp extra: loaded on first use
        from ._mcp import fake_mcp_server

        return fake_mcp_server
    raise AttributeError(f"module 'bastion.testing' has no attribute {name!r}")
