"""Prompt caching for Anthropic's Messages API: where the ``cache_control`` breakpoints go.

A breakpoint caches the whole prefix up to and including the block it is on: the tools,
then the system prompt, then the messages, in that order. :class:`PromptCache` says which
of these get one (at most four per request, the API's limit); :func:`apply_cache` puts
them on the body ``_payload`` built. Cache usage comes back as
``cache_creation_input_tokens`` / ``cache_read_input_tokens`` (see ``_parser``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from bastion.core import JsonObject, UserError

__all__ = ["MAX_BREAKPOINTS", "PromptCache", "apply_cache"]

MAX_BREAKPOINTS = 4
# Blocks the API does not let carry a breakpoint themselves.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


@dataclass(kw_only=True, slots=True, frozen=True)
class PromptCache:
    """Which parts of each request Anthropic should cache (prompt caching).

    Args:
        tools: Put a breakpoint on the last tool definition (caches every tool).
        system: Put a breakpoint on the system prompt (caches tools + system).
        messages: Put a breakpoint on the last block of each of the last ``messages``
            turns; 1 (the default) caches the conversation so far for the next step, 2
            also keeps the previous step's prefix readable while the new one is written.
        ttl: How long an entry lives: ``"5m"`` (the default, refreshed on every hit) or
            ``"1h"`` (written at a higher price).

    Raises:
        UserError: More than four breakpoints, or a negative ``messages``.
    """

    tools: bool = True
    system: bool = True
    messages: int = 1
    ttl: Literal["5m", "1h"] = "5m"

    def __post_init__(self) -> None:
        if self.messages < 0:
            raise UserError(f"PromptCache(messages={self.messages!r}) must be 0 or more.")
        used = int(self.tools) + int(self.system) + self.messages
        if used > MAX_BREAKPOINTS:
            raise UserError(
                f"PromptCache asks for {used} cache breakpoints; Anthropic allows at most "
                f"{MAX_BREAKPOINTS} (tools + system + messages)."
            )
        if self.ttl not in ("5m", "1h"):
            raise UserError(f"PromptCache(ttl={self.ttl!r}) must be '5m' or '1h'.")

    def marker(self) -> JsonObject:
        """The ``cache_control`` object for one breakpoint."""
        if self.ttl == "5m":
            return {"type": "ephemeral"}
        return {"type": "ephemeral", "ttl": self.ttl}


def apply_cache(body: JsonObject, cache: PromptCache) -> None:
    """Put ``cache``'s breakpoints on a request body built by ``_payload`` (in place)."""
    marker = cache.marker()
    tools = cast("list[JsonObject]", body.get("tools") or [])
    if cache.tools and tools:
        tools[-1] = {**tools[-1], "cache_control": marker}
    system = body.get("system")
    if cache.system and isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": marker}]
    if cache.messages:
        turns = cast("list[JsonObject]", body["messages"])
        for turn in turns[-cache.messages :]:
            _mark_last_block(turn, marker)


def _mark_last_block(turn: JsonObject, marker: JsonObject) -> None:
    content = cast("list[JsonObject]", turn["content"])
    for index in range(len(content) - 1, -1, -1):
        if content[index].get("type") not in _UNMARKABLE:
            content[index] = {**content[index], "cache_control": marker}
            return
