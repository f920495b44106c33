"""Serve a graph as an MCP tool: input from its entry, output its result, nodes as progress.

``graph_server(graph)`` returns an SDK ``MCPServer`` with one tool (named after the graph).
Its ``input`` argument takes the element type of the entry function's ``inputs`` list
(``def entry(inputs: list[Topic])`` → a ``Topic`` object; an agent entry → a string; else
any JSON value); its result is the graph's output. Each node that starts, finishes or fails
is an MCP progress notification. An execution that suspends answers with an error result
naming its execution id, what it waits for and how to resume it.
"""

from __future__ import annotations

import collections.abc
import inspect
import shlex
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bastion.core import UserError

from ._signals import NodeAfter, NodeBefore, NodeError
from ._store_checkpointer import StoreCheckpointer

if TYPE_CHECKING:
    from mcp.server import MCPServer as SDKServer

    from ._checkpoint import Checkpointer
    from ._graph import Graph
    from ._result import GraphResult

__all__ = ["entry_type", "graph_server", "output_type"]

_LISTS = (list, collections.abc.Sequence, tuple)


def _first_parameter(fn: Callable[..., object]) -> object:
    try:
        hints = typing.get_type_hints(fn)
        first = next(iter(inspect.signature(fn).parameters), None)
    except (NameError, TypeError, ValueError):
        return Any
    return hints.get(first, Any) if first is not None else Any


def entry_type(graph: Graph) -> Any:
    """The type of the graph's ``input``, read from its single entry (``Any`` if unknown)."""
    entries = graph.compile().entries
    if len(entries) != 1:
        return Any
    spec = graph.specs[entries[0]]
    if spec.kind == "agent":
        return str
    if spec.kind != "function" or spec.fn is None or spec.arity == 0:
        return Any
    hint = _first_parameter(spec.fn)
    args = typing.get_args(hint)
    if typing.get_origin(hint) in _LISTS and len(args) == 1 and args[0] is not Ellipsis:
        return args[0]
    return Any


def output_type(graph: Graph) -> Any:
    """The type of the graph's output: its output function's return type (``Any`` if unknown)."""
    topology = graph.compile()
    key = graph.output or (topology.sinks[0] if len(topology.sinks) == 1 else None)
    spec = graph.specs.get(key) if key is not None else None
    if spec is None or spec.kind != "function" or spec.fn is None:
        return Any
    try:
        hint = typing.get_type_hints(spec.fn).get("return", Any)
    except (NameError, TypeError):
        return Any
    origin = typing.get_origin(hint)
    if origin is collections.abc.Awaitable or origin is collections.abc.Coroutine:
        return Any
    return hint


def _progress(signal: object) -> str | None:
    match signal:
        case NodeBefore(node_key=key):
            return f"{key} started"
        case NodeAfter(node_key=key):
            return f"{key} finished"
        case NodeError(node_key=key, kind="suspended"):
            return f"{key} waits for a decision"
        case NodeError(node_key=key, error=error):
            return f"{key} failed: {error}"
        case _:
            return None


async def _suspended(
    checkpointer: object, result: GraphResult, source: str | None, store: str | None
) -> str:
    graph = result.graph
    head = f"Graph {graph!r} suspended: execution {result.execution_id} waits for a decision"
    if not isinstance(checkpointer, StoreCheckpointer):
        nodes = ", ".join(result.errors) or "a node"
        return f"{head} ({nodes}); it has no StoreCheckpointer, so it cannot be resumed."
    record = await checkpointer.record(result.execution_id)
    waiting = [
        f"- {p.get('id', '')} (node {p.get('node', '')}): "
        f"{p.get('question') or p.get('reason') or p.get('kind', '')}"
        for p in record.pending
    ]
    command = [
        "bastion",
        "graph",
        "resume",
        result.execution_id,
        "--graph",
        source or "MODULE:GRAPH",
    ]
    command += ["--store", store] if store is not None else []
    command += [part for p in record.pending for part in ("--approve", str(p.get("id", "")))]
    return "\n".join(
        [
            f"{head}:",
            *waiting,
            "Resume it with the same store: " + shlex.join(command),
            "(or --deny ID, --value ID=JSON; in Python "
            f"await graph.resume({result.execution_id!r}, directive)).",
        ]
    )


def graph_server(
    graph: Graph,
    *,
    tool_name: str | None = None,
    source: str | None = None,
    store: str | None = None,
) -> SDKServer:
    """An SDK ``MCPServer`` exposing ``graph`` as one tool.

    Args:
        graph: The graph (its checkpointer keeps suspended executions resumable).
        tool_name: The tool's name (default: the graph's key).
        source: Where the graph was loaded from (``module:attr``), for the resume command.
        store: Checkpoint executions into this store (URL) instead of the graph's own
            checkpointer, so a suspended one can be resumed from any process.

    Raises:
        UserError: The graph is invalid, or the tool name is not a valid MCP tool name.
    """
    import re

    from mcp.server import MCPServer as SDKServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic_core import to_jsonable_python

    name = tool_name or graph.key
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name):
        raise UserError(f"Invalid MCP tool name {name!r}: use 1-128 letters, digits, '_-.'.")
    accepts, returns = entry_type(graph), output_type(graph)
    description = f"Run the graph {graph.key!r} on input; returns its output."
    if store is not None:
        StoreCheckpointer(store)  # a URL no backend understands fails here, not per call
    server = SDKServer(graph.key, log_level="WARNING")

    async def run_graph(input: object, ctx: Context) -> object:
        if store is None:
            return await _call(graph.checkpointer, input, ctx)
        checkpointer = StoreCheckpointer(store)  # one per call: closed when the call ends
        try:
            return await _call(checkpointer, input, ctx)
        finally:
            await checkpointer.aclose()

    async def _call(checkpointer: Checkpointer | None, input: object, ctx: Context) -> object:
        stream = graph.stream(input, checkpointer=checkpointer)
        steps = 0
        async for signal in stream:
            message = _progress(signal)
            if message is not None:
                steps += 1
                await ctx.report_progress(steps, None, message)
        result = stream.result
        assert result is not None  # the stream was iterated to its end
        if result.status == "completed":
            return to_jsonable_python(result.output) if returns is Any else result.output
        if result.status == "suspended":
            raise ToolError(await _suspended(checkpointer, result, source, store))
        detail = "; ".join(f"{k}: {e}" for k, e in result.errors.items()) or result.status
        raise ToolError(
            f"Graph {graph.key!r} execution {result.execution_id} {result.status}: {detail}"
        )

    run_graph.__annotations__ = {"input": accepts, "ctx": Context, "return": returns}
    server.add_tool(run_graph, name=name, description=description)
    return server
