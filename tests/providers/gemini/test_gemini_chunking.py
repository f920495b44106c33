"""Any split of the byte stream gives the same answer; garbage gives only model errors."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import ModelError, ModelRequest, ModelResponse, UserMessage

from ._support import model_for, transcript

ASK = ModelRequest(messages=[UserMessage(content="hi")])
NAMES = [
    "text.sse",
    "thought_function_call.sse",
    "thought_text.sse",
    "usage.sse",
    "two_function_calls.sse",
    "function_call_ids.sse",
    "audio_usage.sse",
]


def truncated(size: int) -> bytes:
    return transcript("text.sse")[:size]


async def answer(name: str, split: list[int]) -> ModelResponse:
    model, _ = model_for(name, split=split)
    response = await model.request(ASK)
    for n, call in enumerate(response.message.tool_calls):
        call.id = f"call_{n}"  # ids Bastion makes up are random: compare the rest
    return response


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    split=st.lists(st.integers(min_value=1, max_value=2000), max_size=40),
)
async def test_any_chunking_gives_the_same_response(name: str, split: list[int]) -> None:
    #
    whole = await answer(name, [])
    assert await answer(name, split) == whole


@settings(max_examples=80, deadline=None)
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.integers(0, 600).map(truncated),
        st.text(max_size=200).map(lambda t: f"data: {t}\n\n".encode()),
    ),
    split=st.lists(st.integers(min_value=1, max_value=300), max_size=10),
)
async def test_garbage_raises_only_model_errors(body: bytes, split: list[int]) -> None:
    #
    model, _ = model_for((200, body), split=split)
    with contextlib.suppress(ModelError):  # anything else escapes and fails the test
        await model.request(ASK)
