"""Property tests: how the network splits the bytes never changes the answer.

SPEC G-63, C3 (streams parse incrementally; garbage fails as a ModelError only).
"""

from __future__ import annotations

import asyncio
import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import ModelError, ModelRequest, ModelResponse, ToolDefinition, UserMessage

from ._support import model_for, sse, transcript

NAMES = (
    "text",
    "one_call",
    "two_calls",
    "reasoning_call",
    "reasoning_twice",
    "structured",
    "incomplete",
)
REQUEST = ModelRequest(
    messages=[UserMessage(content="hi")],
    tools=[ToolDefinition(name="get_weather", description="d", parameters={})],
)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def answer(pieces: list[bytes]) -> ModelResponse:
    model, _ = model_for(sse(pieces), name="o4-mini")
    return asyncio.run(model.request(REQUEST))


WHOLE = {name: answer([transcript(name)]) for name in NAMES}


@FAST
@given(st.sampled_from(NAMES), st.lists(st.integers(min_value=0), max_size=60))
def test_any_chunking_assembles_the_same_response(name: str, cuts: list[int]) -> None:
    # covers G-63, C3
    assert answer(split(transcript(name), cuts)) == WHOLE[name]


@FAST
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0), max_size=10))
def test_garbage_fails_only_as_a_model_error(body: bytes, cuts: list[int]) -> None:
    # covers G-63, C3
    with contextlib.suppress(ModelError):
        answer(split(body, cuts))


@FAST
@given(st.sampled_from(NAMES), st.integers(min_value=0), st.binary(max_size=40))
def test_corrupted_transcripts_fail_only_as_a_model_error(name: str, at: int, noise: bytes) -> None:
    # covers G-63, C3
    body = transcript(name)
    cut = at % (len(body) + 1)
    with contextlib.suppress(ModelError):
        answer([body[:cut] + noise + body[cut:]])
