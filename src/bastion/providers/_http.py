"""``HttpModel``: a :class:`~bastion.core.Model` spoken over HTTP, one wire protocol each.

A protocol (``openai/``, ``anthropic/``, …) implements :class:`WireProtocol`: where to
POST, the headers, the JSON body for a :class:`~bastion.core.ModelRequest`, the framing of
the streamed answer (SSE or NDJSON), a :class:`StreamParser` that turns each decoded item
into stream chunks, and its vendor's error codes. ``HttpModel`` does the rest once for all:
httpx, streaming, error mapping, tool-name mapping, cost from the model profile.

httpx is used directly rather than the vendors' SDKs: the SDKs build a pydantic object per
streamed chunk and cost a second to import, and one HTTP path gives every protocol the same
error mapping and the same transcript tests (httpx ``MockTransport``).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, runtime_checkable

from bastion.core import (
    AuthenticationFailed,
    FinishChunk,
    JsonObject,
    JsonValue,
    MalformedResponse,
    Model,
    ModelError,
    ModelRequest,
    StreamChunk,
    Usage,
    UserError,
)

from ._errors import transport_error
from ._framing import NDJSONDecoder, SSEDecoder, SSEEvent, StreamItem
from ._names import ToolNameMap
from ._profiles import ModelProfile, profile_for, with_cost

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HttpModel",
    "HttpModelOptions",
    "Sensitivity",
    "StreamParser",
    "WholeBodyProtocol",
    "WireProtocol",
    "sse_json",
]

Sensitivity = Literal["public", "internal", "secret"]


class HttpModelOptions(TypedDict, total=False):
    """The keyword options every provider factory passes on to :class:`HttpModel`."""

    base_url: str | None
    api_key: str | None
    headers: Mapping[str, str] | None
    timeout: float
    http_client: httpx.AsyncClient | None
    profile: ModelProfile | None
    accepts_sensitivity: tuple[Sensitivity, ...]


class StreamParser(Protocol):
    """Turns the decoded items of one streamed answer into stream chunks."""

    def feed(self, item: StreamItem) -> list[StreamChunk]:
        """One SSE event (:class:`SSEEvent`) or NDJSON value → zero or more chunks.

        Raises:
            ModelError: The stream reported an error, or an item is malformed
                (:class:`~bastion.core.MalformedResponse`).
        """
        ...

    def finish(self) -> list[StreamChunk]:
        """The stream ended: the last chunks, ending with a :class:`FinishChunk`.

        Raises:
            MalformedResponse: The stream ended before the vendor said it was complete.
        """
        ...


class WireProtocol(Protocol):
    """One vendor wire protocol: request building, response parsing, error codes."""

    vendor: str
    framing: Literal["sse", "ndjson"]
    default_base_url: str
    api_key_env: str | None

    def path(self, model: str) -> str:
        """The path (after the base URL) to POST a streaming request to."""
        ...

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Authentication and protocol headers."""
        ...

    def payload(self, request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
        """The JSON body for ``request`` (tool names already mapped through ``names``)."""
        ...

    def parser(self, names: ToolNameMap) -> StreamParser:
        """A parser for one streamed answer (maps wire tool names back through ``names``)."""
        ...

    def name_map(self, request: ModelRequest) -> ToolNameMap:
        """The tool-name mapping this protocol needs for ``request``."""
        ...

    def error(self, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
        """Map an HTTP error response (vendor codes first, then the status)."""
        ...


@runtime_checkable
class WholeBodyProtocol(Protocol):
    """A wire protocol that can also answer in one non-streamed JSON body.

    Protocols without it (Chat Completions, Ollama) answer a non-streaming request at the
    same path, and their stream parser reads the whole JSON body as one item.
    ``HttpModel`` uses it when ``request.settings.stream is False``: the protocol's
    ``payload`` already asked for a whole body (``"stream": false`` or its vendor's
    equivalent); the body is POSTed to :meth:`whole_path` and its JSON turned into the same
    chunk sequence a stream of that answer would have produced.
    """

    def whole_path(self, model: str) -> str:
        """The path (after the base URL) to POST a non-streaming request to."""
        ...

    def whole_chunks(self, body: object, names: ToolNameMap) -> list[StreamChunk]:
        """A whole decoded JSON answer → its chunks, ending with a :class:`FinishChunk`.

        Raises:
            ModelError: The body reports a failure or is malformed.
        """
        ...


class HttpModel(Model):
    """A model reached over HTTP through one :class:`WireProtocol`.

    Args:
        name: The vendor's model name (``"gpt-4.1-mini"``).
        protocol: The wire protocol.
        provider: The provider part of the model key (``"openai"``, ``"groq"``…).
        base_url: API base URL (default: the protocol's ``base_url_env`` variable if it
            has one, else ``<PROVIDER>_BASE_URL``, else the protocol's default).
        api_key: API key (default: the protocol's environment variable).
        headers: Extra headers on every request.
        timeout: Seconds for connect and for each read of the stream.
        http_client: An ``httpx.AsyncClient`` to use (tests pass one with a MockTransport).
        profile: Model facts and prices (default: looked up by provider and name).
        accepts_sensitivity: Data tiers this provider may receive; a request holding
            data of any other tier is refused before it is sent.
    """

    def __init__(
        self,
        name: str,
        *,
        protocol: WireProtocol,
        provider: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 600.0,
        http_client: httpx.AsyncClient | None = None,
        profile: ModelProfile | None = None,
        accepts_sensitivity: tuple[Sensitivity, ...] = ("public", "internal", "secret"),
    ) -> None:
        if not name:
            raise UserError("A model needs a name, e.g. 'gpt-4.1-mini'.")
        self.name = name
        self.provider = provider or protocol.vendor
        self.protocol = protocol
        # The protocol may name its conventional variable (OpenAI Responses: OPENAI_BASE_URL).
        upper = self.provider.upper().replace("-", "_")
        base_env = getattr(protocol, "base_url_env", None) or f"{upper}_BASE_URL"
        # BASTION_<PROVIDER>_BASE_URL is the documented convention; the older name still works.
        env_base = os.environ.get(f"BASTION_{upper}_BASE_URL") or os.environ.get(base_env)
        self.base_url = (base_url or env_base or protocol.default_base_url).rstrip("/")
        if api_key is None and protocol.api_key_env:
            api_key = os.environ.get(protocol.api_key_env)
        self._api_key = api_key
        self._extra_headers = dict(headers or {})
        if timeout <= 0:
            raise UserError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        self.timeout = timeout
        self._client = http_client
        self.profile = profile or profile_for(self.provider, name)
        self.context_window = self.profile.context_window
        self.tokenizer = self.profile.tokenizer
        mode = self.profile.output_mode
        self.output_mode = mode or ("native" if self.profile.json_schema else "prompted")
        self.accepts_sensitivity = accepts_sensitivity

    def _hosted(self) -> bool:
        """Whether this is the vendor's own hosted API (which always needs a key).

        A local or self-hosted server (vLLM, LM Studio, a proxy) may take no key.
        """
        default = self.protocol.default_base_url.rstrip("/")
        return self.base_url == default and default.startswith("https://")

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(timeout=_timeout(self.timeout))
        return self._client

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """POST the request and stream the answer as chunks.

        ``request.settings.timeout`` (seconds), when set, replaces the model's timeout for
        this call: it bounds connecting, sending and every read of the answer.

        Raises:
            ModelError: The mapped failure (HTTP status, transport or malformed stream):
                :class:`~bastion.core.ModelTimeout` when connecting or a read took too
                long, :class:`~bastion.core.ConnectionFailed` when the vendor could not be
                reached, :class:`~bastion.core.StreamInterrupted` when the answer had
                started and its connection broke.
        """
        import httpx

        protocol = self.protocol
        if self._api_key is None and protocol.api_key_env and self._hosted():
            # Fail before sending: the vendor's 401 would not say which variable to set.
            raise AuthenticationFailed(
                f"No API key for {self.provider}:{self.name}: set {protocol.api_key_env} "
                f"(export {protocol.api_key_env}=...) or pass api_key= to the model."
            )
        whole = request.settings.stream is False
        names = protocol.name_map(request)
        body = protocol.payload(request, self.name, names)
        headers = {**protocol.headers(self._api_key), **self._extra_headers}
        seconds = request.settings.timeout
        timeout = _timeout(self.timeout if seconds is None else seconds)
        if isinstance(protocol, WholeBodyProtocol) and whole:
            async for chunk in self._whole(protocol, body, headers, names, timeout):
                yield chunk
            return
        url = f"{self.base_url}{protocol.path(self.name)}"
        client = self._http()
        progress = _Progress()
        try:
            async with client.stream(
                "POST", url, json=body, headers=headers, timeout=timeout
            ) as response:
                progress.answered = True
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    raise protocol.error(response.status_code, text, response.headers)
                parser = protocol.parser(names)
                if whole:  # the protocol's parser reads the whole JSON answer as one item
                    decoded = self._parsed_whole(response, parser)
                else:
                    decoded = self._decode(response, parser, progress)
                async for chunk in decoded:
                    yield chunk
        except httpx.TransportError as exc:
            raise transport_error(
                exc,
                vendor=protocol.vendor,
                url=url,
                answered=progress.answered,
                chunks=progress.chunks,
                timeout=_limit_hit(exc, timeout),
            ) from exc

    async def _whole(
        self,
        protocol: WholeBodyProtocol,
        body: JsonObject,
        headers: dict[str, str],
        names: ToolNameMap,
        limits: httpx.Timeout,
    ) -> AsyncGenerator[StreamChunk, None]:
        """A non-streaming request to the protocol's own endpoint; the same chunks come out."""
        import httpx

        vendor = self.protocol.vendor
        url = f"{self.base_url}{protocol.whole_path(self.name)}"
        headers = {k: v for k, v in headers.items() if k.lower() != "accept"}
        headers["Accept"] = "application/json"
        try:
            response = await self._http().post(url, json=body, headers=headers, timeout=limits)
        except httpx.TransportError as exc:
            raise transport_error(
                exc, vendor=vendor, url=url, answered=False, chunks=0,
                timeout=_limit_hit(exc, limits),
            ) from exc  # fmt: skip
        text = response.content.decode("utf-8", errors="replace")
        if response.status_code >= 400:
            raise self.protocol.error(response.status_code, text, response.headers)
        try:
            data: object = json.loads(text)
        except ValueError as exc:
            raise MalformedResponse(
                f"{vendor} answered a non-streaming request with a body that is not JSON: "
                f"{text[:200]!r}",
                body=text,
            ) from exc
        for chunk in protocol.whole_chunks(data, names):
            yield self._priced(chunk)

    async def _decode(
        self, response: httpx.Response, parser: StreamParser, progress: _Progress
    ) -> AsyncGenerator[StreamChunk, None]:
        decoder = SSEDecoder() if self.protocol.framing == "sse" else NDJSONDecoder()
        decode = decoder.feed
        feed = parser.feed
        async for raw in response.aiter_bytes():  # decoded (gzip, br) like any body
            for item in decode(raw):
                for chunk in feed(item):
                    progress.chunks += 1
                    yield chunk
        for item in decoder.close():
            for chunk in feed(item):
                yield chunk
        for chunk in parser.finish():  # the FinishChunk comes from here (the contract)
            yield self._priced(chunk)

    async def _parsed_whole(
        self, response: httpx.Response, parser: StreamParser
    ) -> AsyncGenerator[StreamChunk, None]:
        """A non-streamed answer: the whole JSON body is fed to the parser as one item.

        A server that streams anyway (it ignored ``"stream": false``) is decoded as a stream.
        """
        body = await response.aread()
        kind = response.headers.get("content-type", "")
        if "event-stream" in kind or "ndjson" in kind or body.lstrip()[:5] == b"data:":
            async for chunk in self._decode_bytes(body, parser):
                yield chunk
            return
        try:
            value: JsonValue = json.loads(body)
        except ValueError as exc:
            text = body.decode("utf-8", errors="replace")
            raise MalformedResponse(
                f"{self.protocol.vendor} answered with a body that is not JSON: {text[:200]!r}",
                body=text,
            ) from exc
        for chunk in parser.feed(value):
            yield chunk
        for chunk in parser.finish():
            yield self._priced(chunk)

    async def _decode_bytes(
        self, body: bytes, parser: StreamParser
    ) -> AsyncGenerator[StreamChunk, None]:
        decoder = SSEDecoder() if self.protocol.framing == "sse" else NDJSONDecoder()
        for item in [*decoder.feed(body), *decoder.close()]:
            for chunk in parser.feed(item):
                yield chunk
        for chunk in parser.finish():
            yield self._priced(chunk)

    def _priced(self, chunk: StreamChunk) -> StreamChunk:
        """The finish chunk with its cost; usage the server never sent stays unpriced."""
        if not isinstance(chunk, FinishChunk):
            return chunk
        usage = chunk.usage
        if usage.total_tokens == 0 and usage.unreported_requests == 0:
            # No answer of a real call is zero tokens long: the server sent no usage (or
            # zeros in its place), whatever the adapter filled in.
            chunk.usage = Usage(requests=1, unreported_requests=1)
        elif usage.cost_usd is None and usage.unreported_requests == 0:
            chunk.usage = with_cost(usage, self.profile)
        return chunk


class _Progress:
    """How far one call got: whether the vendor answered, how many chunks were parsed."""

    __slots__ = ("answered", "chunks")

    def __init__(self) -> None:
        self.answered = False
        self.chunks = 0


def _timeout(seconds: float) -> httpx.Timeout:
    """Limits of ``seconds`` for reads, writes and the pool; at most 30 s to connect.

    A host that takes longer than 30 s to accept a connection is not coming.
    """
    import httpx

    return httpx.Timeout(seconds, connect=min(seconds, 30.0))


def _limit_hit(exc: httpx.TransportError, timeout: httpx.Timeout) -> float | None:
    """The seconds of the limit ``exc`` ran into, or None when it is not a timeout."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return timeout.connect
    if isinstance(exc, httpx.ReadTimeout):
        return timeout.read
    if isinstance(exc, httpx.WriteTimeout):
        return timeout.write
    if isinstance(exc, httpx.PoolTimeout):
        return timeout.pool
    return None


def sse_json(item: object) -> JsonValue:
    """The JSON data of an SSE event item.

    Raises:
        MalformedResponse: The item is not an SSE event, or its data is not JSON.
    """
    if not isinstance(item, SSEEvent):
        raise MalformedResponse(f"Expected a server-sent event, got {item!r}")
    return item.json()
