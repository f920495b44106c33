"""Resolution plans: the policies and limits that apply to one (key, node, graph).

Built once per combination by the governor and cached, so the hot path walks prebuilt
tuples: custom policies in capture order (global → graph → node → ``llm`` → ``llm:a`` →
``llm:a:b``), counted limits of every ancestor key, and the nearest ``retries`` / ``timeout``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bastion.core import UserError

from ._policy import CustomPolicy, Limit, Oracle, Policy

__all__ = ["BoundLimit", "Plan", "key_ancestry", "normalize_policies"]

COUNTED = ("cost", "calls", "context")


def key_ancestry(key: str) -> tuple[str, ...]:
    """Return ``("llm", "llm:a", "llm:a:b")`` for ``"llm:a:b"``.

    Raises:
        UserError: For an empty key, an empty segment or a ``|`` in the key.
    """
    parts = key.split(":")
    if not key or "" in parts or "|" in key:
        raise UserError(
            f"Invalid oracle key {key!r}: use colon-separated non-empty names without '|', "
            "e.g. 'llm:anthropic:claude-sonnet'."
        )
    return tuple(":".join(parts[: i + 1]) for i in range(len(parts)))


@dataclass(kw_only=True, slots=True)
class BoundLimit:
    """A limit attached to the oracle key that owns it.

    Attributes:
        oracle: The owning key.
        limit: The configuration.
        id: ``"<oracle>|<type>|<window>"``: the counter key without a scope, and the key
            of its mutations.
    """

    oracle: str
    limit: Limit
    id: str
    # Read on every check and record: copied out of the limit once.
    type: str = field(init=False, repr=False, compare=False)
    max: float = field(init=False, repr=False, compare=False)
    label: str = field(init=False, repr=False, compare=False)
    seconds: float | None = field(init=False, repr=False, compare=False)
    scope: str | None = field(init=False, repr=False, compare=False)
    step: float | None = field(init=False, repr=False, compare=False)
    signal_name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        limit = self.limit
        window = limit.parsed_window
        self.type = limit.type
        self.max = limit.max
        self.label = window.label
        self.seconds = window.seconds
        self.signal_name = f"oracle.policy.{self.oracle}"
        self.scope = window.scope
        # What one more action adds before it runs: a call or a round counts 1, a context
        # limit the action's known tokens (None: given per check), the rest nothing yet.
        kind = limit.type
        self.step = 1.0 if kind in ("calls", "rounds") else (None if kind == "context" else 0.0)


def normalize_policies(
    policies: Sequence[Policy], *, where: str
) -> tuple[list[CustomPolicy], list[Limit]]:
    """Split a policy list into custom policies and limits."""
    custom: list[CustomPolicy] = []
    limits: list[Limit] = []
    for policy in policies:
        if isinstance(policy, Limit):
            limits.append(policy)
        elif isinstance(policy, CustomPolicy):
            custom.append(policy)
        elif callable(policy):
            custom.append(CustomPolicy(fn=policy))
        else:
            raise UserError(
                f"Invalid policy {policy!r} in {where}: use a Limit, a CustomPolicy or a "
                "function of a PolicyAction."
            )
    return custom, limits


class Plan:
    """What applies to one (key, node, graph)."""

    __slots__ = (
        "all_sync",
        "counted",
        "executor",
        "extracting",
        "key",
        "levels",
        "policies",
        "retries",
        "rounds",
        "timeout",
    )

    def __init__(
        self,
        *,
        key: str,
        policies: Sequence[tuple[str, CustomPolicy]],
        limits: Sequence[BoundLimit],
        executor: Callable[[Any], Any] | None,
    ) -> None:
        self.key = key
        self.levels = tuple(level for level, _ in policies)
        self.policies = tuple(policy for _, policy in policies)
        self.all_sync = not any(policy.is_async for policy in self.policies)
        self.counted = tuple(
            b for b in limits if b.limit.type in COUNTED or b.limit.type.startswith("x:")
        )
        # What a finished action's result alone can add (no usage, no calls): extracts.
        self.extracting = tuple(b for b in self.counted if b.limit.extract is not None)
        self.rounds = tuple(b for b in limits if b.limit.type == "rounds")
        # The nearest key's retries/timeout limit wins (limits are ordered top-down).
        self.retries = next((b.limit for b in reversed(limits) if b.limit.type == "retries"), None)
        self.timeout = next((b.limit for b in reversed(limits) if b.limit.type == "timeout"), None)
        self.executor = executor


def build_plan(
    key: str,
    *,
    node: str,
    graph: str,
    global_policies: Sequence[CustomPolicy],
    graph_policies: Mapping[str, Sequence[CustomPolicy]],
    node_policies: Mapping[str, Sequence[CustomPolicy]],
    oracle_policies: Mapping[str, Sequence[CustomPolicy]],
    oracle_limits: Mapping[str, Sequence[BoundLimit]],
    oracles: Mapping[str, Oracle],
) -> Plan:
    """Collect the policies and limits of ``key`` and its levels, top-down."""
    chain = key_ancestry(key)
    policies: list[tuple[str, CustomPolicy]] = [("global", p) for p in global_policies]
    if graph:
        # A graph execution id ``<graph key>#<execution>`` takes the policies of its key.
        name = graph.partition("#")[0]
        policies.extend((f"graph:{name}", p) for p in graph_policies.get(name, ()))
    if node:
        policies.extend((f"node:{node}", p) for p in node_policies.get(node, ()))
    limits: list[BoundLimit] = []
    executor: Callable[[Any], Any] | None = None
    for level in chain:
        policies.extend((level, p) for p in oracle_policies.get(level, ()))
        limits.extend(oracle_limits.get(level, ()))
        oracle = oracles.get(level)
        if oracle is not None and oracle.executor is not None:
            executor = oracle.executor
    return Plan(key=key, policies=policies, limits=limits, executor=executor)
