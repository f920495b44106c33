"""Deferred tools and the built-in ``tool_search``.

A tool declared ``defer_loading=True`` is kept out of the per-step catalogue. When an agent
has at least one, it registers ``tool_search``, built here by :func:`tool_search_tool`; its
result names the matched tools in ``ToolResult.promote_tools`` and the agent
layer advertises them from the next step on.

Ranking (one :class:`ToolIndex` per agent, built on the first search):

1. Lexical, always: BM25 over the tool's name (split at ``_``, ``-``, ``.`` and camelCase,
   weighted x3), its description, and its parameters' names and descriptions.
2. Semantic, when an :class:`Embedder` is given: cosine similarity of the query to each
   tool's text (tool vectors are embedded once and cached), fused with the lexical ranking by
   reciprocal-rank fusion (``score = sum(1 / (60 + rank))``). An embedder failure degrades to
   the lexical ranking for that search.
3. Name match, when neither ranks anything: the query's words as literal substrings of the
   names. The model's text is never compiled as a regular expression (no ReDoS).
"""

from __future__ import annotations

import asyncio
import heapq
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from bastion.core import MalformedResponse, ModelError, ToolDefinition, UserError

from ._tool import Tool, ToolResult, tool

__all__ = [
    "MAX_SEARCH_RESULTS",
    "TOOL_SEARCH",
    "Embedder",
    "QueryEmbedder",
    "SearchHit",
    "ToolIndex",
    "add_tool_search",
    "tool_search_tool",
]

TOOL_SEARCH = "tool_search"
"""The name of the built-in search tool."""

MAX_SEARCH_RESULTS = 20
"""The largest ``k`` ``tool_search`` honours (a larger one is clamped)."""

_K1 = 1.2
_B = 0.75
_NAME_WEIGHT = 3.0
_RRF_K = 60
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = (
    "a an and are as at be by can do does for from how i in into is "
    "it me my of on or please some that the this to use what when which with you your"
)
_STOP = frozenset(_STOP_WORDS.split())


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors for semantic tool search.

    An implementation may also have a ``dimensions: int`` attribute (informational).
    """

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order.

        Raises:
            ModelError: The backend failed (the search falls back to lexical ranking).
        """
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An :class:`Embedder` that embeds search queries differently from documents (E5)."""

    async def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per query text, in order."""
        ...


@dataclass(kw_only=True, slots=True, frozen=True)
class SearchHit:
    """One ranked tool.

    Attributes:
        tool: The tool.
        score: Its score under the ranking that produced it (higher is better).
    """

    tool: Tool
    score: float


def tokenize(text: str) -> list[str]:
    """Lowercase words of ``text``, camelCase and ``snake_case`` split, stop words dropped."""
    words = _WORD.findall(_CAMEL.sub(" ", text).lower())
    return [_stem(w) for w in words if w not in _STOP]


def _stem(word: str) -> str:
    """A light plural folding: ``cities`` → ``city``, ``files`` → ``file``."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _parameter_text(schema: dict[str, Any]) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ""
    parts: list[str] = []
    for name, spec in properties.items():  # pyright: ignore[reportUnknownVariableType]
        parts.append(str(name))  # pyright: ignore[reportUnknownArgumentType]
        if isinstance(spec, dict):
            description = spec.get("description")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if isinstance(description, str):
                parts.append(description)
    return " ".join(parts)


def search_text(tool: Tool) -> str:
    """The text a tool is embedded from: its name's words, description and parameters."""
    name = " ".join(_WORD.findall(_CAMEL.sub(" ", tool.name).lower()))
    return f"{name}: {tool.description[:1000]} {_parameter_text(tool.parameters)}".strip()


