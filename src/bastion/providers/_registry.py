"""The ``"provider:model"`` registry: model strings resolve to adapter instances.

Adapters register a factory under a prefix (``openai``, ``anthropic``, …);
``resolve_model("openai:gpt-4.1")`` calls the ``openai`` factory with ``"gpt-4.1"``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from bastion.core import Model, UserError

__all__ = ["ModelFactory", "register_provider", "registered_providers", "resolve_model"]

ModelFactory = Callable[..., Model]
_factories: dict[str, ModelFactory] = {}

# Built-in protocols, imported only when a model string names them.
_BUILTIN: dict[str, str] = {
    "anthropic": "bastion.providers.anthropic:anthropic_model",
    "gemini": "bastion.providers.gemini:gemini_model",
    "ollama": "bastion.providers.ollama:ollama_model",
    "openai": "bastion.providers.openai:openai_chat_model",
    "openai-compatible": "bastion.providers.openai:openai_compatible_model",
    "openai-responses": "bastion.providers.openai_responses:openai_responses_model",
}


def register_provider(prefix: str, factory: ModelFactory, *, replace: bool = False) -> None:
    """Make ``"<prefix>:<model>"`` strings resolve through ``factory(model, **options)``.

    Raises:
        UserError: The prefix is taken (pass ``replace=True`` to override) or malformed.
    """
    if not prefix or ":" in prefix:
        raise UserError(f"Provider prefix must be non-empty and contain no ':', got {prefix!r}.")
    if prefix in _factories and not replace:
        raise UserError(f"Provider prefix {prefix!r} is already registered.")
    _factories[prefix] = factory


def registered_providers() -> list[str]:
    """The registered prefixes (built-in and added), sorted."""
    return sorted({*_factories, *_BUILTIN})


def resolve_model(spec: str, **options: object) -> Model:
    """Return the model a ``"provider:model"`` string names.

    ``options`` go to the provider's factory (e.g. ``api_key=``, ``base_url=``,
    ``http_client=``).

    Raises:
        UserError: The string is malformed or names no registered provider.
    """
    prefix, sep, name = spec.partition(":")
    if not sep or not prefix or not name:
        raise UserError(
            f"Model {spec!r} is not of the form 'provider:model' (e.g. 'openai:gpt-4.1')."
        )
    factory = _factories.get(prefix) or _builtin(prefix)
    if factory is None:
        known = ", ".join(repr(p) for p in registered_providers()) or "none yet"
        raise UserError(
            f"Unknown model provider {prefix!r} in {spec!r}. Registered providers: {known}."
        )
    return factory(name, **options)


def _builtin(prefix: str) -> ModelFactory | None:
    target = _BUILTIN.get(prefix)
    if target is None:
        return None
    module_name, _, attribute = target.partition(":")
    factory: ModelFactory = getattr(importlib.import_module(module_name), attribute)
    return factory
