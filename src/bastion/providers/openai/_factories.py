"""Factories for Chat Completions models: OpenAI itself and OpenAI-compatible vendors.

The registry calls :func:`openai_chat_model` for ``"openai:<model>"`` and
:func:`openai_compatible_model` for ``"openai-compatible:<preset>:<model>"``. Compatible
vendors are configuration (a :class:`~bastion.providers.openai.Preset` row), not code.

One convention for every preset ``<name>``: the base URL comes from
``BASTION_<NAME>_BASE_URL`` (the older ``<NAME>_BASE_URL`` still works), the key from
``BASTION_<NAME>_API_KEY``, then the vendor's own variable (``GROQ_API_KEY``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Unpack

from bastion.core import UserError
from bastion.providers._http import HttpModel, HttpModelOptions

from ._protocol import ChatCompletionsProtocol
from ._vendors import GENERIC, PRESETS, ChatParams, Preset

__all__ = [
    "PresetVariables",
    "openai_chat_model",
    "openai_compatible_model",
    "preset_variables",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class PresetVariables:
    """The environment variables one preset reads, in the order they are tried."""

    base_url: tuple[str, ...]
    api_key: tuple[str, ...]


def _env_name(name: str) -> str:
    return name.upper().replace("-", "_").replace(".", "_")


def preset_variables(name: str) -> PresetVariables:
    """The variables ``openai-compatible:<name>:…`` reads (a preset or a custom name)."""
    upper = _env_name(name)
    preset = PRESETS.get(name)
    base = [f"BASTION_{upper}_BASE_URL"]
    keys = [f"BASTION_{upper}_API_KEY"]
    if preset is not None:
        base.append(f"{upper}_BASE_URL")  # the name that worked before the convention
        if name == "ollama":
            base.append("OLLAMA_HOST")
        if preset.api_key_env is not None:
            keys.append(preset.api_key_env)
    return PresetVariables(base_url=tuple(base), api_key=tuple(keys))


def _first_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def openai_chat_model(name: str, **options: Unpack[HttpModelOptions]) -> HttpModel:
    """An OpenAI model over Chat Completions (key from ``OPENAI_API_KEY``).

    The base URL is ``base_url``, else ``BASTION_OPENAI_BASE_URL``, else
    ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.

    Args:
        name: The model name, e.g. ``"gpt-4.1-mini"``.
        **options: :class:`~bastion.providers.HttpModel` options (``api_key``,
            ``base_url``, ``http_client``, …).

    Raises:
        UserError: ``name`` is empty.
    """
    if options.get("base_url") is None:
        options["base_url"] = _first_env(("BASTION_OPENAI_BASE_URL", "OPENAI_BASE_URL"))
    if options.get("api_key") is None:
        options["api_key"] = _first_env(("BASTION_OPENAI_API_KEY", "OPENAI_API_KEY"))
    return HttpModel(name, protocol=ChatCompletionsProtocol(), provider="openai", **options)


def openai_compatible_model(
    spec: str, *, params: ChatParams | None = None, **options: Unpack[HttpModelOptions]
) -> HttpModel:
    """A model of an OpenAI-compatible server, from ``"<preset>:<model>"``.

    Presets (``bastion models`` lists them with their variables): ``openrouter``,
    ``deepseek``, ``mistral``, ``groq``, ``together``, ``fireworks``, ``xai``,
    ``cerebras``, ``vllm``, ``llamacpp``, ``lmstudio``, ``ollama``. Any other name ``x``
    is a server of your own: its base URL comes from ``BASTION_X_BASE_URL`` (required
    unless ``base_url`` is given), its key from ``BASTION_X_API_KEY`` (optional), and it
    gets the request fields nearly every compatible server accepts. The model's provider
    is the preset name.

    Args:
        spec: ``"<preset>:<model>"``, e.g. ``"groq:llama-3.3-70b-versatile"``; the model
            part may itself contain ``:`` (``"ollama:llama3.2:3b"``).
        params: The request profile to use instead of the preset's (which fields the
            server accepts and how it spells them).
        **options: :class:`~bastion.providers.HttpModel` options.

    Raises:
        UserError: ``spec`` is malformed, or a custom name has no base URL.
    """
    preset_name, sep, model = spec.partition(":")
    preset_name = preset_name.strip().lower()
    if not sep or not preset_name or not model:
        known = ", ".join(repr(p) for p in PRESETS)
        raise UserError(
            f"OpenAI-compatible model {spec!r} is not of the form '<preset>:<model>' "
            f"(e.g. 'groq:llama-3.3-70b-versatile'). Presets: {known}, or any name with "
            "BASTION_<NAME>_BASE_URL set."
        )
    variables = preset_variables(preset_name)
    preset = PRESETS.get(preset_name)
    base_url = options.get("base_url") or _configured_url(variables, preset)
    if base_url is None:
        url_env, key_env = variables.base_url[0], variables.api_key[0]
        raise UserError(
            f"Unknown OpenAI-compatible preset {preset_name!r} and {url_env} is not set. "
            f"Set {url_env} (and {key_env} if the server needs a key), pass base_url=, "
            f"or use a preset: {', '.join(repr(p) for p in PRESETS)}."
        )
    options["base_url"] = base_url
    if options.get("api_key") is None:
        options["api_key"] = _first_env(variables.api_key)
    protocol = ChatCompletionsProtocol(
        vendor=preset_name,
        default_base_url=preset.base_url if preset is not None else base_url,
        api_key_env=variables.api_key[-1],
        params=params or (preset.params if preset is not None else GENERIC),
    )
    return HttpModel(model, protocol=protocol, provider=preset_name, **options)


def _configured_url(variables: PresetVariables, preset: Preset | None) -> str | None:
    configured = _first_env(variables.base_url)
    if preset is None:
        return configured
    if configured is None:
        return preset.base_url
    if "://" not in configured:  # OLLAMA_HOST style "host:port"
        configured = f"http://{configured}"
    configured = configured.rstrip("/")
    if preset.url_suffix and not configured.endswith(preset.url_suffix):
        configured += preset.url_suffix
    return configured
