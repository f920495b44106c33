"""Compaction: keeping a conversation inside the model's context window.

A history is a pinned prefix (its leading system messages: byte-identical across steps and
compactions, so vendors' prompt caches keep hitting) followed by exchanges. An exchange is a
user message, or a model answer together with the results of the tools it called, so no
strategy can split a tool call from its result. Exchanges, not user exchanges, are the unit: an
agent working on one request for fifty steps has one user turn and fifty exchanges.

The strategies, each a function of a history that returns a new one (nothing is mutated):

- ``trim`` drops the oldest exchanges, keeping the user message the kept ones answer;
- ``clear_tool_results`` replaces large tool results of older exchanges with a short
  placeholder (and a handle to read the result again, when the caller can keep one);
- ``summarize`` asks a summarizer for a summary of the older exchanges, placed right after
  the prefix; an earlier summary is among them, so summaries fold into a summary of
  summaries;
- ``hybrid`` clears tool results, then summarizes, then trims, stopping as soon as the
  history fits.

Each strategy brings the history down to ``target`` of the budget (not just under the
trigger), so a long conversation compacts now and then, not at every step.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from bastion.core import (
    AssistantMessage,
    Message,
    Model,
    SystemMessage,
    ToolMessage,
    UserError,
    UserMessage,
)

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
    "split_exchanges",
    "summarize",
    "trim",
]

CompactionStrategy: TypeAlias = Literal["trim", "summarize", "hybrid", "clear_tool_results"]
_STRATEGIES: tuple[CompactionStrategy, ...] = ("trim", "summarize", "hybrid", "clear_tool_results")

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
"""How a summary starts; the model reads it as context, not as a new request."""

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
        keep_last: The most recent exchanges (a user message, or an answer with its tool
            results), never compacted.
        clear_results_over: ``clear_tool_results`` clears results larger than this (tokens).
        clear_results_at: A second, lower trigger (a share of the budget, below
            ``threshold``): past it, the large results of older exchanges are cleared
            (no model call, handles kept as by ``clear_tool_results``), so the history
            stays lean between compactions. ``None`` (default): off.
        summarizer: The model that writes summaries (a model or ``"vendor:model"``); the
            agent's own model when ``None``.
        essentials: Hooks run after each compaction; what they return is re-injected.
        enabled: ``False`` exchanges automatic compaction off (manual compaction still works).
    """

    strategy: CompactionStrategy = "hybrid"
    threshold: float = 0.85
    target: float = 0.6
    max_context_tokens: int | None = None
    reserve_output_tokens: int = 4_096
    keep_last: int = 4
    clear_results_over: int = 512
    clear_results_at: float | None = None
    summarizer: Model | str | None = None
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
        early = self.clear_results_at
        if early is not None and not 0 < early < self.threshold:
            raise UserError(
                f"ContextConfig: need 0 < clear_results_at < threshold, got "
                f"clear_results_at={early!r}, threshold={self.threshold!r}."
            )
        for name in ("keep_last", "reserve_output_tokens", "clear_results_over"):
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
    exchanges_dropped: int = 0
    exchanges_summarized: int = 0
    results_cleared: int = 0
    duration: float = 0.0
    essentials: tuple[str, ...] = ()
    hook_errors: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        """Whether the history changed."""
        return bool(self.exchanges_dropped or self.exchanges_summarized or self.results_cleared)


def split_exchanges(messages: Sequence[Message]) -> tuple[list[Message], list[list[Message]]]:
    """The pinned prefix (leading system messages) and the exchanges after it.

    An exchange starts at a user message or at a model answer; tool results (and any system
    message) belong to the exchange before them.
    """
    start = 0
    while start < len(messages) and isinstance(messages[start], SystemMessage):
        start += 1
    exchanges: list[list[Message]] = []
    for message in messages[start:]:
        if isinstance(message, UserMessage | AssistantMessage) or not exchanges:
            exchanges.append([message])
        else:
            exchanges[-1].append(message)
    return list(messages[:start]), exchanges


def _join(prefix: list[Message], exchanges: Sequence[Sequence[Message]]) -> list[Message]:
    out = list(prefix)
    for exchange in exchanges:
        out.extend(exchange)
    return out


def _kept_from(
    exchanges: Sequence[Sequence[Message]], counter: TokenCounter, room: int, keep_last: int
) -> int:
    """The index of the first exchange kept: the last ``keep_last`` always, more while they fit.

    ``room`` is what the prefix leaves of the budget (the request's own framing included).
    """
    framing = counter.count_messages(())
    first = max(len(exchanges) - keep_last, 0)
    used = sum(counter.count_messages(t) - framing for t in exchanges[first:])
    while first > 0:
        size = counter.count_messages(exchanges[first - 1]) - framing
        if used + size > room:
            break
        used += size
        first -= 1
    return first


def trim(
    messages: Sequence[Message], counter: TokenCounter, *, budget: int, keep_last: int = 4
) -> Compaction:
    """Drop the oldest exchanges until the history fits ``budget`` tokens (the prefix stays).

    When the first exchange kept is not a user message, the user message it answers stays
    too: a model that no longer sees the request it is working on would start guessing.
    """
    before = counter.count_messages(messages)
    prefix, exchanges = split_exchanges(messages)
    if exchanges and _is_summary(exchanges[0][0]):  # a summary stays, like the prefix
        prefix, exchanges = [*prefix, *exchanges[0]], exchanges[1:]
    room = budget - counter.count_messages(prefix)
    first = _kept_from(exchanges, counter, room, keep_last)
    kept = exchanges[first:]
    if first and kept and not isinstance(kept[0][0], UserMessage):
        request = next(
            (e for e in reversed(exchanges[:first]) if isinstance(e[0], UserMessage)), None
        )
        if request is not None:
            kept = [request, *kept]
    out = _join(prefix, kept)
    return Compaction(
        messages=out,
        strategy="trim",
        tokens_before=before,
        tokens_after=counter.count_messages(out) if first else before,
        exchanges_dropped=len(exchanges) - len(kept),
    )


