"""``Graph``: define nodes and edges in Python, then ``run`` or ``stream`` it.

The definition is mutable until it runs; ``compile()`` (called by the first run) checks it
and caches the compiled topology, and any later change recompiles. Running needs a governor:
the graph's own (``Graph(governor=...)``), one given to ``run``, or a default one without
policies made on first use and kept (its counters live as long as the graph).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from bastion.core import Clock, SystemClock, UserError, new_id
from bastion.governance import Governor

from ._durable import Durable
from ._execution import Execution
from ._map import Items, map_spec
from ._mcp_serve import graph_server
from ._mermaid import to_mermaid
from ._nodes import Inputs, NodeFn, NodeSpec, as_spec, check_key
from ._run import GraphStream, Run, Sink
from ._topology import Condition, Edge, Topology, compile_topology

if TYPE_CHECKING:
    from mcp.server import MCPServer as SDKServer

    from bastion.governance import GovernanceSignal, Policy

    from ._checkpoint import Checkpointer
    from ._manifest import Registry
    from ._nodes import NodeLike
    from ._result import GraphResult

__all__ = ["Graph"]

F = TypeVar("F", bound=NodeFn)


class Graph(Durable):
    """A graph of named nodes and edges.

    Args:
        key: The graph's name (letters, digits, ``_ . -``): graph-level policies, ids and
            manifests use it.
        governor: The governor every action of its executions goes through.
        policies: Graph-level custom policies (between global and node level).
        entry: The entry node(s) (default: the nodes no edge leads to).
        output: The node whose output is the graph's (default: the single node without
            outgoing edges; with several, a dict of theirs).
        max_concurrency: Nodes running at once, at most.
        max_rounds: Rounds at most (cycles); further rounds are not started.
        checkpointer: Where executions are saved as they go (default: nowhere).
        registry: Where ``ctx.spawn`` finds graphs by key (and manifests find nodes).
        clock: The clock of the default governor and of ``ctx.oracle.llm`` runs.

    Raises:
        UserError: For an invalid key or setting.
    """

    def __init__(
        self,
        key: str = "graph",
        *,
        governor: Governor | None = None,
        policies: Sequence[Policy] = (),
        entry: str | Sequence[str] | None = None,
        output: str | None = None,
        max_concurrency: int = 16,
        max_rounds: int | None = None,
        checkpointer: Checkpointer | None = None,
        registry: Registry | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.key = check_key("graph", key)
        if max_concurrency < 1:
            raise UserError(f"Graph {key!r}: max_concurrency must be >= 1, got {max_concurrency}.")
        if max_rounds is not None and max_rounds < 1:
            raise UserError(f"Graph {key!r}: max_rounds must be >= 1 or None, got {max_rounds}.")
        self.governor = governor
        self.policies = tuple(policies)
        self.entry = (entry,) if isinstance(entry, str) else tuple(entry or ())
        self.output = output
        self.max_concurrency = max_concurrency
        self.max_rounds = max_rounds
        self.checkpointer = checkpointer
        self.registry = registry
        self.clock: Clock = (
            clock
            if clock is not None
            else (governor.clock if governor is not None else SystemClock())
        )
        self.specs: dict[str, NodeSpec] = {}
        self.edges: list[Edge] = []
        self._topology: Topology | None = None
        self._bound: weakref.WeakSet[Governor] = weakref.WeakSet()
        self._as_graphs: dict[str, Graph] = {}

    def __repr__(self) -> str:
        return f"Graph({self.key!r}, nodes={len(self.specs)}, edges={len(self.edges)})"

    # -- definition ---------------------------------------------------------------------

    def add_node(
        self,
        key: str,
        node: NodeLike,
        *,
        policies: Sequence[Policy] = (),
        prompt: Callable[[Inputs], str] | None = None,
    ) -> Graph:
        """Add a node and return the graph.

        A node is a function ``(inputs)`` / ``(inputs, ctx)`` (sync or async), a
        :class:`Node`, or an ``Agent`` (``prompt`` turns the inputs into its message).

        Raises:
            UserError: A key used twice, an invalid key, or something that is no node.
        """
        self._add(as_spec(key, node, policies=policies, prompt=prompt))
        return self

    def _add(self, spec: NodeSpec) -> None:
        if spec.key in self.specs:
            raise UserError(f"Graph {self.key!r} already has a node {spec.key!r}.")
        self.specs[spec.key] = spec
        self._topology = None
        if spec.policies:
            self._bound = weakref.WeakSet()  # governors must learn the new node's policies

    @overload
    def node(self, fn: F, /) -> F: ...
    @overload
    def node(
        self, fn: None = None, /, *, key: str | None = None, policies: Sequence[Policy] = ()
    ) -> Callable[[F], F]: ...
    def node(
        self, fn: F | None = None, /, *, key: str | None = None, policies: Sequence[Policy] = ()
    ) -> F | Callable[[F], F]:
        """Decorator: add the function as a node named after it (or ``key``)."""

        def register(target: F) -> F:
            self.add_node(key or target.__name__, target, policies=policies)
            return target

        return register(fn) if fn is not None else register

    def add_edge(
        self,
        source: str,
        target: str,
        *,
        when: Condition | None = None,
        label: str = "",
    ) -> Graph:
        """Send ``source``'s output to ``target`` (only when ``when(output)`` is true).

        An edge back to an earlier node makes a cycle: the target runs again in the next
        round. Unknown nodes are reported by ``compile()``.
        """
        self.edges.append(Edge(source, target, when, label or getattr(when, "__name__", "")))
        self._topology = None
        return self

    def add_conditional_edges(
        self,
        source: str,
        router: Callable[[Any], str | Sequence[str]],
        targets: Mapping[str, str] | Sequence[str],
    ) -> Graph:
        """Route ``source``'s output: ``router(output)`` names the target(s) to take.

        ``targets`` lists the possible targets, or maps the router's answers to them.
        """
        mapping = dict(targets) if isinstance(targets, Mapping) else {t: t for t in targets}
        for answer, target in mapping.items():

            def when(output: object, answer: str = answer) -> bool:
                chosen = router(output)
                return chosen == answer if isinstance(chosen, str) else answer in chosen

            self.add_edge(source, target, when=when, label=answer)
        return self

    def add_map(
        self,
        key: str,
        graph: Graph,
        *,
        items: Items = None,
        max_concurrency: int = 8,
        policies: Sequence[Policy] = (),
    ) -> Graph:
        """Add a node that runs ``graph`` once per element of a list.

        The node's output is the list of the executions' outputs, in input order.

        Args:
            key: The node's key.
            graph: The sub-graph run per element (the element is its input).
            items: Where the list is: a key of the first input (a mapping), a function of
                the inputs, or ``None`` for the first input itself.
            max_concurrency: Elements in flight at once, at most.
            policies: Node-level policies.
        """
        self._add(map_spec(key, graph, items, max_concurrency, policies))
        return self

    # -- compiled form --------------------------------------------------------------------

    def compile(self) -> Topology:
        """Check the definition and return its compiled topology (cached).

        Raises:
            UserError: An unknown node, an unreachable node, no entry, or a cycle with no
                bound, naming the node.
        """
        topology = self._topology
        if topology is None:
            if self.output is not None and self.output not in self.specs:
                raise UserError(f"Graph {self.key!r}: unknown output node {self.output!r}.")
            topology = self._topology = compile_topology(
                self.key,
                list(self.specs),
                self.edges,
                entry=self.entry,
                bounded=self._bounded,
            )
        return topology

    def validate(self) -> None:
        """Raise the first problem of the definition as a ``UserError``."""
        self.compile()

    def _bounded(self, nodes: Sequence[str]) -> bool:
        if self.max_rounds is not None or self.policies:
            return True
        if self.governor is not None and self.governor.has_level_policies():
            return True
        return any(self.specs[k].policies for k in nodes)

    def bind(self, governor: Governor) -> None:
        """Give ``governor`` this graph's graph- and node-level policies (once)."""
        if governor in self._bound:
            return
        nodes = {k: s.policies for k, s in self.specs.items() if s.policies}
        if self.policies or nodes:
            governor.add_policies(graph_policies={self.key: self.policies}, node_policies=nodes)
        self._bound.add(governor)

    def resolve(self, key: str | Graph) -> Graph:
        """The graph ``ctx.spawn(key)`` runs.

        ``key`` is a ``Graph``, a registered graph's key, or a node of this graph (run
        alone).

        Raises:
            UserError: ``key`` names no registered graph and no node.
        """
        if isinstance(key, Graph):
            return key
        registry = self.registry
        if registry is not None and registry.has_graph(key):
            return registry.graph(key)
        spec = self.specs.get(key)
        if spec is None:
            graphs = registry.graph_keys() if registry is not None else ()
            raise UserError(
                f"Graph {self.key!r}: cannot spawn {key!r}: no registered graph and no node "
                f"has that key. Graphs: {', '.join(map(repr, graphs)) or 'none'}; nodes: "
                f"{', '.join(map(repr, self.specs))}."
            )
        alone = self._as_graphs.get(key)
        if alone is None:
            alone = Graph(key, registry=registry, max_concurrency=self.max_concurrency)
            alone._add(spec)
            self._as_graphs[key] = alone
        return alone

    # -- running --------------------------------------------------------------------------

    def _governor(self, governor: Governor | None) -> Governor:
        if governor is not None:
            return governor
        if self.governor is None:
            self.governor = Governor(clock=self.clock)
        return self.governor

    def _start(
        self,
        input: object,
        sink: Sink | None,
        *,
        execution_id: str | None,
        governor: Governor | None,
        checkpointer: Checkpointer | None,
    ) -> tuple[Run, Execution]:
        self.compile()  # a UserError before anything starts
        execution_id = execution_id or new_id("gx")
        if "#" in execution_id or "|" in execution_id:
            raise UserError(f"An execution id may not contain '#' or '|': {execution_id!r}.")
        run = Run(
            governor=self._governor(governor),
            invocation_id=f"{self.key}#{execution_id}",
            sink=sink,
            checkpointer=checkpointer if checkpointer is not None else self.checkpointer,
            clock=self.clock,
        )
        return run, Execution(run, self, execution_id, input)

    async def run(
        self,
        input: object = None,
        *,
        execution_id: str | None = None,
        governor: Governor | None = None,
        checkpointer: Checkpointer | None = None,
        abort: asyncio.Event | None = None,
    ) -> GraphResult:
        """Run the graph on ``input`` (entries receive ``[input]``) and return the result.

        A failed node does not raise: the result's ``status`` and ``errors`` say what
        happened (``result.raise_for_status()`` raises).

        Args:
            input: The input.
            execution_id: Resume or name the execution (its checkpoints' key).
            governor: Use this governor instead of the graph's.
            checkpointer: Save into this checkpointer instead of the graph's.
            abort: Set it to abort the execution.

        Raises:
            UserError: The definition is invalid (before anything runs).
        """
        run, execution = self._start(
            input, None, execution_id=execution_id, governor=governor, checkpointer=checkpointer
        )
        run.main = asyncio.current_task()
        if abort is None:
            return await execution.execute()
        watcher = asyncio.get_running_loop().create_task(abort.wait())
        watcher.add_done_callback(lambda task: task.cancelled() or run.abort("aborted"))
        try:
            return await execution.execute()
        finally:
            watcher.cancel()

    def stream(
        self,
        input: object = None,
        *,
        execution_id: str | None = None,
        governor: Governor | None = None,
        checkpointer: Checkpointer | None = None,
    ) -> GraphStream:
        """Run the graph and stream its signals, ``graph.before`` … ``graph.after``.

        The stream's ``abort()`` stops it. Arguments as for :meth:`run`.

        Raises:
            UserError: The definition is invalid (before anything runs).
        """
        self.compile()
        execution_id = execution_id or new_id("gx")

        def start(sink: Sink) -> tuple[Run, Coroutine[None, None, GraphResult]]:
            run, execution = self._start(
                input,
                sink,
                execution_id=execution_id,
                governor=governor,
                checkpointer=checkpointer,
            )
            invocation = run.invocation_id

            def governed(signal: GovernanceSignal) -> None:
                if signal.invocation_id == invocation:
                    sink(signal)

            unsubscribe = run.governor.subscribe(governed)

            async def work() -> GraphResult:
                try:
                    return await execution.execute()
                finally:
                    unsubscribe()

            return run, work()

        return GraphStream(execution_id, start)

    # -- views ----------------------------------------------------------------------------

    def mcp_server(
        self, *, tool_name: str | None = None, source: str | None = None, store: str | None = None
    ) -> SDKServer:
        """An MCP server exposing this graph as one tool (``bastion.mcp.serve_agent`` serves it).

        ``store`` (a URL) checkpoints the served executions there instead of into the graph's
        checkpointer; ``source`` (``module:attr``) completes the resume command a suspension
        answers with. See ``bastion.graph.graph_server``.
        """
        return graph_server(self, tool_name=tool_name, source=source, store=store)

    def to_mermaid(self) -> str:
        """The graph as a Mermaid flowchart (conditional edges dashed, with labels)."""
        return to_mermaid(self)
