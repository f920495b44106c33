"""Graphs as data: a :class:`Registry` of Python nodes, and manifests that name them.

A manifest (a dict, JSON or YAML) says which registered nodes a graph has and how they
connect; the registry holds the code (functions, ``Node`` objects, agents), the edge conditions
and the graphs, so a server can load and run graphs by name. It is validated with pydantic
(an untrusted boundary): a bad manifest is a :class:`UserError` naming the field.

.. code-block:: yaml

    key: research
    output: report
    nodes:
      gather: gather            # a registered node
      each: {map: summarize, items: docs, max_concurrency: 4}
      report: {node: write_report, policies: [one_report_loop]}
    edges:
      - [gather, each]
      - [each, report]
      - {from: report, to: gather, when: needs_more}
    policies: [no_shutdown]     # graph level
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from bastion.core import UserError

from ._graph import Graph
from ._manifest_model import GraphManifest, Manifest, MapManifest, parse_manifest
from ._nodes import NodeFn, as_spec, check_key
from ._topology import Condition

if TYPE_CHECKING:
    from bastion.governance import Policy

    from ._nodes import NodeLike

__all__ = ["Registry"]

_T = TypeVar("_T")
_FnT = TypeVar("_FnT", bound=NodeFn)
_ConditionT = TypeVar("_ConditionT", bound=Condition)


class Registry:
    """Named nodes, edge conditions and graphs, for manifests and ``ctx.spawn``."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeLike] = {}
        self.conditions: dict[str, Condition] = {}
        self.policies: dict[str, Policy] = {}
        self._graphs: dict[str, Graph] = {}
        self._manifests: dict[str, Manifest] = {}

    # -- registering ----------------------------------------------------------------------

    def add_node(self, name: str, node: NodeLike) -> Registry:
        """Register a node implementation (function, ``Node`` or ``Agent``) under ``name``."""
        check_key("node", name)
        as_spec(name, node)  # a UserError now rather than when a manifest names it
        self.nodes[name] = node
        return self

    def node(self, fn: _FnT) -> _FnT:
        """Decorator: register a function under its name."""
        self.add_node(fn.__name__, fn)
        return fn

    def add_condition(self, name: str, when: Condition) -> Registry:
        """Register an edge condition (a function of the source's output) under ``name``."""
        self.conditions[check_key("condition", name)] = when
        return self

    def condition(self, fn: _ConditionT) -> _ConditionT:
        """Decorator: register an edge condition under its name."""
        self.add_condition(fn.__name__, fn)
        return fn

    def add_policy(self, name: str, policy: Policy) -> Registry:
        """Register a custom policy (e.g. ``max_loop("review", 3)``) for manifests."""
        self.policies[check_key("policy", name)] = policy
        return self

    def add_graph(self, graph: Graph | Manifest | str | Path) -> Registry:
        """Register a graph, or a manifest built when first used.

        A manifest is a dict, JSON or YAML text, or a file path.
        """
        if isinstance(graph, Graph):
            self._graphs[graph.key] = graph
            if graph.registry is None:
                graph.registry = self
            return self
        data = _read(graph)
        key = data.get("key")
        if not isinstance(key, str):
            raise UserError(f"A graph manifest needs a string 'key'; got {key!r}.")
        self._manifests[check_key("graph", key)] = data
        self._graphs.pop(key, None)
        return self

    # -- looking up -----------------------------------------------------------------------

    def has_graph(self, key: str) -> bool:
        """Whether a graph (or a manifest) is registered under ``key``."""
        return key in self._graphs or key in self._manifests

    def graph_keys(self) -> tuple[str, ...]:
        """The keys of the registered graphs and manifests."""
        return tuple(dict.fromkeys([*self._graphs, *self._manifests]))

    def graph(self, key: str) -> Graph:
        """The graph registered under ``key`` (built from its manifest the first time).

        Raises:
            UserError: No such graph, or an invalid manifest.
        """
        graph = self._graphs.get(key)
        if graph is not None:
            return graph
        data = self._manifests.get(key)
        if data is None:
            known = ", ".join(map(repr, self.graph_keys())) or "none"
            raise UserError(f"No graph {key!r} in the registry. Registered: {known}.")
        graph = self._graphs[key] = self.build(data)
        return graph

    def load(self, source: Manifest | str | Path) -> Graph:
        """Build a graph from a manifest (dict, JSON/YAML text or file) and register it.

        Raises:
            UserError: An invalid manifest, or a name the registry does not hold.
        """
        graph = self.build(_read(source))
        self._graphs[graph.key] = graph
        return graph

    def build(self, data: Manifest) -> Graph:
        """Build a graph from manifest data without registering it.

        Raises:
            UserError: An invalid manifest, or a name the registry does not hold.
        """
        manifest: GraphManifest = parse_manifest(data)
        graph = Graph(
            manifest.key,
            policies=self._policies(manifest.key, manifest.policies),
            entry=manifest.entry,
            output=manifest.output,
            max_concurrency=manifest.max_concurrency,
            max_rounds=manifest.max_rounds,
            registry=self,
        )
        for key, ref in manifest.nodes.items():
            if isinstance(ref, MapManifest):
                graph.add_map(
                    key,
                    self.graph(ref.map),
                    items=ref.items,
                    max_concurrency=ref.max_concurrency,
                    policies=self._policies(manifest.key, ref.policies),
                )
                continue
            name, policies = (ref, ()) if isinstance(ref, str) else (ref.node, ref.policies)
            spec = as_spec(
                key,
                self._node(manifest.key, key, name),
                policies=self._policies(manifest.key, policies),
                ref=name,
            )
            graph._add(spec)  # the registry builds graphs: the spec keeps the name
        for edge in manifest.edges:
            when = None
            if edge.when is not None:
                when = _registered(
                    self.conditions,
                    edge.when,
                    f"Graph {manifest.key!r}: edge {edge.source!r} -> {edge.target!r} "
                    f"names unknown condition {edge.when!r}.",
                    "Registered",
                )
            graph.add_edge(edge.source, edge.target, when=when, label=edge.when or "")
        graph.compile()
        return graph

    def _policies(self, graph: str, names: Sequence[str]) -> list[Policy]:
        return [
            _registered(
                self.policies,
                name,
                f"Graph {graph!r} names policy {name!r}, which is not registered.",
                "Registered policies",
            )
            for name in names
        ]

    def _node(self, graph: str, key: str, ref: str) -> NodeLike:
        return _registered(
            self.nodes,
            ref,
            f"Graph {graph!r}: node {key!r} names {ref!r}, which is not registered.",
            "Registered nodes",
        )


def _registered(table: Mapping[str, _T], name: str, problem: str, listing: str) -> _T:
    """``table[name]``.

    Raises:
        UserError: ``problem``, followed by ``listing`` and the names ``table`` holds.
    """
    found = table.get(name)
    if found is None:
        known = ", ".join(map(repr, table)) or "none"
        raise UserError(f"{problem} {listing}: {known}.")
    return found


def _read(source: Manifest | str | Path) -> Manifest:
    """Manifest data from a mapping, JSON or YAML text, or a ``.json`` / ``.yaml`` file."""
    if isinstance(source, Mapping):
        return source
    text = source
    if isinstance(source, Path) or (
        "\n" not in source and source.endswith((".json", ".yaml", ".yml"))
    ):
        path = Path(source)
        if not path.is_file():
            raise UserError(f"No manifest file at {str(path)!r}.")
        text = path.read_text(encoding="utf-8")
    text = str(text)
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UserError(f"A graph manifest is neither JSON nor YAML: {exc}") from exc
    if not isinstance(data, Mapping):
        raise UserError(
            f"A graph manifest is a mapping with 'key', 'nodes', 'edges'; got {data!r}."
        )
    return cast("Manifest", data)  # isinstance leaves its key type unknown: the schema checks
