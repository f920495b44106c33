"""Factories for Chat Completions models: OpenAI itself and OpenAI-compatible vendors.

The registry calls :func:`openai_chat_model` for ``"openai:<model>"`` and
:func:`openai_compatible_model` for ``"openai-compatible:<preset>:<model>"``. Compatible
vendors are configuration (a preset row), not code.
"""

from __future__ import annotations

import os
from typing import Unpack

from bastion.core import UserError
from bastion.providers._http import HttpModel, HttpModelOptions

from ._protocol import ChatCompletionsProtocol

__all__ = ["PRESETS", "HttpModelOptions", "openai_chat_model", "openai_compatible_model"]

# preset → (base URL, API key variable). Local servers take a key only if one is set.
PRESETS: dict[str, tuple[str, str]] = {
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "vllm": ("http://localhost:8000/v1", "VLLM_API_KEY"),
    "lmstudio": ("http://localhost:1234/v1", "LMSTUDIO_API_KEY"),
    "llamacpp": ("http://localhost:8080/v1", "LLAMACPP_API_KEY"),
    "ollama": ("http://localhost:11434/v1", "OLLAMA_API_KEY"),
}


def openai_chat_model(name: str, **options: Unpack[HttpModelOptions]) -> HttpModel:
    """An OpenAI model over Chat Completions (key from ``OPENAI_API_KEY``).

    Args:
        name: The model name, e.g. ``"gpt-4.1-mini"``.
        **options: :class:`~bastion.providers.HttpModel` options (``api_key``,
            ``base_url``, ``http_client``, …).

    Raises:
        UserError: ``name`` is empty.
    """
    return HttpModel(name, protocol=ChatCompletionsProtocol(), provider="openai", **options)


def openai_compatible_model(spec: str, **options: Unpack[HttpModelOptions]) -> HttpModel:
    """A model of an OpenAI-compatible vendor, from ``"<preset>:<model>"``.

    Presets: ``groq``, ``openrouter``, ``deepseek``, ``together``, ``vllm``, ``lmstudio``,
    ``llamacpp``, ``ollama``. Any other name ``x`` reads its base URL from
    ``BASTION_X_BASE_URL`` (required unless ``base_url`` is given) and its key from
    ``BASTION_X_API_KEY`` (optional). The model's provider is the preset name.

    Args:
        spec: ``"<preset>:<model>"``, e.g. ``"groq:llama-3.3-70b-versatile"``; the model
            part may itself contain ``:`` (``"ollama:llama3.2:3b"``).
        **options: :class:`~bastion.providers.HttpModel` options.

    Raises:
        UserError: ``spec`` is malformed, or a custom preset has no base URL.
    """
    preset, sep, model = spec.partition(":")
    preset = preset.strip().lower()
    if not sep or not preset or not model:
        known = ", ".join(repr(p) for p in PRESETS)
        raise UserError(
            f"OpenAI-compatible model {spec!r} is not of the form '<preset>:<model>' "
            f"(e.g. 'groq:llama-3.3-70b-versatile'). Presets: {known}, or any name with "
            "BASTION_<NAME>_BASE_URL set."
        )
    if preset in PRESETS:
        base_url, key_env = PRESETS[preset]
    else:
        variable = preset.upper().replace("-", "_")
        key_env = f"BASTION_{variable}_API_KEY"
        url_env = f"BASTION_{variable}_BASE_URL"
        env_url = os.environ.get(url_env)
        if not env_url and not options.get("base_url"):
            raise UserError(
                f"Unknown OpenAI-compatible preset {preset!r} and {url_env} is not set. "
                f"Set {url_env} (and {key_env} if the server needs a key), pass base_url=, "
                f"or use a preset: {', '.join(repr(p) for p in PRESETS)}."
            )
        base_url = env_url or ""
    protocol = ChatCompletionsProtocol(
        vendor=preset, default_base_url=base_url, api_key_env=key_env
    )
    return HttpModel(model, protocol=protocol, provider=preset, **options)
