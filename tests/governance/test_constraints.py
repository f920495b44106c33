"""Constraints as policy factories: max_cycles, max_depth, max_loop."""

from __future__ import annotations

import pytest

from bastion.governance import Denied, Governor, max_cycles, max_depth, max_loop
from bastion.testing import VirtualClock


async def test_max_cycles_zero_forbids_a_node_inside_itself() -> None:
    # covers L-25
    gov = Governor(policies=[max_cycles(0)], clock=VirtualClock())
    assert (
        await gov.exec("agent:writer", lambda: "ok", node="writer", ancestry=("planner",)) == "ok"
    )
    with pytest.raises(Denied, match=r"max_cycles\(0\): 'writer' already appears 1 time"):
        await gov.exec("agent:writer", lambda: "x", node="writer", ancestry=("planner", "writer"))
    # Spawning itself as a target is a cycle too.
    with pytest.raises(Denied, match="max_cycles"):
        await gov.exec("agent:writer", lambda: "x", node="writer", target="writer")


async def test_max_depth() -> None:
    # covers L-25
    gov = Governor(policies=[max_depth(2)], clock=VirtualClock())
    await gov.exec("agent:c", lambda: 1, node="c", ancestry=("a", "b"))
    with pytest.raises(Denied, match=r"max_depth\(2\): depth 3"):
        await gov.exec("agent:d", lambda: 1, node="d", ancestry=("a", "b", "c"))


async def test_max_loop_at_node_level_overrides_global_max_cycles() -> None:
    # covers L-25
    gov = Governor(
        policies=[max_cycles(0)],
        node_policies={"critic": [max_loop("critic", 2)]},
        clock=VirtualClock(),
    )
    for depth in range(3):  # critic looped 0, 1, 2 times: allowed (stops bubbling)
        await gov.exec("llm:x", lambda: 1, node="critic", ancestry=("critic",) * depth)
    with pytest.raises(Denied, match=r"max_loop\('critic', 2\)"):
        await gov.exec("llm:x", lambda: 1, node="critic", ancestry=("critic",) * 3)
    # Other nodes stay under the global max_cycles(0).
    with pytest.raises(Denied, match="max_cycles"):
        await gov.exec("llm:x", lambda: 1, node="writer", ancestry=("writer",))
