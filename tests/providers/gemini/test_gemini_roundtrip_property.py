"""Property: thought signatures and function-call ids survive three steps byte-exact.

Each step answers with a thought, a signed text part and a function call carrying
Gemini's id and its own signature; every later request sends all of them back, on the
parts they came on. SPEC G-63, C16.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.providers._roundtrip import OPAQUE, PROPERTY, run_tool_steps

from ._support import model_for

STEP = st.fixed_dictionaries(
    {"thought": OPAQUE, "text": OPAQUE, "text_sig": OPAQUE, "call_sig": OPAQUE, "id": OPAQUE}
)


def parts_of(step: dict[str, str], n: int) -> list[dict[str, Any]]:
    """The parts step ``n`` answers with."""
    return [
        {"text": step["thought"], "thought": True},
        {"text": step["text"], "thoughtSignature": step["text_sig"]},
        {
            "functionCall": {
                "id": f"{step['id']}{n}",
                "name": "get_weather",
                "args": {"q": step["text"]},
            },
            "thoughtSignature": step["call_sig"],
        },
    ]


def stream_of(parts: list[dict[str, Any]]) -> bytes:
    events: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [p], "role": "model"}}]} for p in parts
    ]
    events[-1] = {"candidates": [{**events[-1]["candidates"][0], "finishReason": "STOP"}]}
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)


@PROPERTY
@given(st.lists(STEP, min_size=3, max_size=3))
def test_three_steps_keep_every_opaque_field_byte_exact(steps: list[dict[str, str]]) -> None:
    # covers G-63, C16
    answers = [parts_of(step, n) for n, step in enumerate(steps)]
    bodies = [(200, stream_of(a)) for a in answers] + [(200, stream_of([{"text": "done"}]))]
    model, server = model_for(*bodies)

    run_tool_steps(model, len(steps))
    expected: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for n, parts in enumerate(answers):
        call = parts[-1]["functionCall"]
        response = {"id": call["id"], "name": "get_weather", "response": {"result": "ok"}}
        expected += [
            {"role": "model", "parts": parts},
            {"role": "user", "parts": [{"functionResponse": response}]},
        ]
        assert server.body(n + 1)["contents"] == expected
