"""``ctx``: what a running node can do — governed actions, model loops, nested graphs.

Every action goes through the run's governor with the node's levels (global → graph →
node → oracle key) and its ids. ``ctx.oracle.llm`` runs the agent loop (an ``Agent``
derived for the call, named after the node, on the same governor): there is one model →
tools → model loop in Bastion, not a second one here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, overload

from bastion.agent import Agent, GovernanceOptions
from bastion.agent._scope import ANCESTRY, GRAPH, INVOCATION
from bastion.core import RunFailed, UserError
from bastion.governance import Denied, PolicyExceeded

from ._agent_resume import resumed_agent, suspend_agent
from ._nodes import Inputs, Suspended, agent_prompt
from ._result import Aborted, GraphResult
from ._signals import AgentEventSignal, CustomSignal, NodeWhere

if TYPE_CHECKING:
    from bastion.agent import Output
    from bastion.agent._extensions import ToolFactory
    from bastion.core import Model
    from bastion.governance import CounterView
    from bastion.tools import Tool, ToolSource

    from ._execution import Execution
    from ._graph import Graph
    from ._nodes import Layer

__all__ = ["NodeContext", "NodeView", "OracleCalls"]

_T = TypeVar("_T")
_DepsT = TypeVar("_DepsT")
_OutputT = TypeVar("_OutputT")


@dataclass(frozen=True, slots=True)
class NodeView:
    """What ``ctx.node(key)`` returns: an executed node's prompt layers and output."""

    layers: tuple[Layer, ...]
    output: object


