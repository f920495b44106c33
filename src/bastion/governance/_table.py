"""A governor's configuration as lookup tables, and the resolution plans built from them.

Oracle keys map to their custom policies, their limits (bound to the key that owns them)
and an optional executor; global, graph and node policies sit above them. A :class:`Plan`
per (key, node, graph) is built on first use and cached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bastion.core import UserError

from ._plan import BoundLimit, Plan, build_plan, key_ancestry, normalize_policies
from ._policy import Budget, CustomPolicy, Oracle, Policy

__all__ = ["PolicyTable"]


def _custom_only(policies: Sequence[Policy], where: str) -> list[CustomPolicy]:
    custom, limits = normalize_policies(policies, where=where)
    if limits:
        raise UserError(
            f"Limits belong to oracles, not to {where}: move {limits[0].type!r} to an "
            "oracle key (e.g. oracles={'llm': [...]})."
        )
    return custom


class PolicyTable:
    """Policies and limits by level, and the cached plan of each action.

    Raises:
        UserError: For an invalid key, policy or limit (when built).
    """

    __slots__ = (
        "_executions",
        "_global",
        "_graph",
        "_node",
        "_oracle_policies",
        "_oracles",
        "limits",
        "plans",
    )

    def __init__(
        self,
        *,
        oracles: Mapping[str, Oracle | Sequence[Policy]],
        policies: Sequence[Policy],
        graph_policies: Mapping[str, Sequence[Policy]],
        node_policies: Mapping[str, Sequence[Policy]],
        budgets: Sequence[Budget],
    ) -> None:
        self.plans: dict[tuple[str, str, str], Plan] = {}
        self._executions: set[str] = set()  # graph execution ids with cached plans
        self._oracles: dict[str, Oracle] = {}
        self._oracle_policies: dict[str, list[CustomPolicy]] = {}
        self.limits: dict[str, list[BoundLimit]] = {}  # by owning oracle key
        for key, spec in oracles.items():
            self._add_oracle(key, spec if isinstance(spec, Oracle) else Oracle(policies=list(spec)))
        for item in budgets:
            self._add_oracle(item.oracle, Oracle(policies=[item.limit()]))
        self._global = _custom_only(policies, "policies")
        self._graph = {
            k: _custom_only(v, f"graph_policies[{k!r}]") for k, v in graph_policies.items()
        }
        self._node = {k: _custom_only(v, f"node_policies[{k!r}]") for k, v in node_policies.items()}

    def _add_oracle(self, key: str, oracle: Oracle) -> None:
        key_ancestry(key)
        custom, limits = normalize_policies(oracle.policies, where=f"oracle {key!r}")
        self._oracle_policies.setdefault(key, []).extend(custom)
        bound = self.limits.setdefault(key, [])
        for limit in limits:
            limit_id = f"{key}|{limit.type}|{limit.parsed_window.label}"
            if any(b.id == limit_id for b in bound):
                raise UserError(
                    f"Oracle {key!r} has two {limit.type!r} limits with window "
                    f"{limit.parsed_window.label!r}; keep one."
                )
            bound.append(BoundLimit(oracle=key, limit=limit, id=limit_id))
        previous = self._oracles.get(key)
        if previous is None or oracle.executor is not None:
            self._oracles[key] = oracle

    def extend(
        self,
        *,
        graph_policies: Mapping[str, Sequence[Policy]],
        node_policies: Mapping[str, Sequence[Policy]],
    ) -> None:
        """Add graph- and node-level policies (each policy once) and forget cached plans."""
        for level, added, where in (
            (self._graph, graph_policies, "graph_policies"),
            (self._node, node_policies, "node_policies"),
        ):
            for name, policies in added.items():
                known = level.setdefault(name, [])
                for policy in _custom_only(policies, f"{where}[{name!r}]"):
                    if all(policy.fn is not p.fn for p in known):
                        known.append(policy)
        self.plans.clear()

    def has_level_policies(self) -> bool:
        """Whether any global, graph or node policy is configured."""
        return bool(self._global) or any(self._graph.values()) or any(self._node.values())

    def forget(self, graph: str) -> None:
        """Drop the cached plans of one graph execution id (it ended)."""
        if graph not in self._executions:
            return
        self._executions.discard(graph)
        for cached in [k for k in self.plans if k[2] == graph]:
            del self.plans[cached]

    def plan(self, key: str, node: str, graph: str) -> Plan:
        """The plan of an action on ``key`` by ``node`` in ``graph`` (built once)."""
        plan = self.plans.get((key, node, graph))
        if plan is None:
            if "#" in graph:
                self._executions.add(graph)
            plan = self.plans[key, node, graph] = build_plan(
                key,
                node=node,
                graph=graph,
                global_policies=self._global,
                graph_policies=self._graph,
                node_policies=self._node,
                oracle_policies=self._oracle_policies,
                oracle_limits=self.limits,
                oracles=self._oracles,
            )
        return plan
