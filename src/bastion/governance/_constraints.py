"""Structural constraints as policy factories: cycles, depth and loops.

They read ``PolicyAction.ancestry`` (node keys from the root to the acting node's parent)
and ``target`` (the node an action would start, for spawns and handoffs). Put them at any
level: global, graph or node.
"""

from __future__ import annotations

from ._policy import CustomPolicy, PolicyAction, PolicyResult, allow, deny

__all__ = ["max_cycles", "max_depth", "max_loop"]


def _subject(action: PolicyAction) -> str:
    return action.target if action.target is not None else action.node


def max_cycles(n: int) -> CustomPolicy:
    """Deny when a node would appear in its own ancestry more than ``n`` times.

    ``max_cycles(0)`` forbids any node from running inside itself.
    """

    def policy(action: PolicyAction) -> PolicyResult:
        subject = _subject(action)
        seen = sum(1 for entry in action.ancestry if entry == subject)
        if action.target is not None and action.node == subject:
            seen += 1
        if seen > n:
            return deny(f"max_cycles({n}): {subject!r} already appears {seen} time(s) above.")
        return allow()

    return CustomPolicy(fn=policy, id=f"max_cycles({n})")


def max_depth(n: int) -> CustomPolicy:
    """Deny an action whose node would sit deeper than ``n`` levels below the root."""

    def policy(action: PolicyAction) -> PolicyResult:
        depth = len(action.ancestry) + (1 if action.target is not None and action.node else 0)
        if depth > n:
            return deny(f"max_depth({n}): depth {depth} is too deep.")
        return allow()

    return CustomPolicy(fn=policy, id=f"max_depth({n})")


def max_loop(node: str, n: int) -> CustomPolicy:
    """Let ``node`` repeat up to ``n`` times in its ancestry, overriding stricter policies above.

    Within the bound the result is ``allow(stop=True)``, so a global ``max_cycles(0)`` is
    not consulted for this node; past it, ``deny``. Other nodes are left to other policies.
    """

    def policy(action: PolicyAction) -> PolicyResult:
        subject = _subject(action)
        if subject != node:
            return allow()
        seen = sum(1 for entry in action.ancestry if entry == subject)
        if action.target is not None and action.node == subject:
            seen += 1
        if seen > n:
            return deny(f"max_loop({node!r}, {n}): {node!r} looped {seen} times.")
        return allow(stop=True)

    return CustomPolicy(fn=policy, id=f"max_loop({node!r}, {n})")
