"""Model providers: one adapter per wire protocol, model profiles, and the model registry.

``resolve_model("openai:gpt-4.1-mini")`` imports the protocol's module only then.
"""

from ._errors import error_from_status, retry_after_seconds
from ._framing import NDJSONDecoder, SSEDecoder, SSEEvent
from ._http import HttpModel, HttpModelOptions, StreamParser, WholeBodyProtocol, WireProtocol
from ._names import ToolNameMap
from ._profiles import ModelProfile, profile_for, with_cost
from ._registry import ModelFactory, register_provider, registered_providers, resolve_model

__all__ = [
    "HttpModel",
    "HttpModelOptions",
    "ModelFactory",
    "ModelProfile",
    "NDJSONDecoder",
    "SSEDecoder",
    "SSEEvent",
    "StreamParser",
    "ToolNameMap",
    "WholeBodyProtocol",
    "WireProtocol",
    "error_from_status",
    "profile_for",
    "register_provider",
    "registered_providers",
    "resolve_model",
    "retry_after_seconds",
    "with_cost",
]
