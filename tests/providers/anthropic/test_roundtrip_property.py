"""Property: thinking text, signatures, redacted data and tool ids survive three steps.

Whatever the server sends in those opaque fields, every later request carries them back
byte-exact, in their blocks and in order. SPEC G-63, C16.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.providers._roundtrip import OPAQUE, PROPERTY, run_tool_steps

from ._support import Server

STEP = st.fixed_dictionaries(
    {"thinking": OPAQUE, "signature": OPAQUE, "redacted": OPAQUE, "tool": OPAQUE, "q": OPAQUE}
)


def blocks_of(step: dict[str, str], n: int) -> list[dict[str, Any]]:
    """The content blocks step ``n`` answers with."""
    return [
        {"type": "thinking", "thinking": step["thinking"], "signature": step["signature"]},
        {"type": "redacted_thinking", "data": step["redacted"]},
        {
            "type": "tool_use",
            "id": f"toolu_{step['tool']}{n}",
            "name": "get_weather",
            "input": {"q": step["q"]},
        },
    ]


def stream_of(blocks: list[dict[str, Any]], stop: str) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 1}}}
    ]
    for index, block in enumerate(blocks):
        start: dict[str, Any]
        deltas: list[dict[str, Any]]
        if block["type"] == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif block["type"] == "tool_use":
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        else:
            start, deltas = block, []
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {}})
    events.append({"type": "message_stop"})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def result_of(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": block["id"], "content": "ok", "is_error": False}


@PROPERTY
@given(st.lists(STEP, min_size=3, max_size=3))
def test_three_steps_keep_every_opaque_field_byte_exact(steps: list[dict[str, str]]) -> None:
    # covers G-63, C16
    answers = [blocks_of(step, n) for n, step in enumerate(steps)]
    final = [{"type": "text", "text": "done"}]
    server = Server(*(stream_of(a, "tool_use") for a in answers), stream_of(final, "end_turn"))
    model = server.model()

    run_tool_steps(model, len(steps))
    expected: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for n, blocks in enumerate(answers):
        expected += [
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [result_of(blocks[-1])]},
        ]
        assert server.requests[n + 1]["messages"] == expected
