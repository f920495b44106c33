"""The built-in providers as data: each prefix, its protocol and the variables it reads.

What ``bastion models`` prints and ``docs/providers.md`` documents. The variable lists are
the ones the factories really read, in the order they try them: ``BASTION_<NAME>_BASE_URL``
first for every provider, then the older or vendor-conventional names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from bastion.providers.openai import PRESETS, preset_variables

__all__ = ["ProviderInfo", "provider_catalog"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ProviderInfo:
    """One way to name a model: ``<spec>``, its wire protocol and its configuration."""

    spec: str
    protocol: str
    base_url: str
    base_url_variables: tuple[str, ...]
    api_key_variables: tuple[str, ...]
    notes: str = ""

    def configured(self) -> tuple[str, ...]:
        """The variables of this provider that are set in the environment (names only)."""
        names = (*self.base_url_variables, *self.api_key_variables)
        return tuple(name for name in names if os.environ.get(name, "").strip())


def _native(
    prefix: str,
    protocol: str,
    *,
    base_url: str,
    base_env: str,
    keys: tuple[str, ...],
    notes: str = "",
) -> ProviderInfo:
    upper = prefix.upper().replace("-", "_")
    return ProviderInfo(
        spec=f"{prefix}:<model>",
        protocol=protocol,
        base_url=base_url,
        base_url_variables=(f"BASTION_{upper}_BASE_URL", base_env),
        api_key_variables=keys,
        notes=notes,
    )


def provider_catalog() -> list[ProviderInfo]:
    """Every built-in provider: the five protocols, then each ``openai-compatible`` preset."""
    rows = [
        ProviderInfo(
            spec="openai:<model>",
            protocol="OpenAI Chat Completions",
            base_url="https://api.openai.com/v1",
            base_url_variables=("BASTION_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
            api_key_variables=("BASTION_OPENAI_API_KEY", "OPENAI_API_KEY"),
            notes="max_completion_tokens; stream=False supported",
        ),
        _native(
            "openai-responses",
            "OpenAI Responses",
            base_url="https://api.openai.com/v1",
            base_env="OPENAI_BASE_URL",
            keys=("OPENAI_API_KEY",),
            notes="reasoning items round-trip encrypted",
        ),
        _native(
            "anthropic",
            "Anthropic Messages",
            base_url="https://api.anthropic.com",
            base_env="ANTHROPIC_BASE_URL",
            keys=("ANTHROPIC_API_KEY",),
            notes="thinking blocks round-trip signed",
        ),
        _native(
            "gemini",
            "Gemini generateContent",
            base_url="https://generativelanguage.googleapis.com",
            base_env="GEMINI_BASE_URL",
            keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            notes="",
        ),
        ProviderInfo(
            spec="ollama:<model>",
            protocol="Ollama /api/chat",
            base_url="http://localhost:11434",
            base_url_variables=("BASTION_OLLAMA_BASE_URL", "OLLAMA_BASE_URL", "OLLAMA_HOST"),
            api_key_variables=(),
            notes="thinking sent back; stream=False supported",
        ),
    ]
    for name, preset in PRESETS.items():
        variables = preset_variables(name)
        rows.append(
            ProviderInfo(
                spec=f"openai-compatible:{name}:<model>",
                protocol="Chat Completions (local server)" if preset.local else "Chat Completions",
                base_url=preset.base_url,
                base_url_variables=variables.base_url,
                api_key_variables=variables.api_key,
                notes=preset.notes,
            )
        )
    rows.append(
        ProviderInfo(
            spec="openai-compatible:<name>:<model>",
            protocol="Chat Completions (any server)",
            base_url="(required)",
            base_url_variables=("BASTION_<NAME>_BASE_URL",),
            api_key_variables=("BASTION_<NAME>_API_KEY",),
            notes="the fields nearly every compatible server accepts",
        )
    )
    return rows