class NodeContext:
    """The runtime surface of one running node (``ctx``).

    Attributes:
        key: The node's key.
        node_id: This run of the node (unique in the invocation).
        graph_id: The graph execution (``<graph key>#<execution id>``).
        invocation_id: The invocation (the root execution and everything it spawned).
        ancestry: Node keys from the root graph down to the node that spawned this graph.
        inputs: The outputs of the predecessors that reached the node, in edge order.
        round: The round the node runs in (0 unless it is in a cycle).
    """

    __slots__ = ("_above", "_execution", "inputs", "key", "node_id", "oracle")

    def __init__(self, execution: Execution, key: str, node_id: str, inputs: Inputs) -> None:
        self._execution = execution
        self.key = key
        self.node_id = node_id
        self.inputs = inputs
        self.oracle = OracleCalls(self)
        # What policies see above this node: the spawning nodes, then its own earlier runs
        # in this execution (a cycle's rounds), so max_cycles counts loops and nesting.
        earlier = execution.runs.get(key, 0)
        self._above = (*execution.ancestry, *(key,) * earlier) if earlier else execution.ancestry

    @property
    def graph_id(self) -> str:
        return self._execution.graph_id

    @property
    def invocation_id(self) -> str:
        return self._execution.run.invocation_id

    @property
    def ancestry(self) -> tuple[str, ...]:
        return self._execution.ancestry

    @property
    def round(self) -> int:
        return self._execution.round

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the graph's nodes."""
        return tuple(self._execution.graph.specs)

    def is_node(self, key: str) -> bool:
        """Whether ``key`` is a node of this graph."""
        return key in self._execution.graph.specs

    def _alive(self) -> None:
        reason = self._execution.run.aborted
        if reason is not None:
            raise Aborted(reason)

    async def pause(self, payload: object = None, *, reason: str = "") -> object:
        """Wait for a human's decision and return its value (``interrupt`` in LangGraph).

        With an interrupt handler on the governor it decides at once. Without one, the
        node is suspended (and with it the execution, once its other branches settle);
        ``graph.resume(execution_id, Directive(interrupts=[InterruptResolution(id,
        ResultDecision(value=...))]))`` runs the node again from its start, and this call
        then returns ``value`` (``None`` for an approval without a value).

        Raises:
            Denied: The decision denied it (the node fails).
        """
        self._alive()
        execution = self._execution
        decided = await execution.run.governor.interrupt(
            f"node:{self.key}",
            payload,
            reason=reason,
            input=self.inputs,
            node=self.key,
            graph=execution.graph_id,
            invocation=execution.run.invocation_id,
            node_id=self.node_id,
            ancestry=execution.ancestry,
        )
        return decided.value if decided is not None else None

    # -- governed actions -----------------------------------------------------------------

    @overload
    async def exec(self, oracle: str, input: object = None) -> object: ...
    @overload
    async def exec(
        self, oracle: str, input: object = None, *, fn: Callable[[], Awaitable[_T]]
    ) -> _T: ...
    @overload
    async def exec(self, oracle: str, input: object = None, *, fn: Callable[[], _T]) -> _T: ...
    async def exec(
        self, oracle: str, input: object = None, *, fn: Callable[[], object] | None = None
    ) -> object:
        """Run an action on ``oracle`` under its policies.

        The oracle's registered executor runs with ``input``, or ``fn()`` when given (its
        result, awaited when it is awaitable, is returned).

        Raises:
            Aborted: The execution was aborted.
            Denied: A policy or decision refused it.
            PolicyExceeded: A limit is used up.
            UserError: No ``fn`` and no executor registered for ``oracle`` or its ancestors.
        """
        self._alive()
        execution = self._execution
        return await execution.run.governor.exec(
            oracle,
            fn,
            input=input,
            node=self.key,
            graph=execution.graph_id,
            invocation=execution.run.invocation_id,
            node_id=self.node_id,
            ancestry=self._above,
        )

    async def counters(self, oracle: str) -> list[CounterView]:
        """The counters that apply to ``oracle``, its ancestors' first."""
        execution = self._execution
        return await execution.run.governor.counters(
            oracle, graph=execution.graph_id, invocation=execution.run.invocation_id
        )

    def emit(self, name: str, data: Mapping[str, object] | None = None) -> None:
        """Put a custom ``x:<name>`` signal on the stream.

        Raises:
            UserError: When ``name`` does not start with ``x:``.
        """
        if not name.startswith("x:"):
            raise UserError(f"Custom signal names start with 'x:'; got {name!r}.")
        sink = self._execution.run.sink
        if sink is not None:
            sink(CustomSignal(**self._where(), name=name, data=dict(data or {})))

    def _where(self) -> NodeWhere:
        execution = self._execution
        return {
            "node_key": self.key,
            "node_id": self.node_id,
            "invocation_id": execution.run.invocation_id,
            "graph_id": execution.graph_id,
            "ancestry": execution.ancestry,
        }

    # -- earlier nodes --------------------------------------------------------------------

    def node(self, key: str) -> NodeView | None:
        """An executed node's layers and last output, or ``None`` when it has not run yet.

        This graph is searched first, then the graphs that spawned it.
        """
        execution: Execution | None = self._execution
        while execution is not None:
            entry = execution.latest.get(key)
            if entry is not None:
                return NodeView(layers=entry[0], output=entry[1])
            execution = execution.parent
        return None

    # -- nested graphs --------------------------------------------------------------------

    async def check_ancestry(self, target: str) -> str | None:
        """Why starting ``target`` below this node would be refused, or ``None``."""
        try:
            await self._check_spawn(target)
        except (Denied, PolicyExceeded) as exc:
            return str(exc)
        return None

    async def _check_spawn(self, target: str) -> None:
        execution = self._execution
        await execution.run.governor.check(
            f"graph:{target}",
            node=self.key,
            graph=execution.graph_id,
            invocation=execution.run.invocation_id,
            node_id=self.node_id,
            ancestry=self._above,
            target=target,
        )

    async def spawn(self, key: str | Graph, data: object = None) -> GraphResult:
        """Run a nested graph with ``data`` as its input and wait for its result.

        ``key`` is a registered graph's key, a node of this graph, or a ``Graph``.

        Its nodes act below this node (``ancestry``), so ``max_depth`` and ``max_cycles``
        see the nesting; the check happens first, as an action on ``graph:<key>``.

        Raises:
            Aborted: The execution was aborted.
            Denied: A policy refused the nesting.
            UserError: ``key`` names no graph and no node.
        """
        self._alive()
        child = await self._child(key, data)
        return await child.execute()

    async def spawn_nowait(self, key: str | Graph, data: object = None) -> None:
        """Start a nested graph and return at once (fire-and-forget).

        The root execution waits for it before it ends: it is never orphaned.

        Raises:
            Aborted: The execution was aborted.
            Denied: A policy refused the nesting.
        """
        self._alive()
        child = await self._child(key, data)
        self._execution.run.spawn_background(child.execute())

    async def _child(self, key: str | Graph, data: object) -> Execution:
        execution = self._execution
        graph = execution.graph.resolve(key)
        await self._check_spawn(graph.key)
        count = execution.spawned = execution.spawned + 1
        return execution.child(
            graph,
            f"{execution.execution_id}/{self.node_id.rpartition('/')[2]}~{count}",
            data,
            below=self.key,
        )

    async def map(
        self, graph: Graph, items: Sequence[object], *, max_concurrency: int = 8
    ) -> list[object]:
        """Run ``graph`` once per element of ``items`` and return the outputs in order.

        Each element is its execution's input; at most ``max_concurrency`` run at once.

        Raises:
            Aborted: The execution was aborted.
            RunFailed: An element's execution did not complete (the first such, by index).
        """
        self._alive()
        execution = self._execution
        base = f"{execution.execution_id}/{self.node_id.rpartition('/')[2]}"
        results: list[GraphResult | None] = [None] * len(items)

        async def one(index: int) -> None:
            child = execution.child(graph, f"{base}[{index}]", items[index], below=self.key)
            results[index] = await child.execute()

        workers = min(len(items), max_concurrency)
        if workers == 1:
            for index in range(len(items)):
                await one(index)
        elif workers > 1:
            indexes = iter(range(len(items)))

            async def worker() -> None:
                for index in indexes:
                    await one(index)

            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker())
        outputs: list[object] = []
        for result in results:
            assert result is not None
            outputs.append(result.raise_for_status().output)
        return outputs

    # -- agents ---------------------------------------------------------------------------

    async def run_agent(self, agent: Agent[_DepsT, _OutputT], prompt: str) -> _OutputT | None:
        """Run ``agent`` on ``prompt`` as this node's work and return its output.

        The run acts in this invocation below this node's ancestry, so a governor the
        agent shares with the graph counts it with everything else; with ``Graph.stream``
        its events join the stream.

        Raises:
            Aborted: The execution was aborted.
            Suspended: The run waits for approvals (``detail`` is its ``RunState``).
            RunFailed: The run failed.
        """
        self._alive()
        execution = self._execution
        metadata = {
            INVOCATION: execution.run.invocation_id,
            ANCESTRY: list(execution.ancestry),
            GRAPH: execution.graph_id,
        }
        resumed = resumed_agent(execution, self.node_id)  # its run, saved when it suspended
        sink = execution.run.sink
        if sink is None:
            if resumed is None:
                result = await agent.run(prompt, metadata=metadata)
            else:
                result = await agent.run(resumed[0], directive=resumed[1])
        else:
            if resumed is None:
                stream = agent.stream(prompt, metadata=metadata)
            else:
                stream = agent.stream(resumed[0], directive=resumed[1])
            async for event in stream:
                if event.type != "governance.signal":  # the graph streams the governor's own
                    sink(AgentEventSignal(**self._where(), event=event))
            result = stream.result
        if result.status == "awaiting_approval":
            if result.state is not None:
                suspend_agent(execution, self.node_id, result.state)
            raise Suspended(f"agent {agent.name!r} awaits approval", detail=result.state)
        if result.status == "stopped":  # e.g. a rounds limit: the node has no answer
            reason = result.stop_reason or "stopped"
            raise RunFailed(
                f"Agent {agent.name!r} stopped before answering ({reason}).",
                code=f"stopped_{reason}",
            )
        return result.raise_for_status().output


