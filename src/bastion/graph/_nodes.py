"""What a node is: a function, a :class:`Node` (load prompt → execute), an agent, a map.

:func:`as_spec` turns what ``Graph.add_node`` receives into a :class:`NodeSpec`, the one
shape the scheduler runs: ``await spec.invoke(inputs, ctx)`` returns the node's layers and
output. A plain function's arity is read once, here, so the hot path makes no inspection.
"""

from __future__ import annotations

import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast

from bastion.agent import Agent
from bastion.core import UserError

NodeFn: TypeAlias = Callable[..., object]
"""A node function: called as ``fn()``, ``fn(inputs)`` or ``fn(inputs, ctx)`` by its arity.

It returns the output, or an awaitable of it. The arity is read (and checked) by :func:`as_spec`.
"""
Inputs: TypeAlias = list[object]
"""A node's inputs: the outputs of the predecessors that reached it, in edge order."""

_DepsT = TypeVar("_DepsT")
_OutputT = TypeVar("_OutputT")

if TYPE_CHECKING:
    from bastion.governance import Policy

    from ._context import NodeContext

    NodeLike: TypeAlias = (
        Callable[[list[Any]], object]
        | Callable[[list[Any], NodeContext], object]
        | Callable[[], object]
        | "Node"
        | Agent[Any, Any]
    )
    """What ``Graph.add_node`` takes: a function of the inputs (and ``ctx``), a Node, an Agent.

    A function declares the types of its inputs (the predecessors' outputs) itself, so they
    are open here; its output may be anything (or an awaitable of it).
    """

__all__ = [
    "Inputs",
    "Layer",
    "Node",
    "NodeFn",
    "NodeLike",
    "NodeResult",
    "NodeSpec",
    "Suspended",
    "as_spec",
    "check_key",
]

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def check_key(what: str, key: str) -> str:
    """Return ``key`` when it is a valid node or graph key.

    Raises:
        UserError: For anything but letters, digits, ``_``, ``.`` and ``-`` (starting with
            a letter or ``_``): keys become oracle keys and ids.
    """
    if not isinstance(key, str) or not _KEY.match(key):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"Invalid {what} key {key!r}: use letters, digits, '_', '.' and '-', starting "
            "with a letter or '_' (e.g. 'review_draft')."
        )
    return key


@dataclass(frozen=True, slots=True)
class Layer:
    """One named part of a node's prompt (system text, retrieved documents, examples …)."""

    name: str
    content: object


@dataclass(frozen=True, slots=True)
class NodeResult:
    """What a :class:`Node` may return from ``execute``: its output (and nothing else yet)."""

    output: object


class Suspended(Exception):
    """Raised by a node that must wait for a human (an agent run awaiting approval).

    The node ends with ``node.error`` of kind ``suspended`` and the execution with status
    ``suspended``; ``detail`` is what it waits on (e.g. the agent's ``RunState``).
    """

    def __init__(self, reason: str, *, detail: object = None) -> None:
        super().__init__(reason)
        self.detail = detail


class Node(ABC):
    """A node in two phases, ``load_prompt`` then ``execute``. Subclass it.

    ``load_prompt`` turns the node's inputs into prompt :class:`Layer` objects (default: none);
    ``execute`` works on them and returns the output (or a :class:`NodeResult`). Both may be
    ``async``. A later node reads both through ``ctx.node(key)``.
    """

    def load_prompt(
        self, inputs: Inputs, ctx: NodeContext
    ) -> Sequence[Layer] | Awaitable[Sequence[Layer]]:
        """Return the prompt layers for ``inputs`` (the predecessors' outputs)."""
        del inputs, ctx
        return ()

    @abstractmethod
    def execute(self, layers: Sequence[Layer], ctx: NodeContext) -> object:
        """Do the node's work and return its output (``ctx.inputs`` holds the inputs)."""


