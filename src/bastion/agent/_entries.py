"""A run's journal entries, typed: one frozen dataclass per kind behind one ``TypeAdapter``.

The store keeps an entry as its ``kind`` and a JSON ``payload``; :func:`entry_payload`
writes an entry's payload (every field but ``kind``) and :func:`read_entry` reads one back,
checked, the kind choosing the dataclass (like messages in ``bastion.core``). A field
added later has a default, so rows written before it still load; a ``tool_result``
written before ``spent`` existed keeps its model usage in the older fields it had.

``state`` stays the JSON object the state's own adapter writes (``state_payload``): the
fold turns it into a ``RunState`` once it needs one. JSON fields are ``Mapping[str, object]``
(pydantic validates them as any JSON) and are narrowed where they are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal, TypeAlias

from bastion.core import (
    AssistantMessage,
    FinishReason,
    Message,
    StreamChunk,
    ToolErrorKind,
    Usage,
)
from bastion.tools import InputAction

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "CompactionEntry",
    "DecidedAnswer",
    "DecidedApproval",
    "DecidedInterrupt",
    "HandoffEntry",
    "InterruptDecidedEntry",
    "InterruptRaisedEntry",
    "JournalRecord",
    "ModelResponseEntry",
    "PendingCall",
    "RunEndedEntry",
    "RunStartedEntry",
    "Spent",
    "ToolCallStartedEntry",
    "ToolResultEntry",
    "entry_payload",
    "read_entry",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Spent:
    """Model usage spent for the run outside its own model calls, under a model key."""

    model: str
    usage: Usage


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStartedEntry:
    """The opened run: instructions, history, input, ids and metadata."""

    kind: Literal["run_started"] = "run_started"
    event_seq: int = 0
    state: Mapping[str, object]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelResponseEntry:
    """A model's assembled answer; ``inserted``: messages that joined before it."""

    kind: Literal["model_response"] = "model_response"
    event_seq: int = 0
    step: int
    model: str
    message: AssistantMessage
    usage: Usage
    finish_reason: FinishReason = "stop"
    inserted: list[Message] = field(default_factory=list[Message])
    incomplete: bool = False
    chunks: list[StreamChunk] | None = None
    """The answer as the provider streamed it, kept when the run records responses."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallStartedEntry:
    """A tool call about to run: the side-effect ledger."""

    kind: Literal["tool_call_started"] = "tool_call_started"
    event_seq: int = 0
    step: int
    tool_call_id: str
    tool_name: str
    arguments: str
    side_effect_class: str
    idempotency_key: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultEntry:
    """A tool call's result, as the model read it, and what it told the run.

    ``summary_usage`` / ``summary_model`` / ``nested_usage`` are only read: entries written
    before ``spent`` kept a result's model usage there.
    """

    kind: Literal["tool_result"] = "tool_result"
    event_seq: int = 0
    step: int
    tool_call_id: str
    tool_name: str
    arguments: str
    content: str
    is_error: bool
    error_kind: ToolErrorKind | None = None
    duration: float = 0.0
    untrusted: bool = False
    promote: list[str] = field(default_factory=list[str])
    spent: list[Spent] = field(default_factory=list[Spent])
    edited: bool = False
    provenance: Mapping[str, object] | None = None
    """Where the output came from (data-flow policy), as ``Provenance.to_dict()``."""
    secrets_used: list[str] = field(default_factory=list[str])
    """Names of the vault secrets the call revealed (never their values)."""
    summary_usage: Usage | None = None
    summary_model: str | None = None
    nested_usage: dict[str, Usage] | None = None

    def all_spent(self) -> list[Spent]:
        """The result's model usage, in the form it was written in."""
        spent = list(self.spent)
        if self.summary_usage is not None:
            spent.append(Spent(model=str(self.summary_model), usage=self.summary_usage))
        spent.extend(Spent(model=m, usage=u) for m, u in (self.nested_usage or {}).items())
        return spent


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionEntry:
    """The history as compaction left it, and what the summary cost."""

    kind: Literal["compaction"] = "compaction"
    event_seq: int = 0
    messages: list[Message]
    spent: list[Spent] = field(default_factory=list[Spent])