class ToolIndex:
    """Ranks tools for a query: BM25, fused with embeddings when an embedder is given.

    Args:
        tools: The searchable tools (an agent indexes its deferred tools).
        embedder: Optional semantic backend.
    """

    def __init__(self, tools: Sequence[Tool], *, embedder: Embedder | None = None) -> None:
        self.tools = tuple(tools)
        self.embedder = embedder
        self._names = [t.name.lower() for t in self.tools]
        self._vectors: list[list[float]] | None = None
        self._lock = asyncio.Lock()
        docs: list[dict[str, float]] = []
        for t in self.tools:
            weights: dict[str, float] = {}
            for word in tokenize(t.name):
                weights[word] = weights.get(word, 0.0) + _NAME_WEIGHT
            for word in tokenize(f"{t.description} {_parameter_text(t.parameters)}"):
                weights[word] = weights.get(word, 0.0) + 1.0
            docs.append(weights)
        lengths = [sum(d.values()) for d in docs]
        average = (sum(lengths) / len(lengths)) if lengths else 1.0
        postings: dict[str, list[tuple[int, float]]] = {}
        for index, (weights, length) in enumerate(zip(docs, lengths, strict=True)):
            norm = _K1 * (1 - _B + _B * length / (average or 1.0))
            for word, tf in weights.items():
                postings.setdefault(word, []).append((index, tf * (_K1 + 1) / (tf + norm)))
        count = len(docs)
        # Each posting carries idf x saturated tf, so a query only sums floats.
        self._postings: dict[str, list[tuple[int, float]]] = {}
        for word, entries in postings.items():
            idf = math.log(1 + (count - len(entries) + 0.5) / (len(entries) + 0.5))
            self._postings[word] = [(i, idf * part) for i, part in entries]

    def __len__(self) -> int:
        return len(self.tools)

    def lexical(self, query: str, k: int) -> list[SearchHit]:
        """The ``k`` best tools by BM25 (ties in registration order); empty if no word matches."""
        return [SearchHit(tool=self.tools[i], score=s) for i, s in _top(self._bm25(query), k)]

    def name_match(self, query: str, k: int) -> list[SearchHit]:
        """Tools whose names contain the query or its words (literal substrings), most first."""
        whole = query.strip().lower()
        words = [w for w in dict.fromkeys([whole, *_WORD.findall(whole)]) if len(w) >= 2]
        if not words:
            return []
        ranked: list[tuple[int, int, int]] = []
        for index, name in enumerate(self._names):
            found = sum(1 for w in words if w in name)
            if found:
                ranked.append((-found, len(name), index))
        return [
            SearchHit(tool=self.tools[i], score=float(-neg))
            for neg, _, i in heapq.nsmallest(k, ranked)
        ]

    async def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """The ``k`` best tools for ``query`` through the ranking chain (module docstring)."""
        if k < 1 or not self.tools:
            return []
        if self.embedder is not None:
            try:
                fused = await self._fused(query, k)
            except ModelError:
                fused = None  # the embedder failed: this search is lexical only
            if fused:
                return fused
        return self.lexical(query, k) or self.name_match(query, k)

    def _bm25(self, query: str) -> dict[int, float]:
        scores: dict[int, float] = {}
        get = scores.get
        for word in dict.fromkeys(tokenize(query)):
            for index, part in self._postings.get(word, ()):
                scores[index] = get(index, 0.0) + part
        return scores

    async def _fused(self, query: str, k: int) -> list[SearchHit]:
        vectors = await self._tool_vectors()
        embedder = self.embedder
        assert embedder is not None  # only called with an embedder
        if isinstance(embedder, QueryEmbedder):
            (raw,) = await embedder.embed_queries([query])
        else:
            (raw,) = await embedder.embed([query])
        q = _normalized(raw)
        similarity = [
            (sum(a * b for a, b in zip(q, v, strict=False)), i) for i, v in enumerate(vectors)
        ]
        depth = max(50, 4 * k)
        fused: dict[int, float] = {}
        for rank, (_, i) in enumerate(
            heapq.nlargest(depth, similarity, key=lambda s: (s[0], -s[1]))
        ):
            fused[i] = 1 / (_RRF_K + rank + 1)
        lexical = self._bm25(query)
        for rank, (i, _) in enumerate(_top(lexical, depth)):
            fused[i] = fused.get(i, 0.0) + 1 / (_RRF_K + rank + 1)
        return [SearchHit(tool=self.tools[i], score=s) for i, s in _top(fused, k)]

    async def _tool_vectors(self) -> list[list[float]]:
        if self._vectors is not None:
            return self._vectors
        async with self._lock:  # concurrent first searches embed the tools once
            if self._vectors is None:
                embedder = self.embedder
                assert embedder is not None
                raw = await embedder.embed([search_text(t) for t in self.tools])
                if len(raw) != len(self.tools):
                    raise MalformedResponse(
                        f"The embedder returned {len(raw)} vectors for {len(self.tools)} texts."
                    )
                self._vectors = [_normalized(v) for v in raw]
            return self._vectors


