"""Anthropic's Messages API: :func:`anthropic_model` and its :class:`MessagesProtocol`.

Supported: text, images and documents (PDF, plain text) in, streamed text, tool calls,
extended thinking (signed and redacted blocks kept and sent back byte-exact), prompt-cache
usage. Structured output is emulated with a forced tool whose input is streamed back as the
answer's text, because this API version has no JSON-schema response mode.
"""

from __future__ import annotations

from typing import Unpack

from bastion.providers._http import HttpModel, HttpModelOptions

from ._protocol import MessagesProtocol

__all__ = ["MessagesProtocol", "anthropic_model"]


def anthropic_model(name: str, **options: Unpack[HttpModelOptions]) -> HttpModel:
    """Return a model of Anthropic's Messages API, e.g. ``anthropic_model("claude-sonnet-4-0")``.

    Args:
        name: The Anthropic model name.
        **options: Passed on to :class:`~bastion.providers.HttpModel` (``api_key``,
            ``base_url``, ``http_client``, ``timeout``…).
    """
    return HttpModel(name, protocol=MessagesProtocol(), provider="anthropic", **options)
