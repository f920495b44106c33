"""Test doubles for Bastion and for your own tests: scripted models and a virtual clock."""

from typing import TYPE_CHECKING

from ._clock import LaterClock, VirtualClock
from ._isolated import isolated_store
from ._models import Call, FunctionModel, ScriptedModel, Turn, TurnLike

if TYPE_CHECKING:
    from ._store_conformance import ProcessStoreConformance, StoreConformance

__all__ = [
    "Call",
    "FunctionModel",
    "LaterClock",
    "ProcessStoreConformance",
    "ScriptedModel",
    "StoreConformance",
    "Turn",
    "TurnLike",
    "VirtualClock",
    "isolated_store",
]


def __getattr__(name: str) -> object:
    # The store conformance suites import pytest, so they load on first use only.
    if name in {"ProcessStoreConformance", "StoreConformance"}:
        from . import _store_conformance

        return getattr(_store_conformance, name)
    raise AttributeError(f"module 'bastion.testing' has no attribute {name!r}")
