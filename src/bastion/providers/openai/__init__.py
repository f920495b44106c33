"""OpenAI Chat Completions: OpenAI and every OpenAI-compatible server.

``openai:<model>`` resolves to :func:`openai_chat_model`, and
``openai-compatible:<preset>:<model>`` to :func:`openai_compatible_model`. What each
compatible server accepts is data: a :class:`ChatParams` profile per :class:`Preset`.
"""

from bastion.providers._http import HttpModelOptions

from ._factories import (
    PresetVariables,
    openai_chat_model,
    openai_compatible_model,
    preset_variables,
)
from ._parser import ChatCompletionsParser
from ._protocol import ChatCompletionsProtocol
from ._vendors import GENERIC, OPENAI, PRESETS, ChatParams, Preset

__all__ = [
    "GENERIC",
    "OPENAI",
    "PRESETS",
    "ChatCompletionsParser",
    "ChatCompletionsProtocol",
    "ChatParams",
    "HttpModelOptions",
    "Preset",
    "PresetVariables",
    "openai_chat_model",
    "openai_compatible_model",
    "preset_variables",
]
