"""Context management: token counting, compaction and transcripts a provider accepts.

- :func:`token_counter` picks exact offline counting for a model with a public tokenizer, or
  a :class:`CalibratedCounter` that learns from the usage the vendor reports;
- :func:`compact` keeps a conversation inside the window (``trim``, ``summarize``,
  ``hybrid``, ``clear_tool_results``), never touching the pinned system prefix;
- :func:`repair_transcript` makes any history valid for a protocol before it is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._compact import (
        SUMMARY_HEADER,
        Compaction,
        CompactionStrategy,
        ContextConfig,
        EssentialsHook,
        ResultKeeper,
        Summarizer,
        clear_old_results,
        clear_tool_results,
        compact,
        split_exchanges,
        summarize,
        trim,
    )
    from ._suggest import SUGGEST_INSTRUCTIONS, Suggestions, parse_suggestions, suggestion_request
    from ._tokens import (
        ENCODINGS,
        CalibratedCounter,
        EstimateCounter,
        TokenCounter,
        TokenizerCounter,
        TokenLedger,
        token_counter,
    )
    from ._transcript import (
        GENERIC_RULES,
        MISSING_RESULT,
        PROTOCOL_RULES,
        Repair,
        RepairedTranscript,
        RepairKind,
        TranscriptError,
        TranscriptGuard,
        TranscriptRules,
        repair_transcript,
    )

_LAZY = {
    "SUGGEST_INSTRUCTIONS": "._suggest",
    "Suggestions": "._suggest",
    "parse_suggestions": "._suggest",
    "suggestion_request": "._suggest",
    "SUMMARY_HEADER": "._compact",
    "Compaction": "._compact",
    "CompactionStrategy": "._compact",
    "ContextConfig": "._compact",
    "EssentialsHook": "._compact",
    "ResultKeeper": "._compact",
    "Summarizer": "._compact",
    "clear_old_results": "._compact",
    "clear_tool_results": "._compact",
    "compact": "._compact",
    "split_exchanges": "._compact",
    "summarize": "._compact",
    "trim": "._compact",
    "ENCODINGS": "._tokens",
    "CalibratedCounter": "._tokens",
    "EstimateCounter": "._tokens",
    "TokenCounter": "._tokens",
    "TokenizerCounter": "._tokens",
    "TokenLedger": "._tokens",
    "token_counter": "._tokens",
    "GENERIC_RULES": "._transcript",
    "MISSING_RESULT": "._transcript",
    "PROTOCOL_RULES": "._transcript",
    "Repair": "._transcript",
    "RepairedTranscript": "._transcript",
    "RepairKind": "._transcript",
    "TranscriptError": "._transcript",
    "TranscriptGuard": "._transcript",
    "TranscriptRules": "._transcript",
    "repair_transcript": "._transcript",
}

__all__ = [
    "CalibratedCounter",
    "Compaction",
    "CompactionStrategy",
    "ContextConfig",
    "ENCODINGS",
    "EssentialsHook",
    "EstimateCounter",
    "GENERIC_RULES",
    "MISSING_RESULT",
    "PROTOCOL_RULES",
    "Repair",
    "RepairKind",
    "RepairedTranscript",
    "ResultKeeper",
    "SUGGEST_INSTRUCTIONS",
    "SUMMARY_HEADER",
    "Suggestions",
    "Summarizer",
    "TokenCounter",
    "TokenLedger",
    "TokenizerCounter",
    "TranscriptError",
    "TranscriptGuard",
    "TranscriptRules",
    "clear_old_results",
    "clear_tool_results",
    "compact",
    "parse_suggestions",
    "repair_transcript",
    "split_exchanges",
    "suggestion_request",
    "summarize",
    "token_counter",
    "trim",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
