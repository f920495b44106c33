"""Running a filter descriptor on a message list (``apply_filter``).

Filters never mutate their input: every message that changes is a copy. All of them but
``summary`` are pure functions of the messages (and of the run's provenance ledger, for
``by_sensitivity``); ``summary`` calls the summarizer the caller gives (the agent passes a
model call governed like any other of the run).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from bastion.context import SUMMARY_HEADER, split_exchanges
from bastion.core import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    ToolMessage,
    UserError,
    UserMessage,
)

from ._descriptors import (
    BySensitivity,
    Compose,
    HandoffInputFilterDescriptor,
    LastN,
    LastUser,
    StripReasoning,
    StripSensitiveOutputs,
    StripToolCalls,
    Summary,
)

if TYPE_CHECKING:
    from bastion.security import Provenance

__all__ = ["SECRET_PLACEHOLDER", "FilterContext", "FilterSummarizer", "apply_filter"]

SECRET_PLACEHOLDER = "[secret tool output withheld at the handoff]"
"""What a ``secret`` tool output reads after ``strip_sensitive_outputs``."""

FilterSummarizer = Callable[[Sequence[Message], Summary], Awaitable[str]]
"""Writes the summary of a span for a ``summary`` filter."""

_RANK = {"public": 0, "internal": 1, "secret": 2}


@dataclass(frozen=True, kw_only=True, slots=True)
class FilterContext:
    """What filters may read beside the messages.

    Attributes:
        summarize: Writes summaries (``summary`` filters); ``None``: such a filter raises.
        provenance: The run's provenance by tool call id (``by_sensitivity`` and
            ``strip_sensitive_outputs`` take the higher of a message's label and its
            provenance's).
    """

    summarize: FilterSummarizer | None = None
    provenance: Mapping[str, Provenance] = field(default_factory=dict[str, "Provenance"])


async def apply_filter(
    descriptor: HandoffInputFilterDescriptor,
    messages: Sequence[Message],
    context: FilterContext | None = None,
) -> list[Message]:
    """The messages ``descriptor`` keeps of ``messages`` (a new list; the input is unchanged).

    Raises:
        UserError: A ``summary`` filter without a summarizer in ``context``.
    """
    context = context or FilterContext()
    match descriptor:
        case Compose(filters=filters):
            out = list(messages)
            for inner in filters:
                out = await apply_filter(inner, out, context)
            return out
        case Summary():
            return await _summary(descriptor, messages, context)
        case _:
            return _pure(descriptor, messages, context)


def _pure(
    descriptor: HandoffInputFilterDescriptor, messages: Sequence[Message], context: FilterContext
) -> list[Message]:
    match descriptor:
        case LastN(n=n):
            return _last_n(messages, n)
        case LastUser():
            users = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
            last = users[-1] if users else -1
            return [m for i, m in enumerate(messages) if isinstance(m, SystemMessage) or i == last]
        case StripReasoning():
            return _strip_reasoning(messages)
        case StripToolCalls():
            return _strip_tool_calls(messages)
        case StripSensitiveOutputs():
            return [
                replace(m, content=SECRET_PLACEHOLDER)
                if isinstance(m, ToolMessage) and _level(m, context) == "secret"
                else m
                for m in messages
            ]
        case BySensitivity():
            return _by_sensitivity(descriptor, messages, context)
        case _:  # Compose and Summary are handled by apply_filter
            raise AssertionError(descriptor)


def _last_n(messages: Sequence[Message], n: int) -> list[Message]:
    others = [i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)]
    kept = set(others[-n:])
    return [m for i, m in enumerate(messages) if isinstance(m, SystemMessage) or i in kept]


def _strip_reasoning(messages: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and any(
            isinstance(p, ReasoningPart) for p in message.parts
        ):
            parts = [p for p in message.parts if not isinstance(p, ReasoningPart)]
            if parts or message.tool_calls:  # nothing but reasoning: nothing to forward
                out.append(replace(message, parts=parts))
            continue
        out.append(message)
    return out


def _strip_tool_calls(messages: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            continue
        if isinstance(message, AssistantMessage) and message.tool_calls:
            if message.parts:
                out.append(replace(message, tool_calls=[]))
            continue
        out.append(message)
    return out


def _level(message: ToolMessage, context: FilterContext) -> str:
    level = message.sensitivity
    provenance = context.provenance.get(message.tool_call_id)
    if provenance is not None and _RANK[provenance.sensitivity] > _RANK[level]:
        return provenance.sensitivity
    return level


def _by_sensitivity(
    descriptor: BySensitivity, messages: Sequence[Message], context: FilterContext
) -> list[Message]:
    ceiling = _RANK[descriptor.max]
    dropped: set[str] = set()
    for message in messages:
        if not isinstance(message, ToolMessage):
            continue
        provenance = context.provenance.get(message.tool_call_id)
        untrusted = provenance is not None and provenance.trust == "untrusted"
        if _RANK[_level(message, context)] > ceiling or (
            untrusted and descriptor.untrusted == "drop"
        ):
            dropped.add(message.tool_call_id)
    if not dropped:
        return list(messages)
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id in dropped:
            continue
        if isinstance(message, AssistantMessage) and any(
            c.id in dropped for c in message.tool_calls
        ):
            calls = [c for c in message.tool_calls if c.id not in dropped]
            if calls or message.parts:
                out.append(replace(message, tool_calls=calls))
            continue
        out.append(message)
    return out


async def _summary(
    descriptor: Summary, messages: Sequence[Message], context: FilterContext
) -> list[Message]:
    prefix, exchanges = split_exchanges(messages)
    cut = max(len(exchanges) - descriptor.keep_last, 0)
    older = [m for exchange in exchanges[:cut] for m in exchange]
    if not older:  # nothing before the kept exchanges: nothing to summarize
        return list(messages)
    if context.summarize is None:
        raise UserError(
            "filters.summary() needs a summarizer: it runs at an agent's handoff (which "
            "passes the run's model), or give apply_filter a FilterContext(summarize=...)."
        )
    text = (await context.summarize(older, descriptor)).strip()
    kept = [m for exchange in exchanges[cut:] for m in exchange]
    return [*prefix, UserMessage(content=f"{SUMMARY_HEADER}{text}"), *kept]
