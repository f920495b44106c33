"""Compaction: keeping a conversation inside the model's context window.

A history is a pinned prefix (its leading system messages: byte-identical across steps and
compactions, so vendors' prompt caches keep hitting) followed by turns. A turn starts at a
user message and runs to the next one, so a tool call and its result always share a turn and
no strategy can split them.

The strategies, each a function of a history that returns a new one (nothing is mutated):

- ``trim`` drops the oldest turns;
- ``clear_tool_results`` replaces large tool results of older turns with a short placeholder
  (and a handle to read the result again, when the caller can keep one);
- ``summarize`` asks a summarizer for a summary of the older turns, placed right after the
  prefix; an earlier summary is among the older turns, so summaries fold into a
  summary of summaries;
- ``hybrid`` clears tool results, then summarizes, then trims, stopping as soon as the
  history fits.

Each strategy brings the history down to ``target`` of the budget (not just under the
trigger), so a long conversation compacts now and then, not at every step.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from bastion.core import Message, SystemMessage, ToolMessage, UserError, UserMessage

from ._tokens import TokenCounter

__all__ = [
    "SUMMARY_HEADER",
    "Compaction",
    "CompactionStrategy",
    "ContextConfig",
    "EssentialsHook",
    "ResultKeeper",
    "Summarizer",
    "clear_tool_results",
    "compact",
    "split_turns",
    "summarize",
    "trim",
]

CompactionStrategy: TypeAlias = Literal["trim", "summarize", "hybrid", "clear_tool_results"]
_STRATEGIES: tuple[CompactionStrategy, ...] = ("trim", "summarize", "hybrid", "clear_tool_results")

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
"""How a summary turn starts; the model reads it as context, not as a new request."""

Summarizer: TypeAlias = Callable[[Sequence[Message]], Awaitable[str]]
"""Writes a summary of a span of conversation (the agent passes a governed model call)."""

ResultKeeper: TypeAlias = Callable[[ToolMessage], Awaitable[str | None]]
"""Keeps a tool result somewhere it can be read again; returns its handle (or ``None``)."""

EssentialsHook: TypeAlias = Callable[["Compaction"], "Awaitable[str | None] | str | None"]
"""After a compaction: text that must stay in context (put right after the summary)."""


@dataclass(kw_only=True, slots=True, frozen=True)
class ContextConfig:
    """How an agent keeps its conversations inside the model's context window.

    Attributes:
        strategy: ``"trim"``, ``"summarize"``, ``"hybrid"`` or ``"clear_tool_results"``.
        threshold: Compact when the request would use more than this share of the budget.
        target: Compact down to this share of the budget.
        max_context_tokens: The window, overriding the model profile's.
        reserve_output_tokens: Kept free for the answer: the budget is the window less this.
        keep_last_turns: The most recent turns, never compacted.
        clear_results_over: ``clear_tool_results`` clears results larger than this (tokens).
        summarizer: The model that writes summaries (a model or ``"vendor:model"``); the
            agent's own model when ``None``.
        essentials: Hooks run after each compaction; what they return is re-injected.
        enabled: ``False`` turns automatic compaction off (manual compaction still works).
    """

    strategy: CompactionStrategy = "hybrid"
    threshold: float = 0.85
    target: float = 0.6
    max_context_tokens: int | None = None
    reserve_output_tokens: int = 4_096
    keep_last_turns: int = 2
    clear_results_over: int = 512
    summarizer: object | None = None
    essentials: Sequence[EssentialsHook] = ()
    enabled: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in _STRATEGIES:
            raise UserError(
                f"ContextConfig(strategy={self.strategy!r}): expected one of "
                f"{', '.join(map(repr, _STRATEGIES))}."
            )
        if not 0 < self.target <= self.threshold <= 1:
            raise UserError(
                f"ContextConfig: need 0 < target <= threshold <= 1, got target={self.target!r}, "
                f"threshold={self.threshold!r}."
            )
        for name in ("keep_last_turns", "reserve_output_tokens", "clear_results_over"):
            if getattr(self, name) < 0:
                raise UserError(f"ContextConfig({name}=...) must be >= 0.")
        if self.max_context_tokens is not None and self.max_context_tokens <= 0:
            raise UserError(
                f"ContextConfig(max_context_tokens={self.max_context_tokens!r}) must be > 0."
            )

    def budget(self, context_window: int | None) -> int | None:
        """The tokens a request may hold: the window less the reserved output (or ``None``)."""
        window = self.max_context_tokens or context_window
        if window is None:
            return None
        return max(window - self.reserve_output_tokens, 1)


@dataclass(kw_only=True, slots=True, frozen=True)
class Compaction:
    """What a compaction did: the new history and its figures."""

    messages: list[Message]
    strategy: CompactionStrategy
    tokens_before: int
    tokens_after: int
    summary_tokens: int = 0
    turns_dropped: int = 0
    turns_summarized: int = 0
    results_cleared: int = 0
    duration: float = 0.0
    essentials: tuple[str, ...] = ()
    hook_errors: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        """Whether the history changed."""
        return bool(self.turns_dropped or self.turns_summarized or self.results_cleared)


def split_turns(messages: Sequence[Message]) -> tuple[list[Message], list[list[Message]]]:
    """The pinned prefix (leading system messages) and the turns after it.

    A turn starts at a user message; messages before the first user message (after the
    prefix) form a turn of their own.
    """
    start = 0
    while start < len(messages) and isinstance(messages[start], SystemMessage):
        start += 1
    turns: list[list[Message]] = []
    for message in messages[start:]:
        if isinstance(message, UserMessage) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return list(messages[:start]), turns


def _join(prefix: list[Message], turns: Sequence[Sequence[Message]]) -> list[Message]:
    out = list(prefix)
    for turn in turns:
        out.extend(turn)
    return out


def _kept_from(
    turns: Sequence[Sequence[Message]], counter: TokenCounter, room: int, keep_last: int
) -> int:
    """The index of the first turn kept: the last ``keep_last`` always, more while they fit.

    ``room`` is what the prefix leaves of the budget (the request's own framing included).
    """
    framing = counter.count_messages(())
    first = max(len(turns) - keep_last, 0)
    used = sum(counter.count_messages(t) - framing for t in turns[first:])
    while first > 0:
        size = counter.count_messages(turns[first - 1]) - framing
        if used + size > room:
            break
        used += size
        first -= 1
    return first


def trim(
    messages: Sequence[Message], counter: TokenCounter, *, budget: int, keep_last_turns: int = 2
) -> Compaction:
    """Drop the oldest turns until the history fits ``budget`` tokens (the prefix stays)."""
    before = counter.count_messages(messages)
    prefix, turns = split_turns(messages)
    room = budget - counter.count_messages(prefix)
    first = _kept_from(turns, counter, room, keep_last_turns)
    kept = _join(prefix, turns[first:])
    return Compaction(
        messages=kept,
        strategy="trim",
        tokens_before=before,
        tokens_after=counter.count_messages(kept) if first else before,
        turns_dropped=first,
    )


def _placeholder(tokens: int, handle: str | None) -> str:
    text = f"[Tool result cleared to save context ({tokens} tokens)."
    if handle is not None:
        return f"{text} Read it again with read_result(handle={handle!r}).]"
    return f"{text}]"


async def clear_tool_results(
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    budget: int,
    keep_last_turns: int = 2,
    over: int = 512,
    keep: ResultKeeper | None = None,
) -> Compaction:
    """Replace large tool results of older turns with a placeholder, oldest first.

    Stops as soon as the history fits ``budget``; results of the last ``keep_last_turns``
    turns and secret results' handles are never touched (a secret result is cleared without
    a handle, so it is not copied anywhere).
    """
    before = counter.count_messages(messages)
    prefix, turns = split_turns(messages)
    total, cleared = before, 0
    new_turns = [list(t) for t in turns]
    for turn in new_turns[: max(len(new_turns) - keep_last_turns, 0)]:
        for i, message in enumerate(turn):
            if total <= budget:
                break
            if not isinstance(message, ToolMessage):
                continue
            size = counter.count_text(message.text)
            if size <= over:
                continue
            handle = None
            if keep is not None and message.sensitivity != "secret":
                handle = await keep(message)
            text = _placeholder(size, handle)
            turn[i] = ToolMessage(
                tool_call_id=message.tool_call_id,
                tool_name=message.tool_name,
                content=text,
                is_error=message.is_error,
                sensitivity=message.sensitivity,
            )
            total -= size - counter.count_text(text)
            cleared += 1
    out = _join(prefix, new_turns) if cleared else list(messages)
    return Compaction(
        messages=out,
        strategy="clear_tool_results",
        tokens_before=before,
        tokens_after=counter.count_messages(out) if cleared else before,
        results_cleared=cleared,
    )


async def summarize(
    messages: Sequence[Message],
    counter: TokenCounter,
    summarizer: Summarizer,
    *,
    budget: int,
    keep_last_turns: int = 2,
) -> Compaction:
    """Replace the older turns with a summary written by ``summarizer``.

    The turns that fit ``budget`` (at least the last ``keep_last_turns``) stay as they are;
    everything older, an earlier summary included, is summarized in one call.
    """
    before = counter.count_messages(messages)
    prefix, turns = split_turns(messages)
    first = _kept_from(turns, counter, budget - counter.count_messages(prefix), keep_last_turns)
    if first == 0:
        return Compaction(
            messages=list(messages), strategy="summarize", tokens_before=before, tokens_after=before
        )
    older = _join([], turns[:first])
    text = (await summarizer(older)).strip()
    summary = UserMessage(content=f"{SUMMARY_HEADER}{text}")
    out = [*prefix, summary, *_join([], turns[first:])]
    return Compaction(
        messages=out,
        strategy="summarize",
        tokens_before=before,
        tokens_after=counter.count_messages(out),
        summary_tokens=counter.count_text(summary.text),
        turns_summarized=first,
    )


async def compact(
    messages: Sequence[Message],
    config: ContextConfig,
    counter: TokenCounter,
    *,
    budget: int,
    summarizer: Summarizer | None = None,
    keep: ResultKeeper | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Compaction:
    """Compact ``messages`` with ``config.strategy`` down to ``config.target`` of ``budget``.

    ``hybrid`` clears tool results, then summarizes (when a summarizer is given), then trims,
    stopping at the first step that fits. The essentials hooks run last; a hook that fails is
    reported in :attr:`Compaction.hook_errors` and the others still run.

    Raises:
        UserError: ``summarize`` without a summarizer.
    """
    started = clock()
    goal = max(int(budget * config.target), 1)
    keep_last = config.keep_last_turns
    strategy = config.strategy
    if strategy == "summarize" and summarizer is None:
        raise UserError("Compaction strategy 'summarize' needs a summarizer model.")
    if strategy == "trim":
        result = trim(messages, counter, budget=goal, keep_last_turns=keep_last)
    elif strategy == "clear_tool_results":
        result = await clear_tool_results(
            messages, counter, budget=goal, keep_last_turns=keep_last,
            over=config.clear_results_over, keep=keep,
        )  # fmt: skip
    elif strategy == "summarize":
        assert summarizer is not None
        result = await summarize(
            messages, counter, summarizer, budget=goal, keep_last_turns=keep_last
        )
    else:
        result = await _hybrid(
            messages, config, counter, goal=goal, summarizer=summarizer, keep=keep
        )
    essentials, errors = await _essentials(config.essentials, result)
    messages_out = result.messages
    if essentials:
        prefix, turns = split_turns(messages_out)
        notes = [UserMessage(content=text) for text in essentials]
        first = turns[0][0] if turns else None
        at = 1 if isinstance(first, UserMessage) and first.text.startswith(SUMMARY_HEADER) else 0
        messages_out = _join([*prefix, *_join([], turns[:at]), *notes], turns[at:])
    return Compaction(
        messages=messages_out,
        strategy=strategy,
        tokens_before=result.tokens_before,
        tokens_after=counter.count_messages(messages_out) if essentials else result.tokens_after,
        summary_tokens=result.summary_tokens,
        turns_dropped=result.turns_dropped,
        turns_summarized=result.turns_summarized,
        results_cleared=result.results_cleared,
        duration=clock() - started,
        essentials=essentials,
        hook_errors=errors,
    )


async def _hybrid(
    messages: Sequence[Message],
    config: ContextConfig,
    counter: TokenCounter,
    *,
    goal: int,
    summarizer: Summarizer | None,
    keep: ResultKeeper | None,
) -> Compaction:
    keep_last = config.keep_last_turns
    cleared = await clear_tool_results(
        messages, counter, budget=goal, keep_last_turns=keep_last,
        over=config.clear_results_over, keep=keep,
    )  # fmt: skip
    current, summary_tokens, summarized, dropped = cleared, 0, 0, 0
    if current.tokens_after > goal and summarizer is not None:
        current = await summarize(
            current.messages, counter, summarizer, budget=goal, keep_last_turns=keep_last
        )
        summary_tokens, summarized = current.summary_tokens, current.turns_summarized
    if current.tokens_after > goal:
        current = trim(current.messages, counter, budget=goal, keep_last_turns=keep_last)
        dropped = current.turns_dropped
    return Compaction(
        messages=current.messages,
        strategy="hybrid",
        tokens_before=cleared.tokens_before,
        tokens_after=current.tokens_after,
        summary_tokens=summary_tokens,
        turns_dropped=dropped,
        turns_summarized=summarized,
        results_cleared=cleared.results_cleared,
    )


async def _essentials(
    hooks: Sequence[EssentialsHook], result: Compaction
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    texts: list[str] = []
    errors: list[str] = []
    for hook in hooks:
        try:
            value = hook(result)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:  # a failing hook is reported; the compaction stands
            errors.append(f"{getattr(hook, '__name__', repr(hook))}: {type(exc).__name__}: {exc}")
            continue
        if value:
            texts.append(value)
    return tuple(texts), tuple(errors)
