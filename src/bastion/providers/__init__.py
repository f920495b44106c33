"""Model providers: one adapter per wire protocol, model profiles, and the model registry.

``resolve_model("openai:gpt-4.1-mini")`` imports the protocol's module only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._errors import error_from_status, retry_after_seconds
    from ._framing import NDJSONDecoder, SSEDecoder, SSEEvent
    from ._http import HttpModel, HttpModelOptions, StreamParser, WholeBodyProtocol, WireProtocol
    from ._names import ToolNameMap
    from ._profiles import ModelProfile, profile_for, with_cost
    from ._registry import ModelFactory, register_provider, registered_providers, resolve_model

_LAZY = {
    "error_from_status": "._errors",
    "retry_after_seconds": "._errors",
    "NDJSONDecoder": "._framing",
    "SSEDecoder": "._framing",
    "SSEEvent": "._framing",
    "HttpModel": "._http",
    "HttpModelOptions": "._http",
    "StreamParser": "._http",
    "WholeBodyProtocol": "._http",
    "WireProtocol": "._http",
    "ToolNameMap": "._names",
    "ModelProfile": "._profiles",
    "profile_for": "._profiles",
    "with_cost": "._profiles",
    "ModelFactory": "._registry",
    "register_provider": "._registry",
    "registered_providers": "._registry",
    "resolve_model": "._registry",
}

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


__getattr__ = lazy_attributes(__name__, _LAZY)
