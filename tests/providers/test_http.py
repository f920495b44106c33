"""The HTTP path against a real socket: timeouts, streams cut mid-way, unreachable hosts.

A small asyncio server on 127.0.0.1 plays the misbehaving vendor (silent, stalling after a
few events, or closing the connection mid-body), so the errors come from httpx's real
transport, not from a mock raising them.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from bastion.core import (
    ConnectionFailed,
    ModelError,
    ModelRequest,
    ModelSettings,
    ModelTimeout,
    StreamInterrupted,
    UserError,
    UserMessage,
)
from bastion.providers.openai import openai_chat_model

Behaviour = Callable[[asyncio.StreamWriter], Awaitable[None]]

EVENT = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n'
)
HEADERS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            await reader.readexactly(int(line.split(b":")[1]))


@asynccontextmanager
async def vendor(behaviour: Behaviour) -> AsyncGenerator[str]:
    """A server that reads one request and then does ``behaviour``; yields its base URL."""
    release = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await read_request(reader)
            await behaviour(writer)
            await release.wait()  # hold the connection open until the test is done
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        release.set()
        server.close()
        await server.wait_closed()


async def silent(writer: asyncio.StreamWriter) -> None:
    """Accept the request and never answer."""


async def stall_after_one_event(writer: asyncio.StreamWriter) -> None:
    writer.write(HEADERS + chunked(EVENT))
    await writer.drain()


async def cut_after_one_event(writer: asyncio.StreamWriter) -> None:
    writer.write(HEADERS + chunked(EVENT))
    await writer.drain()
    writer.transport.abort()  # the connection ends inside the chunked body


def request(timeout: float | None = None) -> ModelRequest:
    return ModelRequest(
        messages=[UserMessage(content="hi")], settings=ModelSettings(timeout=timeout)
    )


async def drain(
    model_request: ModelRequest, base_url: str, *, model_timeout: float = 600.0
) -> list[str]:
    model = openai_chat_model("gpt-4.1-mini", api_key="k", base_url=base_url, timeout=model_timeout)
    return [chunk.text async for chunk in model.stream(model_request) if chunk.type == "text"]


async def test_settings_timeout_bounds_waiting_for_the_answer() -> None:
    # covers issue 12 (ModelSettings.timeout honoured, ModelTimeout)
    async with vendor(silent) as url:
        with pytest.raises(ModelTimeout) as info:
            await drain(request(timeout=0.2), url)
    assert "did not answer within 0.2 s" in str(info.value)
    assert "ModelSettings(timeout=...)" in str(info.value)
    assert info.value.retryable


async def test_settings_timeout_overrides_the_model_timeout() -> None:
    # covers issue 12 (the per-call setting wins over the model's 600 s default)
    async with vendor(silent) as url:
        with pytest.raises(ModelTimeout):
            await drain(request(timeout=0.2), url, model_timeout=600.0)


async def test_the_model_timeout_applies_without_a_setting() -> None:
    async with vendor(silent) as url:
        with pytest.raises(ModelTimeout):
            await drain(request(), url, model_timeout=0.2)


async def test_a_stream_that_stalls_mid_way_times_out_and_says_so() -> None:
    # covers issue 12 (read timeout inside the stream)
    async with vendor(stall_after_one_event) as url:
        with pytest.raises(ModelTimeout) as info:
            await drain(request(timeout=0.3), url)
    message = str(info.value)
    assert "stalled" in message
    assert "after 1 chunk" in message
    assert "Could not reach" not in message


async def test_a_stream_cut_mid_way_is_a_stream_interruption() -> None:
    # covers issue 12 (a stream broken mid-way says so, not "Could not reach")
    async with vendor(cut_after_one_event) as url:
        with pytest.raises(StreamInterrupted) as info:
            await drain(request(), url)
    message = str(info.value)
    assert "broke mid-way, after 1 chunk" in message
    assert "Could not reach" not in message
    assert isinstance(info.value, ConnectionFailed)  # retry and fallback treat it alike
    assert info.value.retryable


async def test_a_closed_port_is_a_connection_failure() -> None:
    with socket.socket() as sock:  # a port nothing listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(ModelError) as info:
            await drain(request(), f"http://127.0.0.1:{port}/v1")
    assert type(info.value) is ConnectionFailed
    assert f"Could not reach openai at http://127.0.0.1:{port}/v1/chat/completions" in str(
        info.value
    )


@pytest.mark.parametrize("bad", [0, -1.5, "10", True])
def test_a_bad_timeout_is_a_user_error(bad: object) -> None:
    with pytest.raises(UserError, match="timeout must be a positive number"):
        ModelSettings(timeout=bad)  # pyright: ignore[reportArgumentType]


def test_a_bad_model_timeout_is_a_user_error() -> None:
    with pytest.raises(UserError, match="timeout must be a positive number"):
        openai_chat_model("gpt-4.1-mini", api_key="k", timeout=0)


async def test_an_answer_without_usage_is_unreported_and_unpriced() -> None:
    # covers issue 12 ("0 tokens" from a server that sent no usage reads as not reported)
    body = EVENT + (
        b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = openai_chat_model("gpt-4.1-mini", api_key="k", http_client=client)  # priced model
    response = await model.request(request())
    assert response.message.text == "Hello"
    usage = response.usage
    assert (usage.requests, usage.unreported_requests, usage.cost_usd) == (1, 1, None)
    assert usage.describe_tokens() == "tokens not reported"
