"""Context: the per-step cost of keeping a 500-turn conversation inside the window.

``python -m benchmarks.context`` builds a 500-turn conversation (a question, a tool call, a
~300-token tool result and an answer per turn: about 200k tokens), then replays it step by
step as an agent would: each step adds a turn, counts the request with the o200k tokenizer
(``TokenLedger``: only the new messages are counted), checks the compaction trigger against a
128k budget, and checks the transcript for the protocol (``TranscriptGuard``: only the new
messages are checked). Figures: the median and p95 per-step cost over the last 100
steps (the largest histories), the first (cold) count of the whole history, one hybrid
compaction (clear tool results, then trim), and the memory the counting cache adds beside the
history itself (tracemalloc).

Target (issue 15): prepare cost per step <= 2 ms; memory per session <= 2x the raw history.
Then the peer comparison of ``benchmarks.context_peers`` (pydantic-ai, LangChain).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
import tracemalloc

from bastion.context import (
    ContextConfig,
    TokenizerCounter,
    TokenLedger,
    TranscriptGuard,
    compact,
)
from bastion.core import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)

TURNS = 500
BUDGET = 128_000
TARGET_STEP_MS = 2.0
_WORDS_TEXT = (
    "invoice customer order shipment ticket refund payment account balance report quarter "
    "region revenue forecast contract renewal schedule meeting summary status delivery item "
    "warehouse stock price discount tax total due date reference number note"
)
_WORDS = _WORDS_TEXT.split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def conversation(turns: int = TURNS, seed: int = 15) -> list[Message]:
    rng = random.Random(seed)
    out: list[Message] = [SystemMessage(content="You are the billing assistant. " * 20)]
    for n in range(turns):
        out.append(UserMessage(content=f"Question {n}: {_text(rng, 25)}?"))
        out.append(
            AssistantMessage(
                tool_calls=[ToolCall(id=f"c{n}", name="lookup", arguments=f'{{"q": "{n}"}}')]
            )
        )
        out.append(ToolMessage(tool_call_id=f"c{n}", tool_name="lookup", content=_text(rng, 290)))
        out.append(AssistantMessage(parts=[TextPart(text=_text(rng, 60))]))
    return out


def main() -> int:
    history = conversation()
    counter = TokenizerCounter("o200k_base")
    counter.warm()
    config = ContextConfig(strategy="hybrid", keep_last=8, clear_results_over=200)
    total_tokens = counter.count_messages(history)

    cold = TokenizerCounter("o200k_base")
    cold.warm()
    started = time.perf_counter()
    cold.count_messages(history)
    cold_ms = (time.perf_counter() - started) * 1e3

    steps: list[float] = []
    ledger = TokenLedger(counter)
    guard = TranscriptGuard()
    visible: list[Message] = []
    for end in range(5, len(history) + 1, 4):
        visible = [*visible, *history[len(visible) : end]]  # a step adds a turn
        started = time.perf_counter()
        tokens = ledger.count(visible)
        _ = tokens > BUDGET * config.threshold
        guard.check(visible)
        steps.append((time.perf_counter() - started) * 1e3)
    last = steps[-100:]
    p50, p95 = statistics.median(last), statistics.quantiles(last, n=20)[18]

    started = time.perf_counter()
    done = asyncio.run(compact(history, config, counter, budget=BUDGET))
    compact_ms = (time.perf_counter() - started) * 1e3

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    raw = conversation()
    middle = tracemalloc.take_snapshot()
    fresh = TokenizerCounter("o200k_base")
    fresh.count_messages(raw)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    raw_bytes = sum(s.size_diff for s in middle.compare_to(before, "filename"))
    cache_bytes = sum(s.size_diff for s in after.compare_to(middle, "filename"))

    print(f"conversation: {TURNS} turns, {len(history)} messages, {total_tokens:,} tokens (o200k)")
    print(f"cold count of the whole history: {cold_ms:.1f} ms")
    print(
        f"per-step prepare (count + trigger check + transcript repair), last 100 steps: "
        f"p50 {p50:.3f} ms, p95 {p95:.3f} ms (target <= {TARGET_STEP_MS} ms)"
    )
    print(
        f"hybrid compaction to {config.target:.0%} of {BUDGET:,}: {compact_ms:.1f} ms, "
        f"{done.tokens_before:,} -> {done.tokens_after:,} tokens, "
        f"{done.results_cleared} results cleared, {done.exchanges_dropped} exchanges dropped"
    )
    print(
        f"memory: history {raw_bytes / 1e6:.2f} MB, counting cache +{cache_bytes / 1e6:.2f} MB "
        f"({(raw_bytes + cache_bytes) / raw_bytes:.2f}x the raw history; target <= 2x)"
    )
    print("\npeers (benchmarks.context_peers), the same scripted conversation:")
    from .context_peers import report, run

    report(run())
    return 0 if p95 <= TARGET_STEP_MS else 1


if __name__ == "__main__":
    sys.exit(main())
