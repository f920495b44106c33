"""S6b: what the compatible-server work costs per chunk: profiles and non-streamed answers.

``python -m benchmarks.providers_compat`` times the Chat Completions and Ollama parsers on
pre-decoded input (no network, no event loop), taking the fastest of many runs so a shared
machine's load does not drown sub-microsecond differences:

* **streamed**: 2,000 text deltas through ``ChatCompletionsParser`` (the S6 body), and the
  same with OpenRouter's ``reasoning``/``reasoning_details`` on every delta;
* **whole**: a non-streamed answer (``stream=False``) with 2,000 tool calls, per chunk it
  yields (JSON parsing included);
* **Ollama**: 2,000 NDJSON lines, and a whole answer;
* **request body**: ``build_payload`` for a 21-message conversation with 10 tools, per
  server profile (once per request, not per chunk).

Target (issue 12): the non-streamed parse and the profile logic add ≤ 1 µs per chunk.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from bastion.core import (
    AssistantMessage,
    ModelRequest,
    ModelSettings,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from bastion.providers._framing import NDJSONDecoder, SSEDecoder, SSEEvent
from bastion.providers._names import ToolNameMap
from bastion.providers.ollama._stream import OllamaStreamParser
from bastion.providers.openai import OPENAI, PRESETS, ChatCompletionsParser
from bastion.providers.openai._payload import build_payload, tool_names

from .providers import _openai_chat

N = 2_000
RUNS = 60
TARGET_US = 1.0
NAMES = ToolNameMap(["t1"])


def _best(run: Callable[[], int], runs: int = RUNS) -> float:
    """µs per chunk of the fastest run."""
    count = run()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best / count * 1e6


def _events(body: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return [event for piece in body for event in decoder.feed(piece)]


def _reasoning_events(n: int) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for i in range(n):
        piece = f"w{i} "
        detail = {"type": "reasoning.text", "text": piece, "format": "x", "index": 0}
        delta = {"role": "assistant", "content": "", "reasoning": piece,
                 "reasoning_details": [detail]}  # fmt: skip
        data = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
        events.append(SSEEvent(data=json.dumps(data)))
    done = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
    return [*events, SSEEvent(data=json.dumps(done)), SSEEvent(data="[DONE]")]


def _drain(events: list[Any], parser: Callable[[], Any]) -> Callable[[], int]:
    def run() -> int:
        current = parser()
        count = 0
        for item in events:
            count += len(current.feed(item))
        return count + len(current.finish())

    return run


def _calls(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": "t1", "arguments": '{"a":1}'}}
        for i in range(n)
    ]


def _chat_calls_streamed(n: int) -> bytes:
    """``n`` tool calls streamed one per event (index i), as vLLM and OpenAI send them."""
    events: list[dict[str, Any]] = []
    for i, call in enumerate(_calls(n)):
        delta = {"tool_calls": [{"index": i, **call}]}
        events.append(
            {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
        )
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    return "".join([*lines, "data: [DONE]\n\n"]).encode()


def _chat_calls_whole(n: int) -> bytes:
    """The same ``n`` tool calls as one non-streamed answer."""
    message = {"role": "assistant", "content": None, "tool_calls": _calls(n)}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    return json.dumps({"object": "chat.completion", "choices": [choice]}).encode()


def _ollama_calls(n: int) -> list[dict[str, Any]]:
    return [{"function": {"name": "t1", "arguments": {"a": i}}} for i in range(n)]


def _ollama_line(calls: list[dict[str, Any]], *, done: bool) -> dict[str, Any]:
    line: dict[str, Any] = {
        "model": "m",
        "created_at": "2025-06-02T10:00:00Z",
        "message": {"role": "assistant", "content": "", "tool_calls": calls},
        "done": done,
    }
    if done:
        line |= {"done_reason": "stop", "prompt_eval_count": 1, "eval_count": 1}
    return line


def _ollama_calls_streamed(n: int) -> bytes:
    lines = [_ollama_line([call], done=False) for call in _ollama_calls(n)]
    lines.append(_ollama_line([], done=True))
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _ollama_calls_whole(n: int) -> bytes:
    return json.dumps(_ollama_line(_ollama_calls(n), done=True)).encode()


def _from_bytes(
    body: bytes, decoder: Callable[[], Any], parser: Callable[[], Any]
) -> Callable[[], int]:
    """Decode (SSE or NDJSON) and parse a streamed body, as HttpModel does."""

    def run() -> int:
        framing, current = decoder(), parser()
        count = 0
        for item in [*framing.feed(body), *framing.close()]:
            count += len(current.feed(item))
        return count + len(current.finish())

    return run


def _parse_whole(body: bytes, parser: Callable[[], Any]) -> Callable[[], int]:
    """Parse a whole answer, as HttpModel does with stream=False."""

    def run() -> int:
        current = parser()
        return len(current.feed(json.loads(body))) + len(current.finish())

    return run


def _request() -> ModelRequest:
    tools = [
        ToolDefinition(name=f"t{i}", description="d", parameters={"type": "object"})
        for i in range(10)
    ]
    messages: list[Any] = [UserMessage(content="go")]
    for i in range(10):
        call = ToolCall(id=f"c{i}", name="t1", arguments="{}")
        messages.append(AssistantMessage(parts=[TextPart(text="x")], tool_calls=[call]))
        messages.append(ToolMessage(tool_call_id=f"c{i}", tool_name="t1", content="r"))
    settings = ModelSettings(max_tokens=100, seed=1, tool_choice="auto")
    return ModelRequest(messages=messages, tools=tools, settings=settings)


def _payload_us(params: Any) -> float:
    request = _request()
    names = tool_names(request)
    best = float("inf")
    for _ in range(RUNS * 5):
        start = time.perf_counter()
        build_payload(request, "m", names, params)
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def main() -> int:
    """Print the S6b table (Markdown); exit 1 when the target is missed."""
    chat = _events(_openai_chat(N))
    text = _best(_drain(chat, lambda: ChatCompletionsParser(NAMES)))
    reasoning = _best(_drain(_reasoning_events(N), lambda: ChatCompletionsParser(NAMES)))
    chat_streamed = _best(
        _from_bytes(_chat_calls_streamed(N), SSEDecoder, lambda: ChatCompletionsParser(NAMES))
    )
    chat_whole = _best(_parse_whole(_chat_calls_whole(N), lambda: ChatCompletionsParser(NAMES)))
    ollama_streamed = _best(
        _from_bytes(_ollama_calls_streamed(N), NDJSONDecoder, lambda: OllamaStreamParser(NAMES))
    )
    ollama_whole = _best(_parse_whole(_ollama_calls_whole(N), lambda: OllamaStreamParser(NAMES)))
    rows = [
        ("Chat Completions, streamed text (S6 body, parse only)", text, None),
        ("Chat Completions, streamed reasoning + reasoning_details", reasoning, None),
        ("Chat Completions, 2,000 tool calls streamed (decode + parse)", chat_streamed, None),
        (
            "Chat Completions, same calls whole (stream=False)",
            chat_whole,
            chat_whole - chat_streamed,
        ),
        ("Ollama, 2,000 tool calls streamed (decode + parse)", ollama_streamed, None),
        ("Ollama, same calls whole (stream=False)", ollama_whole, ollama_whole - ollama_streamed),
    ]
    missed = any(extra is not None and extra > TARGET_US for _, _, extra in rows)
    print(f"**S6b compatible servers** ({N:,} items, fastest of {RUNS}; µs per chunk)\n")
    print("| path | µs per chunk | whole vs streamed |\n|---|---|---|")
    for label, value, extra in rows:
        versus = "-" if extra is None else f"{extra:+.2f}"
        print(f"| {label} | {value:.2f} | {versus} |")
    print("\n| request body (21 messages, 10 tools) | µs per request |\n|---|---|")
    print(f"| OpenAI profile | {_payload_us(OPENAI):.1f} |")
    for name in ("openrouter", "deepseek", "mistral", "llamacpp"):
        print(f"| {name} profile | {_payload_us(PRESETS[name].params):.1f} |")
    print(f"\nTarget: a whole answer costs ≤ the same answer streamed + {TARGET_US} µs per chunk: "
          f"{'**missed**' if missed else 'met'}")  # fmt: skip
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