def _top(scores: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(index, score)`` pairs, ties broken by registration order."""
    return heapq.nlargest(k, scores.items(), key=lambda item: (item[1], -item[0]))


def _normalized(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def compact_schema(schema: Any) -> Any:
    """``schema`` without ``title`` keys (noise for the model), recursively."""
    if isinstance(schema, dict):
        return {
            key: compact_schema(value)
            for key, value in schema.items()  # pyright: ignore[reportUnknownVariableType]
            if key != "title"
        }
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]  # pyright: ignore[reportUnknownVariableType]
    return schema


def tool_search_tool(tools: Sequence[Tool], *, embedder: Embedder | None = None) -> Tool:
    """The built-in ``tool_search`` tool over ``tools`` (the agent's deferred tools).

    The index is built on the first search and shared by every run of the agent.

    Args:
        tools: The tools it finds.
        embedder: Optional semantic backend fused with the lexical ranking.
    """
    searchable = tuple(tools)
    index: list[ToolIndex] = []  # built on the first search

    async def tool_search(query: str, k: int = 5) -> ToolResult | str:
        """Find tools that are not loaded yet by what you need them for.

        Found tools can be called from your next step on.

        Args:
            query: What you want to do, in a few words (e.g. "weather forecast for a city").
            k: How many tools to return (1-20).
        """
        if not index:
            index.append(ToolIndex(searchable, embedder=embedder))
        hits = await index[0].search(query, max(1, min(k, MAX_SEARCH_RESULTS)))
        if not hits:
            return f"No tool matches {query!r}. Try other words: what the tool does or acts on."
        found = [
            {
                "name": h.tool.name,
                "description": h.tool.description,
                "parameters": compact_schema(h.tool.parameters),
            }
            for h in hits
        ]
        return ToolResult(output={"tools": found}, promote_tools=[h.tool.name for h in hits])

    return tool(
        tool_search,
        name=TOOL_SEARCH,
        side_effect_class="read_only",
        trust_class="first_party_built_in",
        run_in_thread=False,
    )


def add_tool_search(
    tools: dict[str, Tool], *, embedder: Embedder | None = None, agent: str = ""
) -> dict[str, ToolDefinition]:
    """Register ``tool_search`` in ``tools`` when any tool is deferred.

    Returns the deferred tools' definitions by name, as advertised once promoted: without
    worked examples. Empty when nothing is deferred (and nothing is added).

    Raises:
        UserError: A tool is deferred and another tool is already named ``tool_search``.
    """
    deferred = [t for t in tools.values() if t.defer_loading]
    if not deferred:
        return {}
    if TOOL_SEARCH in tools:
        raise UserError(
            f"Agent {agent!r}: a tool is named {TOOL_SEARCH!r}, the name of the built-in search "
            "over deferred tools. Rename it, or set defer_loading=False on every tool."
        )
    tools[TOOL_SEARCH] = tool_search_tool(deferred, embedder=embedder)
    return {
        t.name: ToolDefinition(
            name=t.name, description=t.description, parameters=t.parameters, strict=t.strict
        )
        for t in deferred
    }
