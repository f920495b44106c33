"""Test doubles for Bastion and for your own tests: scripted models and a virtual clock."""

from ._clock import VirtualClock
from ._models import Call, FunctionModel, ScriptedModel, Turn, TurnLike

__all__ = ["Call", "FunctionModel", "ScriptedModel", "Turn", "TurnLike", "VirtualClock"]
