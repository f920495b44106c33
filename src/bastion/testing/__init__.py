"""Test doubles for Bastion and your tests: scripted models, clock, runtime, MCP, conformance."""

from typing import TYPE_CHECKING

from ._clock import LaterClock, VirtualClock
from ._isolated import isolated_store
from ._journal import ForwardingJournal
from ._matchers import ANY, Matcher, contains, regex, where
from ._models import Call, FunctionModel, ScriptedModel, Turn, TurnLike
from ._replay import RecordedCall, ReplayDiverged, ReplayModel
from ._runtime import CommandHandler, ExecCall, InMemoryRuntime
from ._trajectory import (
    ExpectedCall,
    ExpectedFinal,
    FinalStep,
    ToolStep,
    TrajectoryMode,
    assert_trajectory,
    call,
    final,
    trajectory,
)

if TYPE_CHECKING:
    from ._mcp import fake_mcp_server
    from ._model_conformance import SCENARIOS, ModelConformance, Scenario, ScenarioSpec
    from ._store_conformance import ProcessStoreConformance, StoreConformance

__all__ = [
    "ANY",
    "Call",
    "CommandHandler",
    "ExecCall",
    "ExpectedCall",
    "ExpectedFinal",
    "FinalStep",
    "ForwardingJournal",
    "FunctionModel",
    "InMemoryRuntime",
    "LaterClock",
    "Matcher",
    "ModelConformance",
    "ProcessStoreConformance",
    "RecordedCall",
    "ReplayDiverged",
    "ReplayModel",
    "SCENARIOS",
    "Scenario",
    "ScenarioSpec",
    "ScriptedModel",
    "StoreConformance",
    "ToolStep",
    "TrajectoryMode",
    "Turn",
    "TurnLike",
    "VirtualClock",
    "assert_trajectory",
    "call",
    "contains",
    "fake_mcp_server",
    "final",
    "isolated_store",
    "regex",
    "trajectory",
    "where",
]


def __getattr__(name: str) -> object:
    # The conformance suites import pytest, so they load on first use only.
    if name in {"ProcessStoreConformance", "StoreConformance"}:
        from . import _store_conformance

        return getattr(_store_conformance, name)
    if name in {"SCENARIOS", "ModelConformance", "Scenario", "ScenarioSpec"}:
        from . import _model_conformance

        return getattr(_model_conformance, name)
    if name == "fake_mcp_server":  # needs the mcp extra: loaded on first use
        from ._mcp import fake_mcp_server

        return fake_mcp_server
    raise AttributeError(f"module 'bastion.testing' has no attribute {name!r}")
