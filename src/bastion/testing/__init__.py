"""Test doubles for Bastion and your tests: scripted models, clock, runtime, MCP, conformance."""

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

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


# The conformance suites import pytest, and the fake MCP server needs the mcp extra: they
# load on first use only.
_LAZY = {
    "ProcessStoreConformance": "._store_conformance",
    "StoreConformance": "._store_conformance",
    "SCENARIOS": "._model_conformance",
    "ModelConformance": "._model_conformance",
    "Scenario": "._model_conformance",
    "ScenarioSpec": "._model_conformance",
    "fake_mcp_server": "._mcp",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
