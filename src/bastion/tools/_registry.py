"""The tools of one agent by name: sources, precedence and collisions.

``Agent`` builds a :class:`ToolRegistry` from ``tools=``; MCP clients and skill loaders add
theirs later with :meth:`ToolRegistry.register`. Each tool's ``trust_class`` places it on
the precedence ladder (first-party > trusted skill > untrusted skill > MCP). Two tools of
the same rung with one name are an error (unless they come from two named sources, such as
two MCP servers: then the first registered is the winner); across rungs the collision strategy
decides: ``auto-prefix`` (default) keeps the higher tool's name and renames the lower one
``<source>__<name>``, ``priority`` drops the lower one, ``manual`` refuses. Registration
also checks what can be checked before a run: worked examples against the schemas, and
the cache TTL.

The registry keeps one plain ``dict`` in sync (the agent's ``agent.tools``, which the
executor reads); tools put straight into that dict are adopted at the next registration (a
tool put again under the same key replaces the one adopted before). A *tool source* (an MCP
server) owns a group of entries that :meth:`ToolRegistry.set_source` replaces as a whole
when its list changes; :attr:`ToolRegistry.version` counts the changes, so the agent knows
when to rebuild what it advertises.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal, TypeAlias

from bastion.core import JsonValue, UserError
from bastion.observability import Counters

from ._schema import ToolArgumentsError, check_against
from ._tool import Tool, ToolTrustClass, tool

__all__ = [
    "PRECEDENCE",
    "CollisionStrategy",
    "DuplicateToolNameError",
    "ToolCollision",
    "ToolRegistry",
    "find_collisions",
]

CollisionStrategy: TypeAlias = Literal["auto-prefix", "priority", "manual"]

PRECEDENCE: Mapping[ToolTrustClass, int] = MappingProxyType(
    {
        "first_party_built_in": 0,
        # The built-in web search is shipped by Bastion: first-party for naming purposes,
        # even though what it returns is untrusted (sanitisation keys off trust_class).
        "web_search": 0,
        "first_party_user_defined": 0,
        "skill_trusted": 1,
        "skill_untrusted": 2,
        "mcp_derived": 3,
    }
)
"""Rank of each trust class on the precedence ladder (lower wins a name)."""

_SHORT: Mapping[ToolTrustClass, str] = MappingProxyType(
    {
        "first_party_built_in": "builtin",
        "web_search": "builtin",
        "first_party_user_defined": "user",
        "skill_trusted": "skill",
        "skill_untrusted": "skill",
        "mcp_derived": "mcp",
    }
)
_RUNG = ("first-party", "trusted skill", "untrusted skill", "MCP")
_STRATEGIES: tuple[str, ...] = ("auto-prefix", "priority", "manual")
_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]")
_MAX_NAME = 128


class DuplicateToolNameError(UserError):
    """Two tools claim one name and the collision strategy does not resolve it.

    Attributes:
        names: The contested names.
    """

    def __init__(self, message: str, names: Iterable[str]) -> None:
        super().__init__(message)
        self.names = tuple(names)


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolCollision:
    """A name two tools of different sources wanted, and how it was resolved.

    Attributes:
        name: The contested name (the winner keeps it).
        winner: Trust class of the tool that kept the name.
        winner_source: Its ``source``, if any.
        loser: Trust class of the tool that lost it.
        loser_source: Its ``source``, if any.
        resolution: ``renamed`` (``auto-prefix``) or ``dropped`` (``priority``).
        renamed_to: The loser's new name, when renamed.
    """

    name: str
    winner: ToolTrustClass
    winner_source: str | None
    loser: ToolTrustClass
    loser_source: str | None
    resolution: Literal["renamed", "dropped"]
    renamed_to: str | None = None


def find_collisions(tools: Iterable[Tool]) -> dict[str, tuple[Tool, ...]]:
    """Pure detection: every name claimed by more than one tool, with its claimants."""
    groups: dict[str, list[Tool]] = {}
    for t in tools:
        groups.setdefault(t.name, []).append(t)
    return {name: tuple(group) for name, group in groups.items() if len(group) > 1}


class ToolRegistry(Mapping[str, Tool]):
    """The tools an agent offers, by resolved name; a read-only mapping.

    Example::

        registry = ToolRegistry([search], collision_strategy="auto-prefix")
        registry.register(mcp_search)  # an MCP tool named "search" from server "web"
        registry.names()  # ('search', 'web__search')

    Args:
        tools: Tools, or plain functions (made into tools with :func:`bastion.tool`).
        collision_strategy: How cross-source name collisions are resolved.
        owner: Names the owner in error messages (e.g. ``"Agent 'a'"``).
        counters: Where ``tool.collision.*`` and ``tool.classification.*`` counts go.
        into: The dict to keep in sync with the resolved tools (default: a new one).

    Raises:
        UserError: An unknown strategy, or a tool that fails the registration checks.
        DuplicateToolNameError: Same-rung duplicates, or any collision under ``manual``.
    """

    __slots__ = (
        "_adopted_ids",
        "_collisions",
        "_counted",
        "_counters",
        "_entries",
        "_live",
        "_origins",
        "_owner",
        "_placed",
        "_sources",
        "_strategy",
        "_version",
    )

    def __init__(
        self,
        tools: Iterable[Tool | Callable[..., object]] = (),
        *,
        collision_strategy: CollisionStrategy = "auto-prefix",
        owner: str = "Tool registry",
        counters: Counters | None = None,
        into: dict[str, Tool] | None = None,
    ) -> None:
        if collision_strategy not in _STRATEGIES:
            raise UserError(
                f"{owner}: collision_strategy must be one of "
                f"{', '.join(repr(s) for s in _STRATEGIES)}, got {collision_strategy!r}."
            )
        self._strategy: CollisionStrategy = collision_strategy
        self._owner = owner
        self._counters = counters if counters is not None else Counters()
        self._entries: list[Tool] = []
        self._live: dict[str, Tool] = into if into is not None else {}
        self._placed: dict[str, Tool] = {}  # what the last resolution put into _live
        self._origins: dict[str, Tool] = {}  # resolved name -> the tool as registered
        self._counted: set[tuple[str, str, str | None]] = set()
        self._collisions: tuple[ToolCollision, ...] = ()
        self._sources: dict[str, tuple[Tool, ...]] = {}  # source key -> its entries
        self._adopted_ids: dict[str, int] = {}  # name -> id of the entry adopted from the dict
        self._version = 0
        self.register_many(tools)

    @property
    def collisions(self) -> tuple[ToolCollision, ...]:
        """Every cross-source collision resolved, and how (renamed or dropped)."""
        return self._collisions

    @property
    def version(self) -> int:
        """Grows by one at every change of the resolved tools (registration or source update)."""
        return self._version

    @property
    def collision_strategy(self) -> CollisionStrategy:
        """The strategy cross-source collisions are resolved with."""
        return self._strategy

    def register(self, new: Tool | Callable[..., object]) -> Tool | None:
        """Add a tool; returns it as registered (renamed, maybe), or ``None`` if dropped.

        A higher-precedence tool registered later takes the name from a lower one already
        registered (which is then renamed or dropped). Nothing changes when this raises.

        Raises:
            UserError: The tool fails the registration checks.
            DuplicateToolNameError: The name is taken on the same rung, or ``manual``.
        """
        return self.register_many([new])[0]

    def register_many(
        self, tools: Iterable[Tool | Callable[..., object]]
    ) -> tuple[Tool | None, ...]:
        """Add several tools at once (one resolution pass: use it for a whole MCP server).

        Returns each tool as registered, or ``None`` for a dropped one, in order.

        Raises:
            UserError: A tool fails the registration checks (nothing is added).
            DuplicateToolNameError: As for :meth:`register` (nothing is added).
        """
        built = [self._check(t if isinstance(t, Tool) else tool(t)) for t in tools]
        adopted, dropped = self._adopted()
        resolved = self._commit(adopted, built, dropped)
        for t in built:
            if t.side_effect_class in ("side_effecting", "external_stateful") and (
                t.idempotency_key is None
            ):
                # A missing idempotency key deserves a warning, but one would fire for every default
                # (side-effecting) tool, so the gap is counted and shown in classification().
                self._counters.incr("tool.classification.idempotency_key_missing.total")
        placed = {id(origin): name for name, origin in self._origins.items()}
        return tuple(resolved[placed[id(t)]] if id(t) in placed else None for t in built)

    def set_source(self, key: str, tools: Iterable[Tool]) -> tuple[Tool | None, ...]:
        """Replace every tool registered under source ``key`` by ``tools`` (one pass).

        Used by tool sources whose list changes while the agent lives (an MCP server's
        ``tools/list_changed``). Returns each tool as registered, or ``None`` if dropped.

        Raises:
            UserError: A tool fails the registration checks (nothing changes).
            DuplicateToolNameError: As for :meth:`register` (nothing changes).
        """
        built = [self._check(t) for t in tools]
        adopted, dropped = self._adopted()
        dropped |= {id(t) for t in self._sources.get(key, ())}
        resolved = self._commit(adopted, built, dropped)
        self._sources[key] = tuple(built)
        placed = {id(origin): name for name, origin in self._origins.items()}
        return tuple(resolved[placed[id(t)]] if id(t) in placed else None for t in built)

    def names(self) -> tuple[str, ...]:
        """The resolved names, in registration order."""
        return tuple(self._live)

    def original(self, name: str) -> Tool:
        """The tool registered under the (maybe prefixed) ``name``, with its own name.

        Raises:
            KeyError: No tool has that name.
        """
        return self._origins.get(name) or self._live[name]

    def assert_no_duplicates(self) -> None:
        """Raise if any two registered tools claimed one name (whatever was resolved).

        Raises:
            DuplicateToolNameError: Listing every collision the strategy resolved.
        """
        if self.collisions:
            raise DuplicateToolNameError(
                f"{self._owner}: tool name collisions: {_describe(self.collisions)}.",
                (c.name for c in self.collisions),
            )

    def __getitem__(self, name: str) -> Tool:
        return self._live[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._live)

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, name: object) -> bool:
        return name in self._live

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._live)!r}, collision_strategy={self._strategy!r})"

    def _adopted(self) -> tuple[list[Tool], set[int]]:
        """Tools put straight into the synced dict since the last resolution.

        Returns them, and the ids of the entries they replace: a tool put under a key that
        held an adopted tool replaces that entry (the agent rebuilds ``tool_search`` so
        when its deferred tools change).
        """
        placed = self._placed
        adopted: list[Tool] = []
        replaced: set[int] = set()
        for name, t in self._live.items():
            if placed.get(name) is not t:
                adopted.append(t if t.name == name else replace(t, name=name))
                if name in self._adopted_ids:
                    replaced.add(self._adopted_ids[name])
        return adopted, replaced

    def _commit(self, adopted: list[Tool], built: list[Tool], dropped: set[int]) -> dict[str, Tool]:
        kept = [t for t in self._entries if id(t) not in dropped] if dropped else self._entries
        entries = [*kept, *adopted, *built]
        resolved, origins, collisions = self._resolve(entries)
        self._version += 1
        self._adopted_ids.update((t.name, id(t)) for t in adopted)
        self._entries = entries
        self._origins = origins
        self._placed = dict(resolved)
        self._live.clear()
        self._live.update(resolved)
        self._collisions = tuple(collisions)
        for c in collisions:
            key = (c.name, c.loser, c.loser_source)
            if key not in self._counted:
                self._counted.add(key)
                self._counters.incr(f"tool.collision.{c.resolution}.total")
        return resolved

    def _resolve(
        self, entries: list[Tool]
    ) -> tuple[dict[str, Tool], dict[str, Tool], list[ToolCollision]]:
        # One dict entry per name; lists only for the (rare) names claimed twice, so a
        # server of 10,000 tools allocates no per-tool lists (GC time dominated here).
        first: dict[str, Tool] = {}
        groups: dict[str, list[Tool]] = {}
        for t in entries:
            seen = first.get(t.name)
            if seen is None:
                first[t.name] = t
            else:  # the same tool object twice is a duplicate too
                groups.setdefault(t.name, [seen]).append(t)
        same_rung = [
            (name, PRECEDENCE[a.trust_class])
            for name, group in groups.items()
            for i, a in enumerate(group)
            for b in group[i + 1 :]
            if PRECEDENCE[a.trust_class] == PRECEDENCE[b.trust_class]
            and not self._across_sources(a, b)
        ]
        if same_rung:
            listed = "; ".join(
                f"two tools are named {n!r} (both {_RUNG[rank]})"
                for n, rank in dict(same_rung).items()
            )
            raise DuplicateToolNameError(
                f"{self._owner}: {listed}; tool names of one source rank must be unique: "
                "rename one (tool(..., name='...')).",
                dict(same_rung),
            )
        ranked = {
            name: sorted(group, key=lambda t: PRECEDENCE[t.trust_class])
            for name, group in groups.items()
        }
        losers = [(r[0], t) for r in ranked.values() for t in r[1:]]
        if losers and self._strategy == "manual":
            refused = [_collision(w, t, "dropped") for w, t in losers]
            raise DuplicateToolNameError(
                f"{self._owner}: tool name collisions (collision_strategy='manual'): "
                f"{_describe(refused)}. Rename the tools, or use "
                "collision_strategy='auto-prefix' or 'priority'.",
                (c.name for c in refused),
            )
        resolved: dict[str, Tool] = {}
        origins: dict[str, Tool] = {}
        collisions: list[ToolCollision] = []
        for name, only in first.items():
            group = ranked.get(name)
            if group is None:
                resolved[name] = origins[name] = only
                continue
            winner, *lower = group
            resolved[name] = origins[name] = winner
            for loser in lower:  # higher precedence first; each right after its winner
                if self._strategy == "priority":
                    collisions.append(_collision(winner, loser, "dropped"))
                    continue
                new_name = _prefixed(loser)
                if new_name in first or new_name in resolved:
                    raise DuplicateToolNameError(
                        f"{self._owner}: tool {loser.name!r} collides with a "
                        f"{_RUNG[PRECEDENCE[winner.trust_class]]} tool, and its prefixed "
                        f"name {new_name!r} is taken too; rename one of them.",
                        (loser.name, new_name),
                    )
                resolved[new_name] = replace(loser, name=new_name)
                origins[new_name] = loser
                collisions.append(_collision(winner, loser, "renamed", new_name))
        return resolved, origins, collisions

    def _across_sources(self, a: Tool, b: Tool) -> bool:
        """Whether two same-rung tools come from two named sources (two MCP servers).

        The strategy then resolves them like a cross-rung collision: the first registered
        keeps the name.
        """
        return a.source is not None and b.source is not None and a.source != b.source

    def _check(self, t: Tool) -> Tool:
        """The registration checks (fail fast, before any run)."""
        where = f"{self._owner}: tool {t.name!r}"
        ttl: object = t.cache_ttl
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl < 0
        ):
            raise UserError(f"{where}: cache_ttl must be a number of seconds >= 0, got {ttl!r}.")
        if len(t.examples) > 5:
            raise UserError(f"{where}: at most 5 examples, got {len(t.examples)}.")
        output_check = _output_validator(t, where) if t.output_schema is not None else None
        for i, example in enumerate(t.examples):
            try:
                arguments = json.dumps(example.input)
            except (TypeError, ValueError) as exc:
                raise UserError(f"{where}: examples[{i}].input is not JSON: {exc}.") from None
            if not isinstance(example.input, dict):
                raise UserError(f"{where}: examples[{i}].input must be a dict of arguments.")
            try:
                t.validator.validate(arguments)
            except ToolArgumentsError as exc:
                raise UserError(
                    f"{where}: examples[{i}].input does not fit the argument schema: {exc}."
                ) from None
            if output_check is not None and example.output is not None:
                problems = output_check(example.output)
                if problems:
                    raise UserError(
                        f"{where}: examples[{i}].output does not fit output_schema: "
                        f"{'; '.join(problems)}."
                    )
        return t


def _prefixed(t: Tool) -> str:
    source = _NOT_NAME.sub("_", t.source or _SHORT[t.trust_class]) or _SHORT[t.trust_class]
    name = f"{source}__{t.name}"
    if len(name) > _MAX_NAME:  # keep it valid and still unique per (source, name)
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}_{digest}"
    return name


def _collision(
    winner: Tool,
    loser: Tool,
    resolution: Literal["renamed", "dropped"],
    renamed_to: str | None = None,
) -> ToolCollision:
    return ToolCollision(
        name=winner.name,
        winner=winner.trust_class,
        winner_source=winner.source,
        loser=loser.trust_class,
        loser_source=loser.source,
        resolution=resolution,
        renamed_to=renamed_to,
    )


def _describe(collisions: Iterable[ToolCollision]) -> str:
    return "; ".join(
        f"{c.name!r}: {c.winner} ({c.winner_source or 'no source'}) over "
        f"{c.loser} ({c.loser_source or 'no source'})"
        for c in collisions
    )


def _output_validator(t: Tool, where: str) -> Callable[[JsonValue], list[str]]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = dict(t.output_schema or {})
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise UserError(f"{where}: invalid output_schema: {exc.message}.") from None
    validator = Draft202012Validator(schema)

    def problems(value: JsonValue) -> list[str]:
        try:
            check_against(validator, value)
        except ToolArgumentsError as exc:
            return exc.problems
        return []

    return problems