Kind = Literal["function", "node", "agent", "map"]
Invoke = Callable[[Inputs, "NodeContext"], Awaitable[tuple[tuple[Layer, ...], object]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSpec:
    """One node as the scheduler runs it.

    Attributes:
        key: The node's key.
        kind: What it wraps.
        fn: For a plain function: the function (called as ``fn(*args)``).
        arity: For a plain function: 0 (no argument), 1 (inputs) or 2 (inputs, ctx).
        is_async: For a plain function: whether it returns an awaitable.
        invoke: For the other kinds: ``await invoke(inputs, ctx)`` → (layers, output).
        policies: Node-level policies.
        ref: The registry name it came from (manifests), if any.
        target: What it wraps (the function, Node, Agent or mapped graph), for diagrams.
        count: For a map node: how many elements it runs on for given inputs (progress).
    """

    key: str
    kind: Kind
    fn: NodeFn | None = None
    arity: int = 1
    is_async: bool = False
    invoke: Invoke | None = None
    policies: tuple[Policy, ...] = ()
    ref: str = ""
    target: object = field(default=None, repr=False)
    count: Callable[[Inputs], int] | None = field(default=None, repr=False)


def _arity(key: str, fn: NodeFn) -> int:
    code = getattr(fn, "__code__", None)
    if inspect.isfunction(fn) and code is not None and not code.co_flags & inspect.CO_VARARGS:
        # A plain function: read its code object (inspect.signature costs ~40 µs a node).
        required = code.co_argcount - len(fn.__defaults__ or ())
        if required <= 2:
            return required
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it the inputs
        return 1
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return 2
    if len(positional) > 2:
        raise UserError(
            f"Node {key!r}: a node function takes (inputs) or (inputs, ctx); "
            f"{getattr(fn, '__name__', fn)!r} wants {len(positional)} arguments."
        )
    return len(positional)


def _node_invoke(node: Node) -> Invoke:
    async def invoke(inputs: Inputs, ctx: NodeContext) -> tuple[tuple[Layer, ...], object]:
        loaded = node.load_prompt(inputs, ctx)
        if inspect.isawaitable(loaded):
            loaded = await loaded
        layers = tuple(loaded)
        output = node.execute(layers, ctx)
        if inspect.isawaitable(output):
            output = await output
        if isinstance(output, NodeResult):
            output = output.output
        return layers, output

    return invoke


def _agent_invoke(agent: Agent[_DepsT, _OutputT], prompt: Callable[[Inputs], str] | None) -> Invoke:
    async def invoke(inputs: Inputs, ctx: NodeContext) -> tuple[tuple[Layer, ...], object]:
        text = prompt(inputs) if prompt is not None else agent_prompt(inputs)
        return (Layer("prompt", text),), await ctx.run_agent(agent, text)

    return invoke


def agent_prompt(inputs: Sequence[object]) -> str:
    """The text an agent node gets by default: its inputs, one paragraph each."""
    return "\n\n".join(x if isinstance(x, str) else repr(x) for x in inputs)


def as_spec(
    key: str,
    target: NodeLike,
    *,
    policies: Sequence[Policy] = (),
    prompt: Callable[[Inputs], str] | None = None,
    ref: str = "",
) -> NodeSpec:
    """Wrap a function, :class:`Node` or ``Agent`` as the node ``key``.

    Raises:
        UserError: For anything else, or a function with more than two arguments.
    """
    check_key("node", key)
    if isinstance(target, Agent):
        agent = cast("Agent[Any, Any]", target)  # isinstance leaves its parameters unknown
        return NodeSpec(
            key=key,
            kind="agent",
            invoke=_agent_invoke(agent, prompt),
            policies=tuple(policies),
            ref=ref,
            target=agent,
        )
    if prompt is not None:
        raise UserError(f"Node {key!r}: prompt= is for agent nodes only.")
    if isinstance(target, Node):
        return NodeSpec(
            key=key,
            kind="node",
            invoke=_node_invoke(target),
            policies=tuple(policies),
            ref=ref,
            target=target,
        )
    if callable(target):
        return NodeSpec(
            key=key,
            kind="function",
            fn=target,
            arity=_arity(key, target),
            is_async=inspect.iscoroutinefunction(target),
            policies=tuple(policies),
            ref=ref,
            target=target,
        )
    raise UserError(
        f"Node {key!r}: {target!r} is not a node; give a function, a Node subclass "
        "instance, an Agent, or use add_map() for a mapped sub-graph."
    )