def _is_summary(message: Message) -> bool:
    return isinstance(message, UserMessage) and message.text.startswith(SUMMARY_HEADER)


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
    keep_last: int = 2,
    over: int = 512,
    keep: ResultKeeper | None = None,
) -> Compaction:
    """Replace large tool results of older exchanges with a placeholder, oldest first.

    Stops as soon as the history fits ``budget``. Results of the last ``keep_last``
    exchanges are never touched; a secret result is cleared without a handle, so it is not
    copied anywhere.
    """
    before = counter.count_messages(messages)
    prefix, exchanges = split_exchanges(messages)
    total, cleared = before, 0
    new_exchanges = [list(t) for t in exchanges]
    for exchange in new_exchanges[: max(len(new_exchanges) - keep_last, 0)]:
        for i, message in enumerate(exchange):
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
            exchange[i] = ToolMessage(
                tool_call_id=message.tool_call_id,
                tool_name=message.tool_name,
                content=text,
                is_error=message.is_error,
                sensitivity=message.sensitivity,
            )
            total -= size - counter.count_text(text)
            cleared += 1
    out = _join(prefix, new_exchanges) if cleared else list(messages)
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
    keep_last: int = 2,
) -> Compaction:
    """Replace the older exchanges with a summary written by ``summarizer``.

    The exchanges that fit ``budget`` (at least the last ``keep_last``) stay as they are;
    everything older, an earlier summary included, is summarized in one call. Nothing is
    summarized when the older exchanges hold no model answer.
    """
    before = counter.count_messages(messages)
    prefix, exchanges = split_exchanges(messages)
    first = _kept_from(exchanges, counter, budget - counter.count_messages(prefix), keep_last)
    # A span without a model answer (the request alone, or an earlier summary) has nothing
    # a summary would shorten, and rewording a request loses what the user said.
    if not any(isinstance(e[0], AssistantMessage) for e in exchanges[:first]):
        return Compaction(
            messages=list(messages), strategy="summarize", tokens_before=before, tokens_after=before
        )
    older = _join([], exchanges[:first])
    text = (await summarizer(older)).strip()
    summary = UserMessage(content=f"{SUMMARY_HEADER}{text}")
    out = [*prefix, summary, *_join([], exchanges[first:])]
    return Compaction(
        messages=out,
        strategy="summarize",
        tokens_before=before,
        tokens_after=counter.count_messages(out),
        summary_tokens=counter.count_text(summary.text),
        exchanges_summarized=first,
    )


async def clear_old_results(
    messages: Sequence[Message],
    config: ContextConfig,
    counter: TokenCounter,
    *,
    keep: ResultKeeper | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Compaction:
    """What ``clear_results_at`` does: clear every large result older than ``keep_last``."""
    started = clock()
    done = await clear_tool_results(
        messages, counter, budget=0, keep_last=config.keep_last,
        over=config.clear_results_over, keep=keep,
    )  # fmt: skip
    return replace(done, duration=clock() - started)


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
    keep_last = config.keep_last
    strategy = config.strategy
    if strategy == "summarize" and summarizer is None:
        raise UserError("Compaction strategy 'summarize' needs a summarizer model.")
    if strategy == "trim":
        result = trim(messages, counter, budget=goal, keep_last=keep_last)
    elif strategy == "clear_tool_results":
        result = await clear_tool_results(
            messages, counter, budget=goal, keep_last=keep_last,
            over=config.clear_results_over, keep=keep,
        )  # fmt: skip
    elif strategy == "summarize":
        assert summarizer is not None
        result = await summarize(messages, counter, summarizer, budget=goal, keep_last=keep_last)
    else:
        result = await _hybrid(
            messages, config, counter, goal=goal, summarizer=summarizer, keep=keep
        )
    essentials, errors = await _essentials(config.essentials, result)
    messages_out = result.messages
    if essentials:
        prefix, exchanges = split_exchanges(messages_out)
        notes = [UserMessage(content=text) for text in essentials]
        at = 1 if exchanges and _is_summary(exchanges[0][0]) else 0
        messages_out = _join([*prefix, *_join([], exchanges[:at]), *notes], exchanges[at:])
    return Compaction(
        messages=messages_out,
        strategy=strategy,
        tokens_before=result.tokens_before,
        tokens_after=counter.count_messages(messages_out) if essentials else result.tokens_after,
        summary_tokens=result.summary_tokens,
        exchanges_dropped=result.exchanges_dropped,
        exchanges_summarized=result.exchanges_summarized,
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
    keep_last = config.keep_last
    cleared = await clear_tool_results(
        messages, counter, budget=goal, keep_last=keep_last,
        over=config.clear_results_over, keep=keep,
    )  # fmt: skip
    current, summary_tokens, summarized, dropped = cleared, 0, 0, 0
    if current.tokens_after > goal and summarizer is not None:
        current = await summarize(
            current.messages, counter, summarizer, budget=goal, keep_last=keep_last
        )
        summary_tokens, summarized = current.summary_tokens, current.exchanges_summarized
    if current.tokens_after > goal:
        current = trim(current.messages, counter, budget=goal, keep_last=keep_last)
        dropped = current.exchanges_dropped
    return Compaction(
        messages=current.messages,
        strategy="hybrid",
        tokens_before=cleared.tokens_before,
        tokens_after=current.tokens_after,
        summary_tokens=summary_tokens,
        exchanges_dropped=dropped,
        exchanges_summarized=summarized,
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
