"""Interrupts, the decisions that resolve them, and the governor's errors.

An :class:`Interrupt` is raised by a breached *mutable* limit or by a policy returning
``interrupt(...)``. A handler (``Governor(handle_interrupt=...)``) answers with one of the
decisions below; without a handler the governor raises :class:`InterruptRequired`, the caller
suspends, and ``Governor.decide(interrupt.id, decision)`` later lets the same action retry.

Errors (all :class:`bastion.core.RunError`)::

    GovernanceError
    ├── Denied               a policy (or a decision) refused the action
    │   └── MutationRefused  a raise past the ceiling, or by someone not allowed to
    ├── PolicyExceeded       a limit is used up; nothing was run
    ├── InterruptRequired    nobody to decide here: suspend, then Governor.decide(...)
    └── ActionTimeout        the action ran longer than its ``timeout`` limit
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from bastion.core import RunError, UserError

__all__ = [
    "ActionTimeout",
    "Denied",
    "DenyDecision",
    "GovernanceError",
    "Interrupt",
    "InterruptDecision",
    "InterruptRequired",
    "MutateDecision",
    "MutationRefused",
    "PolicyExceeded",
    "ResultDecision",
    "RetryDecision",
    "decision_from_dict",
]


@dataclass(kw_only=True, slots=True)
class Interrupt:
    """A paused action waiting for a decision. JSON-serialisable via :meth:`to_dict`.

    Attributes:
        id: Unique id; pass it to ``Governor.decide``.
        kind: ``"limit"`` (a mutable limit was breached) or ``"policy"``.
        action: The oracle key of the paused action.
        oracle: The key owning the breached limit (or the policy's level) .
        node: The node (agent) that acted.
        limit_type: The breached limit's type, for ``kind="limit"``.
        window: The breached limit's window label.
        current: The counter when the limit was checked.
        max: The limit's current maximum.
        proposed: The counter the action would have reached.
        approvers: Who may raise the limit.
        reason: A sentence for humans.
        payload: The policy's payload, for ``kind="policy"``.
    """

    id: str
    kind: Literal["limit", "policy"]
    action: str
    oracle: str
    node: str = ""
    limit_type: str | None = None
    window: str | None = None
    current: float | None = None
    max: float | None = None
    proposed: float | None = None
    approvers: tuple[str, ...] = ()
    reason: str = ""
    payload: Any = None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "id": self.id,
            "kind": self.kind,
            "action": self.action,
            "oracle": self.oracle,
            "node": self.node,
            "limit_type": self.limit_type,
            "window": self.window,
            "current": self.current,
            "max": self.max,
            "proposed": self.proposed,
            "approvers": list(self.approvers),
            "reason": self.reason,
            "payload": self.payload,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interrupt:
        """Rebuild an interrupt from :meth:`to_dict` output."""
        return cls(
            id=str(data["id"]),
            kind=data["kind"],
            action=str(data["action"]),
            oracle=str(data["oracle"]),
            node=str(data.get("node", "")),
            limit_type=data.get("limit_type"),
            window=data.get("window"),
            current=data.get("current"),
            max=data.get("max"),
            proposed=data.get("proposed"),
            approvers=tuple(data.get("approvers", ())),
            reason=str(data.get("reason", "")),
            payload=data.get("payload"),
        )


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Check the action again (something changed outside the governor)."""

    decision: Literal["retry"] = field(default="retry", init=False)


@dataclass(frozen=True, slots=True)
class DenyDecision:
    """Refuse the action with a reason."""

    reason: str
    decision: Literal["deny"] = field(default="deny", init=False)


@dataclass(frozen=True, slots=True)
class ResultDecision:
    """Do not run the action; use ``value`` as its result."""

    value: Any
    decision: Literal["result"] = field(default="result", init=False)


@dataclass(frozen=True, slots=True)
class MutateDecision:
    """Raise (or lower) a limit's max, then retry the action.

    Attributes:
        oracle: The key owning the limit.
        limit_type: The limit's type.
        max: The new maximum.
        window: Which window's limit, when the oracle has several of that type; defaults to
            the breached one.
        approver: Who decides; must be one of the limit's ``mutable`` names. ``None``
            accepts the mutation if any approver's rule accepts it.
    """

    oracle: str
    limit_type: str
    max: float
    window: str | None = None
    approver: str | None = None
    decision: Literal["mutate"] = field(default="mutate", init=False)

    @classmethod
    def raising(cls, limit: Mapping[str, object], to: float) -> MutateDecision:
        """Raise the limit a pending interrupt names to ``to``.

        ``limit`` holds the interrupt's ``oracle``, ``limit_type`` and ``window``.

        Raises:
            UserError: ``limit`` names no oracle or limit type.
        """
        oracle, limit_type, window = (
            limit.get("oracle"),
            limit.get("limit_type"),
            limit.get("window"),
        )
        if not isinstance(oracle, str) or not isinstance(limit_type, str):
            raise UserError(f"Not a limit of a pending interrupt: {dict(limit)!r}.")
        window = window if isinstance(window, str) else None
        return cls(oracle=oracle, limit_type=limit_type, max=to, window=window)


InterruptDecision: TypeAlias = RetryDecision | DenyDecision | ResultDecision | MutateDecision


def decision_from_dict(data: Mapping[str, Any]) -> InterruptDecision:
    """Build a decision from JSON (``{"decision": "mutate", "oracle": ..., ...}``).

    Raises:
        UserError: For an unknown ``decision``.
    """
    kind = data.get("decision")
    if kind == "retry":
        return RetryDecision()
    if kind == "deny":
        return DenyDecision(reason=str(data.get("reason", "")))
    if kind == "result":
        return ResultDecision(value=data.get("value"))
    if kind == "mutate":
        return MutateDecision(
            oracle=str(data["oracle"]),
            limit_type=str(data["limit_type"]),
            max=float(data["max"]),
            window=data.get("window"),
            approver=data.get("approver"),
        )
    raise UserError(
        f"Unknown interrupt decision {kind!r}. Valid: 'retry', 'deny', 'result', 'mutate'."
    )


class GovernanceError(RunError):
    """Root of the governor's errors."""


class Denied(GovernanceError):
    """A policy or a decision refused the action; nothing was run."""

    def __init__(self, reason: str, *, oracle: str, node: str = "") -> None:
        super().__init__(f"Denied {oracle!r}: {reason}")
        self.reason = reason
        self.oracle = oracle
        self.node = node


class MutationRefused(Denied):
    """A mutation was past its ceiling or made by someone who may not make it."""

    def __init__(
        self, reason: str, *, oracle: str, limit_type: str, requested: float, node: str = ""
    ) -> None:
        super().__init__(reason, oracle=oracle, node=node)
        self.limit_type = limit_type
        self.requested = requested


class PolicyExceeded(GovernanceError):
    """A limit is used up; the action was not run."""

    def __init__(
        self, *, oracle: str, limit_type: str, window: str, current: float, max: float
    ) -> None:
        super().__init__(
            f"Limit exceeded on {oracle!r}: {limit_type} {current:g} of {max:g} (window {window})."
        )
        self.oracle = oracle
        self.limit_type = limit_type
        self.window = window
        self.current = current
        self.max = max


class BudgetUnpriced(GovernanceError):
    """A cost limit applies, but the call's usage has no price: the limit cannot be enforced.

    Raised after the call (its usage is on :attr:`usage`), so no further call is made
    unpriced. Give the model a price, or ``unpriced="allow"`` on the limit to count such
    calls as free.
    """

    def __init__(self, *, oracle: str, max: float, window: str, usage: Any) -> None:
        super().__init__(
            f"Cost limit on {oracle!r} (${max:g}, window {window}) cannot be enforced: the "
            "call's usage has no price. Give the model a price (a provider profile, or "
            "Usage.cost_usd from a custom model), or set unpriced='allow' on the Budget or "
            "Limit to count unpriced calls as free."
        )
        self.oracle = oracle
        self.max = max
        self.window = window
        self.usage = usage


class InterruptRequired(GovernanceError):
    """An interrupt needs a decision and no handler is configured: suspend the run.

    Resume by calling ``Governor.decide(interrupt.id, decision)`` and running the same
    action again.
    """

    def __init__(self, interrupt: Interrupt) -> None:
        super().__init__(f"Interrupt {interrupt.id!r} needs a decision: {interrupt.reason}")
        self.interrupt = interrupt


class ActionTimeout(GovernanceError, TimeoutError):
    """The action ran longer than its ``timeout`` limit and was cancelled."""

    def __init__(self, *, oracle: str, seconds: float) -> None:
        super().__init__(f"Action on {oracle!r} timed out after {seconds:g} s.")
        self.oracle = oracle
        self.seconds = seconds
