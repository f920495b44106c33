"""Anthropic's Messages API: :func:`anthropic_model` and its :class:`MessagesProtocol`.

Supported: text, images and documents (PDF, plain text) in, streamed or whole answers,
tool calls, extended thinking (signed and redacted blocks kept and sent back byte-exact),
prompt caching (:class:`PromptCache`) with cache usage reported. Structured output is native
(``output_config.format``) on the models that have it and a forced tool, whose input comes
back as the answer's text, on the others.
"""

from __future__ import annotations

from typing import Unpack

from bastion.providers._http import HttpModel, HttpModelOptions

from ._cache import PromptCache
from ._protocol import STRUCTURED_OUTPUT_MODELS, MessagesProtocol

__all__ = ["STRUCTURED_OUTPUT_MODELS", "MessagesProtocol", "PromptCache", "anthropic_model"]


def anthropic_model(
    name: str,
    *,
    cache: PromptCache | None = None,
    native_output: bool | None = None,
    **options: Unpack[HttpModelOptions],
) -> HttpModel:
    """Return a model of Anthropic's Messages API, e.g. ``anthropic_model("claude-sonnet-4-5")``.

    Args:
        name: The Anthropic model name.
        cache: Prompt-cache breakpoints for every request, e.g. ``PromptCache()`` (tools,
            system prompt and the latest turn); none by default.
        native_output: Structured output as ``output_config.format`` (True) or a forced
            tool (False); by default native where the model has it.
        **options: Passed on to :class:`~bastion.providers.HttpModel` (``api_key``,
            ``base_url``, ``http_client``, ``timeout``…).
    """
    protocol = MessagesProtocol(native_output=native_output, cache=cache)
    return HttpModel(name, protocol=protocol, provider="anthropic", **options)
