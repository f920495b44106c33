"""One execution of a graph: rounds of nodes scheduled by their edges.

A round runs the *region* reachable from its seeds over forward edges (round 0: from the
entries, with ``[input]``). A node runs once every predecessor in the region settled and at
least one edge into it fired; a node no fired edge reaches is skipped, and so are the nodes
only it leads to, so joins never wait forever. Independent nodes run concurrently in a task
group, at most ``max_concurrency`` at once; while a single node is ready it runs inline (no
task). Back edges that fire seed the next round; a seed (the node a loop comes back to) is
first checked by the governor as an action on ``node:<key>`` (its earlier runs count as its
ancestry, so ``max_cycles`` / ``max_loop`` bound loops); ``max_rounds`` bounds them too.
The nodes after it in the round follow it without a check of their own.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bastion.governance import Denied, InterruptRequired, PolicyExceeded

from ._checkpoint import Step
from ._context import NodeContext
from ._nodes import Inputs, Layer, NodeSpec, Suspended
from ._result import Aborted, GraphResult, NodeInterrupt
from ._signals import (
    GraphAfter,
    GraphBefore,
    GraphError,
    GraphStatus,
    GraphWhere,
    NodeAfter,
    NodeBefore,
    NodeError,
    NodeErrorKind,
)

if TYPE_CHECKING:
    from ._graph import Graph
    from ._run import Run

__all__ = ["Execution"]

_INPUT = -1  # the inbox slot of the execution's input (entries, round 0)
Fired = tuple[list[tuple[str, int]], list[tuple[str, int]]]  # (forward, back) edges taken
Inbox = dict[str, dict[int, object]]  # by node key: the outputs that reached it, by edge slot
_NOWHERE: Fired = ([], [])  # a node without outgoing edges (never mutated)


class Execution:
    """One graph execution (the root one, a spawned one, or one mapped item)."""

    __slots__ = (
        "_delta",
        "_group",
        "_inbox",
        "_next",
        "_queue",
        "_ready",
        "_running",
        "_seeds",
        "_waits",
        "ancestry",
        "errors",
        "execution_id",
        "graph",
        "graph_id",
        "input",
        "latest",
        "parent",
        "round",
        "run",
        "runs",
        "saved",
        "spawned",
        "stopped",
        "topology",
    )

    def __init__(
        self,
        run: Run,
        graph: Graph,
        execution_id: str,
        input: object,
        *,
        ancestry: tuple[str, ...] = (),
        parent: Execution | None = None,
    ) -> None:
        self.run = run
        self.graph = graph
        self.execution_id = execution_id
        self.graph_id = f"{graph.key}#{execution_id}"
        self.topology = graph.compile()
        self.input = input
        self.ancestry = ancestry
        self.parent = parent
        self.round = 0
        self.latest: dict[str, tuple[tuple[Layer, ...], object]] = {}
        self.runs: dict[str, int] = {}
        self.errors: dict[str, BaseException] = {}
        self.stopped: list[str] = []
        self.saved: Mapping[str, object] | None = None
        self.spawned = 0  # nested executions started by its nodes (their ids count them)
        self._inbox: Inbox = {}
        self._next: Inbox = {}
        self._waits: dict[str, int] = {}
        self._ready: list[str] = []
        self._seeds: frozenset[str] = frozenset()  # where the round started (back edges)
        self._queue: deque[str] = deque()
        self._running = 0
        self._group: asyncio.TaskGroup | None = None
        self._delta: dict[str, object] = {}  # what this round finished (with a checkpointer)

    def child(self, graph: Graph, execution_id: str, input: object, *, below: str) -> Execution:
        """A nested execution of ``graph`` started by this execution's node ``below``."""
        return Execution(
            self.run,
            graph,
            execution_id,
            input,
            ancestry=(*self.ancestry, below),
            parent=self,
        )

    # -- the execution ------------------------------------------------------------------

    async def execute(self) -> GraphResult:
        """Run to the end; ``graph.after`` is emitted exactly once, whatever happens."""
        run, graph = self.run, self.graph
        topology = self.topology
        graph.bind(run.governor)
        sink = run.sink
        if sink is not None:
            sink(GraphBefore(**self._where(), key=graph.key, input=self.input))
        status: GraphStatus = "completed"
        cancelled = False
        if is_root := self.parent is None:
            run.started = True
        try:
            if run.aborted is not None:
                raise Aborted(run.aborted)
            await self._load()
            seeds: Inbox = {e: {_INPUT: self.input} for e in topology.entries}
            while seeds:
                seeds = await self._round(seeds)
                self.round += 1
                if seeds and graph.max_rounds is not None and self.round >= graph.max_rounds:
                    self.stopped.extend(seeds)
                    seeds = {}
            if is_root:
                await run.join_background()
        except asyncio.CancelledError:
            status, cancelled = "aborted", True
        except Aborted:
            status = "aborted"
        else:
            status = self._status()
        return await self._finish(status, cancelled)

    def _status(self) -> GraphStatus:
        errors = self.errors.values()
        if any(not isinstance(e, Suspended | InterruptRequired) for e in errors):
            return "failed"
        return "suspended" if errors else "completed"

    async def _load(self) -> None:
        checkpointer = self.run.checkpointer
        if checkpointer is None:
            return
        saved = await checkpointer.load(self.execution_id)
        if saved is not None:
            self.saved = saved.finished
        await checkpointer.execution_started(
            self.execution_id, graph=self.graph.key, input=self.input
        )

    async def _finish(self, status: GraphStatus, cancelled: bool) -> GraphResult:
        run = self.run
        if self.parent is None:
            run.started = False  # no abort may cancel the root from here on
            if cancelled:  # cancelled from outside: the fire-and-forget work goes too
                for task in list(run.background):
                    task.cancel()
        output = self._output() if status != "aborted" else None
        result = GraphResult(
            graph=self.graph.key,
            graph_id=self.graph_id,
            execution_id=self.execution_id,
            status=status,
            output=output,
            outputs={k: v[1] for k, v in self.latest.items()},
            errors=dict(self.errors),
            rounds=self.round + (status == "aborted"),
            stopped=tuple(self.stopped),
        )
        sink = run.sink
        if sink is not None:
            if status in ("failed", "aborted"):
                error = run.aborted or "; ".join(f"{k}: {e}" for k, e in self.errors.items())
                sink(GraphError(**self._where(), key=self.graph.key, error=error))
            sink(
                GraphAfter(
                    **self._where(),
                    key=self.graph.key,
                    status=status,
                    output=output,
                    rounds=result.rounds,
                )
            )
        try:
            await run.governor.end_scope(graph=self.graph_id)
            if run.checkpointer is not None:
                await run.checkpointer.execution_ended(
                    self.execution_id, status=status, output=output
                )
        finally:
            if cancelled:
                task = asyncio.current_task()
                if self.parent is None and run.aborted is not None and task is run.main:
                    assert task is not None
                    task.uncancel()  # the abort we asked for ends here, with a result
                else:
                    raise asyncio.CancelledError
        return result

    def _output(self) -> object:
        graph, latest = self.graph, self.latest
        if graph.output is not None:
            entry = latest.get(graph.output)
            return None if entry is None else entry[1]
        sinks = self.topology.sinks
        if len(sinks) == 1:
            entry = latest.get(sinks[0])
            return None if entry is None else entry[1]
        if sinks:
            return {k: latest[k][1] for k in sinks if k in latest}
        return next(reversed(latest.values()))[1] if latest else None

    def _where(self) -> GraphWhere:
        return {
            "invocation_id": self.run.invocation_id,
            "graph_id": self.graph_id,
            "ancestry": self.ancestry,
        }

    # -- one round ----------------------------------------------------------------------

    async def _round(self, seeds: Inbox) -> Inbox:
        topology = self.topology
        region = topology.region(seeds)
        self._waits = dict(region.waits)
        self._inbox = seeds
        self._seeds = frozenset(seeds)
        self._next = {}
        ready = self._ready
        ready.extend(k for k in topology.keys if k in seeds and not self._waits[k])
        while ready:
            if len(ready) == 1:
                await self._node(ready.pop())
                continue
            async with asyncio.TaskGroup() as group:
                self._group = group
                while ready:
                    self._start(ready.pop(0))
            self._group = None
        checkpointer = self.run.checkpointer
        if checkpointer is not None:
            delta, self._delta = self._delta, {}
            step = Step(
                round=self.round,
                finished=delta,
                frontier=tuple(self._next),
                counters=await self.run.governor.snapshot_state(),
            )
            await checkpointer.step_finished(self.execution_id, step)
        return self._next

    def _start(self, key: str) -> None:
        if self._running >= self.graph.max_concurrency:
            self._queue.append(key)
            return
        self._running += 1
        group = self._group
        assert group is not None
        group.create_task(self._task(key))

    async def _task(self, key: str) -> None:
        try:
            await self._node(key)
        finally:
            self._running -= 1
            if self._queue:
                self._start(self._queue.popleft())

    def _became_ready(self, key: str) -> None:
        if self._group is None:
            self._ready.append(key)
        else:
            self._start(key)

    def _settle(self, key: str, fired: Fired | None, output: object) -> None:
        """A node ran (``fired``: the edges its output took) or was skipped (``None``)."""
        topology = self.topology
        inbox, waits = self._inbox, self._waits
        if fired is not None:
            for target, slot in fired[1]:  # back edges: the next round starts there
                self._next.setdefault(target, {})[slot] = output
        todo: list[tuple[str, Fired | None]] = [(key, fired)]
        while todo:
            source, taken = todo.pop()
            if taken is not None:
                for target, slot in taken[0]:
                    inbox.setdefault(target, {})[slot] = output
            for target, _, _ in topology.forward[source]:
                left = waits[target] - 1
                waits[target] = left
                if not left:
                    if target in inbox:
                        self._became_ready(target)
                    else:
                        todo.append((target, None))  # no edge reached it: skipped

    # -- one node -----------------------------------------------------------------------

    def inputs_of(self, key: str) -> Inputs:
        """The outputs that reached ``key`` this round, in edge order."""
        box = self._inbox.pop(key, None)
        if not box:
            return []
        if len(box) == 1:
            return list(box.values())
        return [box[slot] for slot in sorted(box)]

    async def _node(self, key: str) -> None:
        spec = self.graph.specs[key]
        inputs = self.inputs_of(key)
        path = f"{key}@{self.round}"
        saved = self.saved
        if saved is not None and path in saved:
            self._done(key, (), saved[path])
            self._settle(key, self._fired(key, saved[path]), saved[path])
            return
        if self.round and key in self._seeds and not await self._may_repeat(key, inputs):
            self._settle(key, None, None)
            return
        run = self.run
        sink = run.sink
        node_id = f"{self.graph_id}/{path}"
        if sink is not None:
            sink(
                NodeBefore(
                    **self._where(),
                    node_key=key,
                    node_id=node_id,
                    round=self.round,
                    inputs=tuple(inputs),
                )
            )
        try:
            layers, output = await self._body(spec, inputs, node_id)
            fired = self._fired(key, output)
        except asyncio.CancelledError:
            if sink is not None and run.aborted is not None:
                sink(self._error(key, node_id, Aborted(run.aborted), "aborted"))
            raise
        except Exception as exc:
            self.errors[key] = exc
            if sink is not None:
                sink(self._error(key, node_id, exc, _kind(exc)))
            self._settle(key, None, None)
            return
        self._done(key, layers, output)
        if run.checkpointer is not None:
            self._delta[path] = output
            await run.checkpointer.node_finished(self.execution_id, path, self.round, output)
        if sink is not None:
            sink(
                NodeAfter(
                    **self._where(), node_key=key, node_id=node_id, round=self.round, output=output
                )
            )
        self._settle(key, fired, output)

    def _done(self, key: str, layers: tuple[Layer, ...], output: object) -> None:
        latest = self.latest
        latest.pop(key, None)  # keep finishing order
        latest[key] = (layers, output)
        self.runs[key] = self.runs.get(key, 0) + 1
        self.errors.pop(key, None)

    def _fired(self, key: str, output: object) -> Fired:
        topology = self.topology
        if not topology.forward[key] and not topology.back[key]:
            return _NOWHERE
        forward = [
            (t, slot) for t, slot, when in topology.forward[key] if when is None or when(output)
        ]
        back = [(t, slot) for t, slot, when in topology.back[key] if when is None or when(output)]
        return forward, back

    def _error(self, key: str, node_id: str, exc: BaseException, kind: NodeErrorKind) -> NodeError:
        return NodeError(
            **self._where(),
            node_key=key,
            node_id=node_id,
            round=self.round,
            error=f"{type(exc).__name__}: {exc}",
            kind=kind,
            exception=exc,
        )

    async def _body(
        self, spec: NodeSpec, inputs: Inputs, node_id: str
    ) -> tuple[tuple[Layer, ...], object]:
        fn = spec.fn
        while True:
            try:
                if fn is not None:
                    arity = spec.arity
                    if arity == 1:
                        output = fn(inputs)
                    elif arity == 2:
                        output = fn(inputs, self.context(spec.key, node_id, inputs))
                    else:
                        output = fn()
                    if inspect.isawaitable(output):  # an async function's coroutine
                        output = await output
                    return (), output
                assert spec.invoke is not None
                return await spec.invoke(inputs, self.context(spec.key, node_id, inputs))
            except NodeInterrupt as asked:
                substitute = await self.run.governor.interrupt(
                    f"node:{spec.key}",
                    asked.payload,
                    reason=asked.reason,
                    input=inputs,
                    node=spec.key,
                    graph=self.graph_id,
                    invocation=self.run.invocation_id,
                    node_id=node_id,
                    ancestry=self.ancestry,
                )
                if substitute is not None:
                    return (), substitute.value

    def context(self, key: str, node_id: str, inputs: Inputs) -> NodeContext:
        """The ``ctx`` a node gets."""
        return NodeContext(self, key, node_id, inputs)

    async def _may_repeat(self, key: str, inputs: Inputs) -> bool:
        """Ask the governor whether ``key`` may run once more (a cycle's next round)."""
        earlier = self.runs.get(key, 0)
        try:
            await self.run.governor.check(
                f"node:{key}",
                input=inputs,
                node=key,
                graph=self.graph_id,
                invocation=self.run.invocation_id,
                node_id=f"{self.graph_id}/{key}@{self.round}",
                ancestry=(*self.ancestry, *(key,) * earlier),
                history=tuple(self.latest),
            )
        except (Denied, PolicyExceeded):
            self.stopped.append(key)
            return False
        except InterruptRequired as exc:
            self.errors[key] = exc
            return False
        return True


def _kind(exc: BaseException) -> NodeErrorKind:
    if isinstance(exc, Suspended | InterruptRequired):
        return "suspended"
    if isinstance(exc, Denied):
        return "denied"
    if isinstance(exc, Aborted):
        return "aborted"
    return "error"
