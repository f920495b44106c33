"""SSE and NDJSON decoding under any chunking (issue 3: property tests)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import MalformedResponse
from bastion.providers import NDJSONDecoder, SSEDecoder, SSEEvent

SSE_BODY = (
    ": keep-alive comment\r\n"
    "event: message_start\r\n"
    'data: {"a": 1}\r\n'
    "\r\n"
    "data: first line\n"
    "data: second line\n"
    "\n"
    "event: ping\n"
    "data:\n"
    "\n"
    'data: {"emoji": "héllo ✓"}\r'
    "\r"
    "data: [DONE]\n\n"
).encode()

EXPECTED = [
    SSEEvent(event="message_start", data='{"a": 1}'),
    SSEEvent(data="first line\nsecond line"),
    SSEEvent(event="ping", data=""),
    SSEEvent(data='{"emoji": "héllo ✓"}'),
    SSEEvent(data="[DONE]"),
]


def _decode_sse(pieces: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    events.extend(decoder.close())
    return events


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces: list[bytes] = []
    start = 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


def test_sse_events_comments_multiline_data_and_line_endings() -> None:
    # covers A-11 (the stream chunks every provider parses)
    assert _decode_sse([SSE_BODY]) == EXPECTED


@settings(max_examples=200)
@given(st.lists(st.integers(min_value=0), max_size=30))
def test_any_chunking_of_an_sse_body_gives_the_same_events(cuts: list[int]) -> None:
    # covers issue 3 property test: arbitrary chunkings give the same result
    assert _decode_sse(_split(SSE_BODY, cuts)) == EXPECTED


def test_an_event_without_a_trailing_blank_line_is_flushed_at_close() -> None:
    assert _decode_sse([b'data: {"last": true}']) == [SSEEvent(data='{"last": true}')]


def test_non_json_event_data_is_a_malformed_response() -> None:
    with pytest.raises(MalformedResponse, match="not JSON"):
        SSEEvent(data="{broken").json()


NDJSON_BODY = (
    b'{"message": {"content": "Hel"}}\n'
    b'{"message": {"content": "lo \xe2\x9c\x93"}}\r\n\n'
    b'{"done": true}'
)


@settings(max_examples=200)
@given(st.lists(st.integers(min_value=0), max_size=30))
def test_any_chunking_of_ndjson_gives_the_same_values(cuts: list[int]) -> None:
    decoder = NDJSONDecoder()
    values: list[object] = []
    for piece in _split(NDJSON_BODY, cuts):
        values.extend(decoder.feed(piece))
    values.extend(decoder.close())
    assert values == [
        {"message": {"content": "Hel"}},
        {"message": {"content": "lo ✓"}},
        {"done": True},
    ]


@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_garbage_never_raises_anything_but_a_mapped_error(data: bytes) -> None:
    sse = SSEDecoder()
    events = [*sse.feed(data), *sse.close()]
    for event in events:
        with contextlib.suppress(MalformedResponse):
            event.json()
    ndjson = NDJSONDecoder()
    with contextlib.suppress(MalformedResponse):
        ndjson.feed(data)
        ndjson.close()
