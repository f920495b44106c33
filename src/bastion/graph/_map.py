"""Map nodes: run a sub-graph once per element of an upstream list.

The elements run as nested executions (``<execution>/<node>@<round>[<index>]``) below the
map node, at most ``max_concurrency`` at once, on as many worker coroutines (not one task
per element); the outputs come back in input order. The first failed element fails the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from bastion.core import UserError

from ._nodes import Inputs, Layer, NodeSpec, check_key

if TYPE_CHECKING:
    from bastion.governance import Policy

    from ._context import NodeContext
    from ._graph import Graph

__all__ = ["map_spec", "select_items"]

Items = str | Callable[[Inputs], Sequence[object]] | None


def select_items(key: str, items: Items, inputs: Inputs) -> Sequence[object]:
    """The list a map node iterates, from its inputs.

    Raises:
        UserError: The inputs hold no list where ``items`` says.
    """
    if callable(items):
        found: object = items(inputs)
    else:
        first = inputs[0] if inputs else None
        if items is None:
            found = first
        elif isinstance(first, Mapping) and items in first:
            found = cast("Mapping[str, object]", first)[items]
        else:
            raise UserError(f"Map node {key!r}: its first input has no key {items!r}: {first!r}.")
    if not isinstance(found, Sequence) or isinstance(found, str | bytes):
        raise UserError(f"Map node {key!r} needs a list to map over; got {found!r}.")
    return cast("Sequence[object]", found)  # isinstance leaves its element type unknown


def map_spec(
    key: str, graph: Graph, items: Items, max_concurrency: int, policies: Sequence[Policy]
) -> NodeSpec:
    """The node spec of a map node."""
    check_key("node", key)
    if max_concurrency < 1:
        raise UserError(f"Map node {key!r}: max_concurrency must be >= 1, got {max_concurrency}.")
    graph.compile()

    async def invoke(inputs: Inputs, ctx: NodeContext) -> tuple[tuple[Layer, ...], object]:
        elements = select_items(key, items, inputs)
        return (), await ctx.map(graph, elements, max_concurrency=max_concurrency)

    def count(inputs: Inputs) -> int:
        return len(select_items(key, items, inputs))

    return NodeSpec(
        key=key, kind="map", invoke=invoke, policies=tuple(policies), target=graph, count=count
    )
