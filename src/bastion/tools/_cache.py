"""Per-tool result cache for tools with a ``cache_ttl``, one per agent.

Called by the executor (``CallRunner.execute``): before running a call of a tool with a
positive ``cache_ttl`` it looks the call up by its canonical arguments; a fresh entry is
used instead of running the tool (``ToolOutcome.cached``, counted in
``tool.cache.hits.total``). Only successful results are stored, as the tool rendered them:
the result processors (sanitisation, limits) run again on a hit, so a spilled result gets
a handle of the run that reads it.

Keys are ``(tool name, tenant id, user id, canonical JSON of the validated arguments)``:
one end user never reads another's cached result. Freshness is measured on the agent's
clock (a ``VirtualClock`` in tests). The cache is bounded: at most ``max_entries`` entries
and ``max_chars`` characters of content in all; the least recently used entries go first,
and a single result larger than ``max_chars`` is not cached.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from bastion.core import Clock, RunContext, UserError
from bastion.observability import Counters

from ._tool import Tool

__all__ = ["DEFAULT_CACHE_CHARS", "DEFAULT_CACHE_ENTRIES", "CachedResult", "ToolCache"]

DEFAULT_CACHE_ENTRIES = 1024
"""Default bound on the entries of one agent's tool cache."""
DEFAULT_CACHE_CHARS = 8 * 1024 * 1024
"""Default bound on the characters of content held by one agent's tool cache."""

CacheKey: TypeAlias = tuple[str, str | None, str | None, str]


@dataclass(kw_only=True, slots=True, frozen=True)
class CachedResult:
    """A stored result.

    Attributes:
        content: The rendered result, before the result processors.
        metadata: The tool's ``ToolResult.metadata``.
        stored_at: The clock's ``monotonic()`` when it was stored.
        untrusted: The tool marked the result untrusted; a hit is untrusted too.
    """

    content: str
    metadata: Mapping[str, Any]
    stored_at: float
    untrusted: bool = False


class ToolCache:
    """An LRU of successful tool results, fresh for each tool's ``cache_ttl``.

    Args:
        clock: Measures freshness.
        max_entries: Most entries kept.
        max_chars: Most characters of content kept, over all entries.
        counters: Where ``tool.cache.hits.total`` / ``misses`` / ``evictions`` go.

    Raises:
        UserError: A bound is not a positive integer.
    """

    __slots__ = ("_chars", "_entries", "clock", "counters", "max_chars", "max_entries")

    def __init__(
        self,
        clock: Clock,
        *,
        max_entries: int = DEFAULT_CACHE_ENTRIES,
        max_chars: int = DEFAULT_CACHE_CHARS,
        counters: Counters | None = None,
    ) -> None:
        for what, value in (("max_entries", max_entries), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"Tool cache {what} must be an integer >= 1, got {value!r}.")
        self.clock = clock
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.counters = counters if counters is not None else Counters()
        self._entries: OrderedDict[CacheKey, CachedResult] = OrderedDict()
        self._chars = 0

    @staticmethod
    def key(tool: Tool, arguments: Mapping[str, Any], ctx: RunContext[Any]) -> CacheKey | None:
        """The cache key of a call, or ``None`` when its arguments have no JSON form."""
        from pydantic_core import PydanticSerializationError, to_jsonable_python

        try:
            canonical = json.dumps(
                to_jsonable_python(dict(arguments)), sort_keys=True, separators=(",", ":")
            )
        except (PydanticSerializationError, TypeError, ValueError):
            return None
        return (tool.name, ctx.tenant_id, ctx.user_id, canonical)

    def get(self, tool: Tool, key: CacheKey) -> CachedResult | None:
        """The fresh entry for ``key`` (counted as a hit), or ``None`` (a miss)."""
        entry = self._entries.get(key)
        if entry is not None:
            if self.clock.monotonic() - entry.stored_at < (tool.cache_ttl or 0.0):
                self._entries.move_to_end(key)
                self.counters.incr("tool.cache.hits.total")
                return entry
            self._remove(key)
        self.counters.incr("tool.cache.misses.total")
        return None

    def put(
        self, key: CacheKey, content: str, metadata: Mapping[str, Any], *, untrusted: bool = False
    ) -> None:
        """Store a successful result, evicting the least recently used entries to fit."""
        if len(content) > self.max_chars:
            return
        if key in self._entries:
            self._remove(key)
        self._entries[key] = CachedResult(
            content=content,
            metadata=dict(metadata),
            stored_at=self.clock.monotonic(),
            untrusted=untrusted,
        )
        self._chars += len(content)
        while len(self._entries) > self.max_entries or self._chars > self.max_chars:
            oldest = next(iter(self._entries))
            self._remove(oldest)
            self.counters.incr("tool.cache.evictions.total")

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self._chars = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _remove(self, key: CacheKey) -> None:
        entry = self._entries.pop(key)
        self._chars -= len(entry.content)