class OracleCalls:
    """``ctx.oracle``: governed calls and the model → tools loop for a node."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: NodeContext) -> None:
        self._ctx = ctx

    @overload
    async def call(
        self, oracle: str, fn: Callable[[], Awaitable[_T]], input: object = None
    ) -> _T: ...
    @overload
    async def call(self, oracle: str, fn: Callable[[], _T], input: object = None) -> _T: ...
    async def call(self, oracle: str, fn: Callable[[], object], input: object = None) -> object:
        """Run ``fn()`` (sync or async) as an action on ``oracle``: tracked, checked, timed."""
        return await self._ctx.exec(oracle, input, fn=fn)

    async def llm(
        self,
        prompt: str | None = None,
        *,
        model: Model | str,
        layers: Sequence[Layer] = (),
        instructions: str = "",
        tools: Sequence[Tool | Callable[..., object] | ToolSource | ToolFactory] = (),
        output_type: type[_OutputT] | Output[_OutputT] = str,
        max_steps: int = 50,
    ) -> _OutputT | None:
        """Call the model, run the tools it asks for, loop until it answers; return that.

        The answer is an ``output_type`` instance (text by default).

        The loop is the agent's: an ``Agent`` named after the node on the run's governor,
        so the model calls are actions on ``llm:<provider>:<model>`` and the tool calls on
        ``tool:<name>`` under the node's policies; a ``rounds`` limit bounds its rounds.

        Args:
            prompt: The user message (default: the node's inputs, one paragraph each).
            model: The model (or ``"provider:model"``).
            layers: Prompt layers (from ``load_prompt``): they become the instructions.
            instructions: More instructions, after the layers.
            tools: Tools the model may call.
            output_type: The answer's type.
            max_steps: Model calls at most.
        """
        ctx = self._ctx
        run = ctx._execution.run
        parts = [f"{layer.content}" for layer in layers]
        if instructions:
            parts.append(instructions)
        agent: Agent[None, _OutputT] = Agent(
            ctx.key,
            model=model,
            instructions="\n\n".join(parts),
            tools=list(tools),
            output_type=output_type,
            max_steps=max_steps,
            clock=run.clock,
            governance=GovernanceOptions(governor=run.governor, events="none"),
        )
        return await ctx.run_agent(
            agent, prompt if prompt is not None else agent_prompt(ctx.inputs)
        )
