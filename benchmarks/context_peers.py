"""Context: Bastion's compaction beside pydantic-ai's history processors and LangChain's
summarization middleware, on one scripted 500-turn conversation.

``python -m benchmarks.context_peers`` (also run by ``python -m benchmarks.context``).

The conversation is ``benchmarks.context.conversation()`` with 16 facts told in user turns
0-375 ("Fact k: the code for order k is ...") and asked about again in the last 16 turns.
Each turn is two model calls (after the question, after the tool result). Before each call
every framework prepares what it sends: Bastion counts with its ledger, compacts when over
85% of a 128k budget and checks the transcript; LangChain runs
``SummarizationMiddleware.before_model`` (trigger at the same token count, its default
``keep=("messages", 20)``; counting with o200k like the others, and with its own default
approximate counter); pydantic-ai runs a history processor written as its documentation
shows (summarize all but the last 20 messages once over the same threshold, counted with
o200k; pydantic-ai ships no summarizer of its own), whose output is kept as the history.
All share one scripted summarizer: it keeps the facts found in what it is given (older
summaries included) and one fixed sentence.

Figures per framework: prepare time per call (median and p95 over all 1,000 calls), the
tokens sent in total (o200k, message text and tool-call arguments, the same count for all),
how many summaries were written, and recall: the share of the 16 late questions whose fact
was still in what was sent when it was asked.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bastion.context import (
    ContextConfig,
    TokenizerCounter,
    TokenLedger,
    TranscriptGuard,
    clear_old_results,
    compact,
)
from bastion.core import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolMessage,
    UserMessage,
    text_of,
)

from .context import BUDGET, conversation

FACTS = 16
_FACT = re.compile(r"Fact \d+: the code for order \d+ is \w+\.")
_CODES = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor")
TRIGGER = int(BUDGET * 0.85)
BASTION_CONFIGS = (
    # The defaults: clear old tool results first, summarize only if that is not enough,
    # compact down to 60% of the budget (more verbatim context, fewer summaries).
    ("Bastion hybrid (defaults)", ContextConfig(strategy="hybrid", keep_last=8)),
    # Compacting as deep as the peers do (their 20 kept messages are ~5 exchanges).
    (
        "Bastion hybrid, target 5%",
        ContextConfig(strategy="hybrid", keep_last=5, target=0.05),
    ),
    ("Bastion summarize, target 5%", ContextConfig(strategy="summarize", keep_last=5, target=0.05)),
    # The same, plus the early trigger: past 10% of the budget, the tool results of older
    # exchanges (over 200 tokens) are cleared in batches, with no model call; summaries
    # still come at 85%. The facts asked about are in user turns, which it never touches.
    (
        "Bastion hybrid + clear_results_at 10%",
        ContextConfig(
            strategy="hybrid",
            keep_last=5,
            target=0.05,
            clear_results_at=0.1,
            clear_results_over=200,
        ),
    ),
)


def scripted() -> tuple[list[Message], dict[int, str]]:
    """The conversation with facts planted early and asked about at the end."""
    history = conversation()
    facts: dict[int, str] = {}
    for k in range(FACTS):
        turn = 25 * k
        fact = f"Fact {k}: the code for order {k} is {_CODES[k % 8]}{k * 7}."
        facts[k] = fact
        first = history[1 + 4 * turn]
        assert isinstance(first, UserMessage)
        history[1 + 4 * turn] = UserMessage(content=f"{text_of(first.content)} {fact}")
    asked: dict[int, str] = {}
    for k in range(FACTS):
        turn = 500 - FACTS + k
        history[1 + 4 * turn] = UserMessage(content=f"Question {turn}: the code for order {k}?")
        asked[turn] = facts[k]
    return history, asked


def summary_of(texts: Iterable[str]) -> str:
    """The shared scripted summarizer: the facts seen, in order, and one sentence."""
    found = dict.fromkeys(f for text in texts for f in _FACT.findall(text))
    return "Earlier turns looked up orders and invoices. " + " ".join(found)


@dataclass
class Tally:
    """What one framework sent and what it cost."""

    name: str
    prepare_ms: list[float] = field(default_factory=list[float])
    tokens_sent: int = 0
    summaries: int = 0
    recalled: int = 0


class _Tokens:
    """o200k counts of message texts, cached by text (the same for every framework)."""

    def __init__(self) -> None:
        self.counter = TokenizerCounter("o200k_base")
        self.counter.warm()
        self._cache: dict[str, int] = {}

    def __call__(self, texts: Iterable[str]) -> int:
        total = 0
        for text in texts:
            n = self._cache.get(text)
            if n is None:
                n = self._cache[text] = self.counter.count_text(text)
            total += n
        return total


# -- Bastion ----------------------------------------------------------------------------


class _Bastion:
    def __init__(self, tokens: _Tokens, tally: Tally, config: ContextConfig) -> None:
        self.counter = tokens.counter
        self.ledger = TokenLedger(self.counter)
        self.guard = TranscriptGuard()
        self.config = config
        self.history: list[Message] = []
        self.tally = tally
        self.cleared = 0.0  # as RunWindow: the next early clear waits for 10% more

    async def _summarize(self, messages: Sequence[Message]) -> str:
        self.tally.summaries += 1
        return summary_of(_bastion_texts(messages))

    async def prepare(self, new: Sequence[Message]) -> list[str]:
        self.history.extend(new)
        started = time.perf_counter()
        tokens = self.ledger.count(self.history)
        early = self.config.clear_results_at
        if tokens > TRIGGER:
            done = await compact(
                self.history, self.config, self.counter, budget=BUDGET, summarizer=self._summarize
            )
            self.history = list(done.messages)
        elif early is not None and tokens > max(BUDGET * early, self.cleared):
            done = await clear_old_results(self.history, self.config, self.counter)
            self.cleared = done.tokens_after + BUDGET * 0.1
            self.history = list(done.messages)
        sent = self.guard.check(self.history).messages
        self.tally.prepare_ms.append((time.perf_counter() - started) * 1e3)
        return _bastion_texts(sent)


def _bastion_texts(messages: Sequence[Message]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            out.append(text_of(m.parts))
            out.extend(c.arguments for c in m.tool_calls)
        elif isinstance(m, (UserMessage, ToolMessage)):
            out.append(text_of(m.content))
        elif isinstance(m, SystemMessage):
            out.append(m.content)
    return out


# -- LangChain --------------------------------------------------------------------------


def _langchain(history: Sequence[Message]) -> tuple[list[Any], Callable[[list[Any]], list[str]]]:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.messages import SystemMessage as LcSystem
    from langchain_core.messages import ToolMessage as LcTool

    out: list[Any] = []
    for m in history:
        if isinstance(m, SystemMessage):
            out.append(LcSystem(content=m.content))
        elif isinstance(m, UserMessage):
            out.append(HumanMessage(content=text_of(m.content)))
        elif isinstance(m, ToolMessage):
            out.append(LcTool(content=text_of(m.content), tool_call_id=m.tool_call_id))
        elif isinstance(m, AssistantMessage):
            calls = [
                {"id": c.id, "name": c.name, "args": {"q": c.arguments}, "type": "tool_call"}
                for c in m.tool_calls
            ]
            out.append(AIMessage(content=text_of(m.parts), tool_calls=calls))

    def texts(messages: list[Any]) -> list[str]:
        found: list[str] = []
        for m in messages:
            found.append(m.content if isinstance(m.content, str) else str(m.content))
            found.extend(str(c["args"]["q"]) for c in getattr(m, "tool_calls", []) or [])
        return found

    return out, texts


class _LangChain:
    def __init__(self, tally: Tally, counter: Callable[[Any], int] | None) -> None:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

        def summarize(messages: list[Any]) -> str:
            tally.summaries += 1
            return summary_of(str(m.content) for m in messages)

        options: dict[str, Any] = {} if counter is None else {"token_counter": counter}
        self.middleware = SummarizationMiddleware(
            GenericFakeChatModel(messages=iter(())),
            trigger=("tokens", TRIGGER),
            summarizer=summarize,
            **options,
        )
        self.messages: list[Any] = []
        self.tally = tally

    def prepare(self, new: Sequence[Any], texts: Callable[[list[Any]], list[str]]) -> list[str]:
        from langchain_core.messages import RemoveMessage

        self.messages.extend(new)
        started = time.perf_counter()
        update = self.middleware.before_model({"messages": self.messages}, None)  # pyright: ignore[reportArgumentType]
        if update is not None:
            self.messages = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
        self.tally.prepare_ms.append((time.perf_counter() - started) * 1e3)
        return texts(self.messages)


# -- pydantic-ai ------------------------------------------------------------------------


def _pydantic(history: Sequence[Message]) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for m in history:
        if isinstance(m, SystemMessage):
            out.append(ModelRequest(parts=[SystemPromptPart(content=m.content)]))
        elif isinstance(m, UserMessage):
            out.append(ModelRequest(parts=[UserPromptPart(content=text_of(m.content))]))
        elif isinstance(m, ToolMessage):
            part = ToolReturnPart(
                tool_name=m.tool_name, content=text_of(m.content), tool_call_id=m.tool_call_id
            )
            out.append(ModelRequest(parts=[part]))
        elif isinstance(m, AssistantMessage):
            parts: list[Any] = [TextPart(content=text_of(m.parts))] if m.parts else []
            parts += [ToolCallPart(c.name, c.arguments, c.id) for c in m.tool_calls]
            out.append(ModelResponse(parts=parts))
    return out


def _pydantic_texts(messages: Sequence[Any]) -> list[str]:
    return [
        str(getattr(part, "content", None) or getattr(part, "args", "") or "")
        for m in messages
        for part in m.parts
    ]


class _PydanticAI:
    """A history processor as pydantic-ai's documentation writes one, token-triggered."""

    def __init__(self, tally: Tally, tokens: _Tokens) -> None:
        self.messages: list[Any] = []
        self.tally = tally
        self.tokens = tokens

    def processor(self, messages: list[Any]) -> list[Any]:
        from pydantic_ai.messages import ModelRequest, UserPromptPart

        if self.tokens(_pydantic_texts(messages)) <= TRIGGER:
            return messages
        cut = len(messages) - 20
        while cut > 1 and not isinstance(messages[cut].parts[0], UserPromptPart):
            cut -= 1  # never split a tool call from its return
        self.tally.summaries += 1
        summary = summary_of(_pydantic_texts(messages[1:cut]))
        note = ModelRequest(parts=[UserPromptPart(content=f"Summary: {summary}")])
        return [messages[0], note, *messages[cut:]]

    def prepare(self, new: Sequence[Any]) -> list[str]:
        self.messages.extend(new)
        started = time.perf_counter()
        self.messages = self.processor(self.messages)
        self.tally.prepare_ms.append((time.perf_counter() - started) * 1e3)
        return _pydantic_texts(self.messages)


