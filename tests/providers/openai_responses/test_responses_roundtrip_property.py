"""Property: opaque reasoning and call fields survive three steps byte-exact.

Whatever ids, ``encrypted_content`` and summaries the server sends (any text, escapes and
all), a three-step tool loop sends every one of them back, unchanged and in order, on
each later request. SPEC G-63, C16.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.providers._roundtrip import OPAQUE, PROPERTY, run_tool_steps

from ._support import model_for, sse

STEP = st.fixed_dictionaries(
    {"rs": OPAQUE, "encrypted": OPAQUE, "summary": OPAQUE, "fc": OPAQUE, "call": OPAQUE}
)


def items_of(step: dict[str, str], n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reasoning and function-call items step ``n`` answers with."""
    reasoning = {
        "id": f"rs_{step['rs']}{n}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": step["summary"]}],
        "encrypted_content": step["encrypted"],
    }
    call = {
        "id": f"fc_{step['fc']}{n}",
        "type": "function_call",
        "status": "completed",
        "call_id": f"{step['call']}{n}",
        "name": "get_weather",
        "arguments": json.dumps({"q": step["summary"]}),
    }
    return reasoning, call


def stream_of(items: list[dict[str, Any]]) -> bytes:
    events: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        added: dict[str, Any] = {**item, "summary": []} if item["type"] == "reasoning" else item
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    response = {"id": "resp_1", "status": "completed", "output": items, "usage": None}
    events.append({"type": "response.completed", "response": response})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def sent_back(reasoning: dict[str, Any], call: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: reasoning[k] for k in ("type", "id", "summary", "encrypted_content")},
        {
            "type": "function_call",
            "call_id": call["call_id"],
            "name": call["name"],
            "arguments": call["arguments"],
            "id": call["id"],
        },
        {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"},
    ]


FINAL: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "done", "annotations": []}],
}


def run_three_steps(steps: list[dict[str, str]]) -> list[dict[str, Any]]:
    answers = [items_of(step, n) for n, step in enumerate(steps)]
    streams = [sse(stream_of(list(a))) for a in answers] + [sse(stream_of([FINAL]))]
    model, server = model_for(*streams, name="gpt-5")

    run_tool_steps(model, len(steps))
    expected: list[dict[str, Any]] = []
    for n, (reasoning, call) in enumerate(answers):
        expected += sent_back(reasoning, call)
        assert server.bodies[n + 1]["input"][1:] == expected
    return server.bodies


@PROPERTY
@given(st.lists(STEP, min_size=3, max_size=3))
def test_three_steps_keep_every_opaque_field_byte_exact(steps: list[dict[str, str]]) -> None:
    # covers G-63, C16
    bodies = run_three_steps(steps)
    assert all(body["include"] == ["reasoning.encrypted_content"] for body in bodies)
