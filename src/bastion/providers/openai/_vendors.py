"""What each OpenAI-compatible server accepts: parameter profiles and presets, as data.

Servers that speak Chat Completions differ in which request fields they take (and a few
answer HTTP 400/422 to a field they do not know). :class:`ChatParams` records, per server,
how to spell each setting or that it must be left out; ``_payload`` reads it and never
names a vendor. :data:`PRESETS` maps each ``openai-compatible:<preset>`` name to its base
URL, key variable and profile. Every row cites what it follows: the vendor's public API
reference at the time of writing (``docs/providers.md`` keeps the list with the quirks).

Called by ``_factories`` (preset lookup) and ``_payload`` (profile reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bastion.core import ReasoningEffort

__all__ = [
    "GENERIC",
    "OPENAI",
    "PRESETS",
    "ChatParams",
    "Preset",
    "ReasoningEcho",
    "ToolCallContent",
]

ToolCallContent = Literal["empty", "omit", "null"]
ReasoningEcho = Literal["none", "reasoning_content", "reasoning_details", "mistral"]
_ALL_CHOICES = frozenset({"auto", "none", "required", "named"})
_NO_NAMED = frozenset({"auto", "none", "required"})
# OpenAI's reasoning_effort values (gpt-5.1 and later take none; later models xhigh).
_OPENAI_EFFORTS: tuple[ReasoningEffort, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")


@dataclass(frozen=True, kw_only=True, slots=True)
class ChatParams:
    """The request fields one Chat Completions server accepts, and their spelling.

    Attributes:
        max_tokens: The field that carries ``ModelSettings.max_tokens``.
        stream_usage: Send ``stream_options: {"include_usage": true}`` on streaming calls.
        parallel_tool_calls: The server takes ``parallel_tool_calls`` (else it is left out).
        json_schema: Structured output as ``response_format.type = "json_schema"``; when
            False the request asks for ``json_object`` and states the schema in a system
            message instead.
        seed: The field that carries ``ModelSettings.seed`` (``None``: not accepted).
        reasoning_effort: Where ``extra={"reasoning_effort": ...}`` goes:
            ``"reasoning_effort"`` (top level) or ``"reasoning.effort"`` (nested object).
        tool_choice: The ``tool_choice`` forms accepted: ``auto``, ``none``, ``required``
            and ``named`` (``{"type": "function", ...}``). A named choice the server does
            not take is sent as that tool alone with ``required``.
        message_name: The server takes ``name`` on user messages.
        tool_call_content: ``content`` of an assistant message that only calls tools:
            ``""`` (``empty``), left out (``omit``) or ``null``.
        reasoning_efforts: The ``ReasoningConfig.effort`` levels the server takes.
        reasoning_budget: The server takes ``ReasoningConfig.budget_tokens`` as
            ``reasoning.max_tokens`` (else a budget is refused).
        thinking_toggle: The server turns thinking on and off with
            ``thinking: {"type": "enabled" | "disabled"}`` (effort ``none`` disables it).
        reasoning_echo: How earlier reasoning goes back on assistant messages:
            ``reasoning_content`` (text), ``reasoning_details`` (the opaque array, as
            received), ``mistral`` (typed ``thinking`` chunks in ``content``) or ``none``.
    """

    max_tokens: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    stream_usage: bool = True
    parallel_tool_calls: bool = True
    json_schema: bool = True
    seed: str | None = "seed"
    reasoning_effort: Literal["reasoning_effort", "reasoning.effort"] = "reasoning_effort"
    tool_choice: frozenset[str] = _ALL_CHOICES
    message_name: bool = True
    tool_call_content: ToolCallContent = "empty"
    reasoning_echo: ReasoningEcho = "none"
    reasoning_efforts: tuple[ReasoningEffort, ...] = _OPENAI_EFFORTS
    reasoning_budget: bool = False
    thinking_toggle: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class Preset:
    """An ``openai-compatible`` preset: where the server is and what it accepts.

    Attributes:
        base_url: The default API base, up to and including ``/v1``.
        api_key_env: The vendor's conventional key variable (``BASTION_<NAME>_API_KEY``
            is read first).
        params: The request profile.
        local: A server the user runs (no key needed).
        url_suffix: Appended to a configured base URL that lacks it (Ollama's ``/v1``,
            so one ``BASTION_OLLAMA_BASE_URL`` serves both Ollama protocols).
        notes: One line on the quirks, shown by ``bastion models``.
    """

    base_url: str
    api_key_env: str | None
    params: ChatParams
    local: bool = False
    url_suffix: str = ""
    notes: str = ""


# OpenAI itself: max_completion_tokens (max_tokens is rejected by its reasoning models).
# Tool-call turns get content "" like everywhere: OpenAI accepts it, and `openai:` is often
# pointed at a compatible server through OPENAI_BASE_URL.
OPENAI = ChatParams(max_tokens="max_completion_tokens")

# An unknown server: the fields nearly every compatible server takes. max_tokens rather
# than max_completion_tokens (most local servers ignore the latter).
GENERIC = ChatParams()

PRESETS: dict[str, Preset] = {
    "openrouter": Preset(
        base_url="https://openrouter.ai/api/v1",
        api_key_env="OPENROUTER_API_KEY",
        # reasoning is a nested object; reasoning_details must come back unchanged;
        # content left out on tool-call turns (an empty text block upsets some upstreams).
        # reasoning.max_tokens carries a thinking budget.
        params=ChatParams(
            reasoning_effort="reasoning.effort",
            tool_call_content="omit",
            reasoning_echo="reasoning_details",
            reasoning_budget=True,
        ),
        notes="reasoning_details sent back; reasoning effort as reasoning.effort",
    ),
    "deepseek": Preset(
        base_url="https://api.deepseek.com/v1",
        api_key_env="DEEPSEEK_API_KEY",
        # No parallel_tool_calls or seed in its reference; response_format json_object only;
        # thinking mode needs reasoning_content back on tool-call turns; thinking is
        # switched by thinking.type, its depth by reasoning_effort (it maps every level).
        params=ChatParams(
            parallel_tool_calls=False,
            json_schema=False,
            seed=None,
            reasoning_echo="reasoning_content",
            reasoning_efforts=("none", "minimal", "low", "medium", "high", "xhigh", "max"),
            thinking_toggle=True,
        ),
        notes="reasoning_content sent back; JSON object mode (no json_schema); no seed",
    ),
    "mistral": Preset(
        base_url="https://api.mistral.ai/v1",
        api_key_env="MISTRAL_API_KEY",
        # Extra fields are rejected (422): no stream_options (usage comes anyway);
        # the seed is random_seed; thinking arrives as typed content chunks.
        params=ChatParams(stream_usage=False, seed="random_seed", reasoning_echo="mistral"),
        notes="random_seed; no stream_options; thinking chunks parsed and sent back",
    ),
    "groq": Preset(
        base_url="https://api.groq.com/openai/v1",
        api_key_env="GROQ_API_KEY",
        # messages[].name is a 400; max_tokens is deprecated in favour of
        # max_completion_tokens.
        params=ChatParams(max_tokens="max_completion_tokens", message_name=False),
        notes="max_completion_tokens; user message names left out (Groq rejects them)",
    ),
    "together": Preset(
        base_url="https://api.together.xyz/v1",
        api_key_env="TOGETHER_API_KEY",
        params=ChatParams(stream_usage=False, parallel_tool_calls=False),
        notes="usage arrives without stream_options; no parallel_tool_calls",
    ),
    "fireworks": Preset(
        base_url="https://api.fireworks.ai/inference/v1",
        api_key_env="FIREWORKS_API_KEY",
        params=ChatParams(stream_usage=False, parallel_tool_calls=False),
        notes="usage arrives without stream_options; no parallel_tool_calls",
    ),
    "xai": Preset(
        base_url="https://api.x.ai/v1",
        api_key_env="XAI_API_KEY",
        params=ChatParams(max_tokens="max_completion_tokens"),
        notes="max_completion_tokens; reasoning_effort only on models that take it",
    ),
    "cerebras": Preset(
        base_url="https://api.cerebras.ai/v1",
        api_key_env="CEREBRAS_API_KEY",
        params=ChatParams(max_tokens="max_completion_tokens", stream_usage=False),
        notes="max_completion_tokens; usage arrives without stream_options",
    ),
    "vllm": Preset(
        base_url="http://localhost:8000/v1",
        api_key_env="VLLM_API_KEY",
        params=GENERIC,
        local=True,
        notes="reasoning read from reasoning_content or reasoning",
    ),
    "llamacpp": Preset(
        base_url="http://localhost:8080/v1",
        api_key_env="LLAMACPP_API_KEY",
        # A named tool_choice object is silently treated as "auto" by llama-server.
        params=ChatParams(tool_choice=_NO_NAMED),
        local=True,
        notes="a named tool_choice is sent as that tool alone + required",
    ),
    "lmstudio": Preset(
        base_url="http://localhost:1234/v1",
        api_key_env="LMSTUDIO_API_KEY",
        params=ChatParams(stream_usage=False, parallel_tool_calls=False, tool_choice=_NO_NAMED),
        local=True,
        notes="no stream_options or parallel_tool_calls; named tool_choice emulated",
    ),
    "ollama": Preset(
        base_url="http://localhost:11434/v1",
        api_key_env="OLLAMA_API_KEY",
        params=ChatParams(parallel_tool_calls=False, tool_choice=_NO_NAMED),
        local=True,
        url_suffix="/v1",
        notes="Ollama's /v1; BASTION_OLLAMA_BASE_URL may name the server root",
    ),
}