# -- the run ----------------------------------------------------------------------------


def _calls(history: Sequence[Any]) -> list[tuple[int, int, int]]:
    """(turn, start, end) for the two model calls of each turn: after the question, after
    the tool result (the system prompt goes with the first)."""
    spans: list[tuple[int, int, int]] = []
    for turn in range((len(history) - 1) // 4):
        first = 1 + 4 * turn
        spans.append((turn, 0 if turn == 0 else first, first + 1))
        spans.append((-1, first + 1, first + 3))
    return spans


def _account(tally: Tally, sent: list[str], turn: int, asked: dict[int, str], tokens: _Tokens):
    tally.tokens_sent += tokens(sent)
    if turn in asked and any(asked[turn] in text for text in sent):
        tally.recalled += 1


def run() -> list[Tally]:
    history, asked = scripted()
    tokens = _Tokens()
    results: list[Tally] = []

    for name, config in BASTION_CONFIGS:
        bastion = Tally(name)
        driver = _Bastion(tokens, bastion, config)
        for turn, start, end in _calls(history):
            sent = _LOOP.run_until_complete(driver.prepare(history[start:end]))
            _account(bastion, sent, turn, asked, tokens)
        results.append(bastion)

    lc_history, lc_texts = _langchain(history)

    def o200k(messages: Iterable[Any]) -> int:
        return tokens(lc_texts(list(messages)))

    counters: tuple[tuple[str, Callable[[Any], int] | None], ...] = (
        ("LangChain summarization (o200k count)", o200k),
        ("LangChain summarization (its counter)", None),
    )
    for name, counter in counters:
        langchain = Tally(name)
        lc = _LangChain(langchain, counter)
        for turn, start, end in _calls(lc_history):
            _account(langchain, lc.prepare(lc_history[start:end], lc_texts), turn, asked, tokens)
        results.append(langchain)

    pa_history = _pydantic(history)
    pydantic = Tally("pydantic-ai history processor")
    pa = _PydanticAI(pydantic, tokens)
    for turn, start, end in _calls(pa_history):
        _account(pydantic, pa.prepare(pa_history[start:end]), turn, asked, tokens)
    results.append(pydantic)
    return results


_LOOP = asyncio.new_event_loop()


def report(results: Sequence[Tally]) -> None:
    print(
        f"{'framework':36} {'p50 ms':>8} {'p95 ms':>8} {'tokens sent':>14} {'summaries':>9} recall"
    )
    for t in results:
        p50 = statistics.median(t.prepare_ms)
        p95 = statistics.quantiles(t.prepare_ms, n=20)[18]
        print(
            f"{t.name:38} {p50:8.3f} {p95:8.3f} {t.tokens_sent:14,} {t.summaries:9} "
            f"{t.recalled}/{FACTS}"
        )


def main() -> int:
    report(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
