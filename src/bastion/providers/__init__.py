"""Model providers: one adapter per wire protocol, and the ``"provider:model"`` registry."""

from ._registry import ModelFactory, register_provider, registered_providers, resolve_model

__all__ = ["ModelFactory", "register_provider", "registered_providers", "resolve_model"]