@dataclass(frozen=True, kw_only=True, slots=True)
class HandoffEntry:
    """Another agent took the run over: the history it starts from, and how it was made.

    ``input_filter`` is the filter's descriptor (as JSON); ``spent`` what a summary cost.
    """

    kind: Literal["handoff"] = "handoff"
    event_seq: int = 0
    from_agent: str
    to_agent: str
    tool_call_id: str
    step: int
    messages: list[Message]
    input_filter: Mapping[str, object] = field(default_factory=dict[str, object])
    spent: list[Spent] = field(default_factory=list[Spent])


@dataclass(frozen=True, kw_only=True, slots=True)
class DecidedAnswer:
    """A person's answer as the journal keeps it: the action and the content given."""

    action: InputAction = "accept"
    content: dict[str, object] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class DecidedApproval:
    """A human's decision on one pending call, bound to the call by ``digest``.

    ``answer`` is a person's answer to the question the call asked (``action`` and
    ``content``): the call runs again with it, in this process or after a crash.
    """

    tool_call_id: str
    granted: bool
    reason: str | None = None
    arguments: dict[str, object] | None = None
    result: str | None = None
    digest: str | None = None
    answer: DecidedAnswer | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class DecidedInterrupt:
    """A decision on a governance interrupt (``decision``: as ``decision_from_dict`` reads)."""

    interrupt_id: str
    decision: object


@dataclass(frozen=True, kw_only=True, slots=True)
class InterruptDecidedEntry:
    """The directive a suspended run resumed with."""

    kind: Literal["interrupt_decided"] = "interrupt_decided"
    event_seq: int = 0
    approvals: list[DecidedApproval] = field(default_factory=list[DecidedApproval])
    interrupts: list[DecidedInterrupt] = field(default_factory=list[DecidedInterrupt])


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingCall:
    """A call a suspended run waits on."""

    tool_call_id: str
    tool_name: str
    reason: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class InterruptRaisedEntry:
    """The run suspended: its whole state, and what it waits for."""

    kind: Literal["interrupt_raised"] = "interrupt_raised"
    event_seq: int = 0
    state: Mapping[str, object]
    pending: list[PendingCall] = field(default_factory=list[PendingCall])
    interrupts: list[str] = field(default_factory=list[str])


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEndedEntry:
    """The run ended: its whole state."""

    kind: Literal["run_ended"] = "run_ended"
    event_seq: int = 0
    state: Mapping[str, object]


JournalRecord: TypeAlias = (
    RunStartedEntry
    | ModelResponseEntry
    | ToolCallStartedEntry
    | ToolResultEntry
    | CompactionEntry
    | HandoffEntry
    | InterruptDecidedEntry
    | InterruptRaisedEntry
    | RunEndedEntry
)
"""One journal entry; ``kind`` tells which."""


_OLDER_RESULT_FIELDS = ("summary_usage", "summary_model", "nested_usage")


@cache
def _adapter() -> TypeAdapter[JournalRecord]:
    from pydantic import Field, TypeAdapter

    return TypeAdapter(Annotated[JournalRecord, Field(discriminator="kind")])


def entry_payload(entry: JournalRecord) -> dict[str, object]:
    """The entry as the JSON payload the store keeps (its kind is kept beside it)."""
    if isinstance(entry, ToolResultEntry):  # the older fields are read, written as ``spent``
        entry = replace(
            entry,
            spent=entry.all_spent(),
            summary_usage=None,
            summary_model=None,
            nested_usage=None,
        )
    payload: dict[str, object] = _adapter().dump_python(entry, mode="json")
    del payload["kind"]
    if isinstance(entry, ModelResponseEntry) and entry.chunks is None:
        del payload["chunks"]  # only recorded runs keep them
    if isinstance(entry, ToolResultEntry):
        for older in _OLDER_RESULT_FIELDS:
            del payload[older]
    return payload


def read_entry(kind: str, payload: Mapping[str, object]) -> JournalRecord:
    """The typed entry of a stored ``kind`` and ``payload``.

    Raises:
        pydantic.ValidationError: The payload does not fit the kind (a ``ValueError``).
    """
    return _adapter().validate_python({**payload, "kind": kind})
