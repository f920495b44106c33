"""Transcripts a provider will accept, whatever the history went through.

Compaction, a crash between a tool call and its result, a cancelled tool, an edited or
imported session: each can leave a history that a vendor rejects with HTTP 400 (a tool
result with no call, a call with no result, a user turn between a call and its result, an
empty assistant turn, a conversation that starts with the assistant). :func:`repair_transcript`
runs before a request is built, in one pass, and fixes what is safe to fix, saying what it
did; what cannot be fixed without guessing (two calls of one answer sharing an id) raises
:class:`TranscriptError`.

Role alternation is not checked here: the adapters whose protocol requires it merge
consecutive turns of one role themselves.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from bastion.core import (
    AssistantMessage,
    BastionError,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

__all__ = [
    "GENERIC_RULES",
    "MISSING_RESULT",
    "PROTOCOL_RULES",
    "Repair",
    "RepairKind",
    "RepairedTranscript",
    "TranscriptError",
    "TranscriptGuard",
    "TranscriptRules",
    "repair_transcript",
]

MISSING_RESULT = "Tool call not run: no result was recorded for it."
"""The error result given to a tool call that has none."""

SHORTENED = "(The earlier part of this conversation is not shown.)"
"""The user turn put first when a protocol needs one and the history starts otherwise."""

RepairKind: TypeAlias = Literal[
    "orphan_result_dropped",
    "duplicate_result_dropped",
    "missing_result_added",
    "result_moved",
    "empty_assistant_dropped",
    "user_turn_added",
]


class TranscriptError(BastionError):
    """A history that cannot be made valid without guessing what it meant."""


@dataclass(kw_only=True, slots=True, frozen=True)
class TranscriptRules:
    """What one wire protocol requires of a conversation beyond the common rules.

    Attributes:
        protocol: The protocol's name, for messages.
        first_turn_user: The first message after the system prompt must be the user's.
    """

    protocol: str = "generic"
    first_turn_user: bool = False


GENERIC_RULES = TranscriptRules()

PROTOCOL_RULES: dict[str, TranscriptRules] = {
    "openai-chat": TranscriptRules(protocol="openai-chat"),
    "openai-responses": TranscriptRules(protocol="openai-responses"),
    "ollama": TranscriptRules(protocol="ollama"),
    "anthropic": TranscriptRules(protocol="anthropic", first_turn_user=True),
    "gemini": TranscriptRules(protocol="gemini", first_turn_user=True),
}
"""The rules of each shipped protocol, by the name its adapter reports."""


@dataclass(kw_only=True, slots=True, frozen=True)
class Repair:
    """One change made to a history so a provider accepts it."""

    kind: RepairKind
    tool_call_id: str | None = None
    index: int | None = None  # the message's position in the history given


@dataclass(kw_only=True, slots=True, frozen=True)
class RepairedTranscript:
    """The history to send, and what was changed to make it valid (empty: nothing)."""

    messages: list[Message]
    repairs: tuple[Repair, ...]


class _Repairer:
    """One pass over a history: tool results follow their calls, each call gets one result."""

    __slots__ = ("answered", "deferred", "moved", "out", "pending", "repairs")

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.repairs: list[Repair] = []
        self.pending: dict[str, ToolCall] = {}  # calls of the last assistant turn, unanswered
        self.deferred: list[tuple[int, Message]] = []  # turns that came between call and result
        self.moved = False  # a result arrived after a deferred turn
        self.answered: set[str] = set()  # the last answer's calls already answered

    def take(self, index: int, message: Message) -> None:
        """The next message of the history (``index``: its position in it)."""
        if isinstance(message, AssistantMessage):
            self.assistant(index, message)
        elif isinstance(message, ToolMessage):
            self.tool(index, message)
        else:
            self.other(index, message)

    def assistant(self, index: int, message: AssistantMessage) -> None:
        self.close()
        if not message.tool_calls and all(isinstance(p, ReasoningPart) for p in message.parts):
            # Reasoning alone is no answer: vendors reject a turn with nothing after it.
            self.repairs.append(Repair(kind="empty_assistant_dropped", index=index))
            return
        # Results are matched to the calls of the answer just before them, so an id only
        # has to be unique within one answer (some servers reuse ids from step to step).
        ids = [call.id for call in message.tool_calls]
        if len(set(ids)) != len(ids):
            repeated = next(i for i in ids if ids.count(i) > 1)
            raise TranscriptError(
                f"Two tool calls of one answer share the id {repeated!r} (message {index}): "
                "their results cannot be told apart. Give each call its own id."
            )
        self.answered = set()
        self.out.append(message)
        self.pending = {call.id: call for call in message.tool_calls}

    def tool(self, index: int, message: ToolMessage) -> None:
        call_id = message.tool_call_id
        if call_id in self.pending:
            del self.pending[call_id]
            self._answer(call_id)
            self.out.append(message)
            if self.deferred:
                self.moved = True
            if not self.pending:
                self.flush()
            return
        kind: RepairKind = (
            "duplicate_result_dropped" if call_id in self.answered else "orphan_result_dropped"
        )
        self.repairs.append(Repair(kind=kind, tool_call_id=call_id, index=index))

    def _answer(self, call_id: str) -> None:
        self.answered.add(call_id)

    def other(self, index: int, message: Message) -> None:
        if self.pending:
            self.deferred.append((index, message))
        else:
            self.out.append(message)

    def close(self) -> None:
        """Answer the open calls of the last assistant turn, then let deferred turns in."""
        for call in self.pending.values():
            self.out.append(
                ToolMessage(
                    tool_call_id=call.id, tool_name=call.name, content=MISSING_RESULT, is_error=True
                )
            )
            self._answer(call.id)
            self.repairs.append(Repair(kind="missing_result_added", tool_call_id=call.id))
        self.pending = {}
        self.flush()

    def flush(self) -> None:
        if self.moved:
            self.repairs.extend(Repair(kind="result_moved", index=i) for i, _ in self.deferred)
            self.moved = False
        self.out.extend(message for _, message in self.deferred)
        self.deferred = []


def repair_transcript(
    messages: Sequence[Message], rules: TranscriptRules = GENERIC_RULES
) -> RepairedTranscript:
    """Return ``messages`` made valid for ``rules``' protocol, and the repairs made.

    - a tool result whose call is not in the assistant turn before it is dropped, and so is a
      second result for one call;
    - a call with no result gets an error result (:data:`MISSING_RESULT`);
    - a user or system turn between a call and its result moves after the results;
    - an assistant turn with neither content nor calls is dropped (reasoning alone does not
      count as content);
    - with ``rules.first_turn_user``, a history that starts (after the system prompt) with
      anything but a user turn gets a short user turn first.

    The messages themselves are not changed; a valid history comes back as an equal list with
    no repairs.

    Raises:
        TranscriptError: Two tool calls of one answer share an id.
    """
    repairer = _Repairer()
    for index, message in enumerate(messages):
        repairer.take(index, message)
    repairer.close()
    return _finish(repairer, rules)


def _finish(repairer: _Repairer, rules: TranscriptRules) -> RepairedTranscript:
    out = repairer.out
    if rules.first_turn_user:
        first = next((i for i, m in enumerate(out) if not isinstance(m, SystemMessage)), None)
        if first is not None and not isinstance(out[first], UserMessage):
            out.insert(first, UserMessage(content=SHORTENED))
            repairer.repairs.append(Repair(kind="user_turn_added", index=first))
    return RepairedTranscript(messages=out, repairs=tuple(repairer.repairs))


class TranscriptGuard:
    """:func:`repair_transcript` for a growing history, checking only what each step added.

    It remembers the longest prefix of the last history that was valid as it stood (every
    call answered, nothing repaired); when the next history starts with the same message
    objects, only the messages after that prefix are checked. Any change inside the prefix
    means a full check.
    """

    __slots__ = ("_answered", "_clean", "rules")

    def __init__(self, rules: TranscriptRules = GENERIC_RULES) -> None:
        self.rules = rules
        self._clean: list[Message] = []  # a valid prefix, as the objects it held
        self._answered: set[str] = set()  # the calls answered in that prefix

    def reset(self) -> None:
        """Forget the valid prefix: the next check is a full one."""
        self._clean, self._answered = [], set()

    def check(self, messages: Sequence[Message]) -> RepairedTranscript:
        """The history to send, and the repairs (as :func:`repair_transcript`)."""
        clean = self._clean
        start = len(clean)
        repairer = _Repairer()
        if start and start <= len(messages) and all(map(operator.is_, clean, messages)):
            repairer.out = list(messages[:start])
            repairer.answered = set(self._answered)
        else:
            start = 0
        mark = (start, frozenset(repairer.answered))  # the end of the valid prefix
        try:
            for index in range(start, len(messages)):
                repairer.take(index, messages[index])
                if not repairer.pending and not repairer.deferred and not repairer.repairs:
                    mark = (index + 1, frozenset(repairer.answered))
        except TranscriptError:
            self.reset()
            raise
        end, answered = mark
        repairer.close()
        self._clean = list(messages[:end])
        self._answered = set(answered)
        return _finish(repairer, self.rules)
