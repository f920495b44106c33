"""OpenAI Chat Completions: OpenAI and every OpenAI-compatible vendor.

``openai:<model>`` resolves to :func:`openai_chat_model`, and
``openai-compatible:<preset>:<model>`` to :func:`openai_compatible_model`.
"""

from ._factories import PRESETS, HttpModelOptions, openai_chat_model, openai_compatible_model
from ._parser import ChatCompletionsParser
from ._protocol import ChatCompletionsProtocol

__all__ = [
    "PRESETS",
    "ChatCompletionsParser",
    "ChatCompletionsProtocol",
    "HttpModelOptions",
    "openai_chat_model",
    "openai_compatible_model",
]
