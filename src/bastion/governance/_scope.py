"""Who acts, where, and on what: everything the governor knows about an action but its key.

An :class:`ActionScope` travels with an action through policy resolution, limit checks,
interrupts and signals. It is built only when an action needs more than the fast path (a
policy to ask, a limit near its max, an interrupt), so a routine allowed action builds none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._policy import PolicyAction

__all__ = ["ActionScope"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionScope:
    """The context of one governed action.

    Attributes:
        node: The acting node (agent) name.
        graph: The graph execution id (the scope of ``graph`` windows).
        invocation: The invocation (run) id (the scope of ``invocation`` windows).
        node_id: The node execution id.
        ancestry: Node keys from the root to the acting node's parent.
        history: Keys done before, for policies that look back.
        target: The node this action would start (spawn, handoff).
        input: What the action works on (given to custom policies).
    """

    node: str = ""
    graph: str = ""
    invocation: str = ""
    node_id: str = ""
    ancestry: Sequence[str] = ()
    history: Sequence[str] = ()
    target: str | None = None
    input: Any = None

    def signal_fields(self, key: str, now: float) -> dict[str, Any]:
        """The fields every signal about this action carries."""
        return {
            "key": key,
            "node": self.node,
            "graph_id": self.graph,
            "invocation_id": self.invocation,
            "node_id": self.node_id,
            "ancestry": tuple(self.ancestry),
            "timestamp": now,
        }

    def policy_action(self, key: str, now: float, action_id: str) -> PolicyAction:
        """The :class:`PolicyAction` custom policies judge."""
        return PolicyAction(
            node=self.node,
            oracle=key,
            input=self.input,
            history=self.history,
            ancestry=self.ancestry,
            target=self.target,
            timestamp=now,
            invocation_id=self.invocation,
            graph_id=self.graph,
            node_id=self.node_id,
            oracle_id=action_id,
        )
