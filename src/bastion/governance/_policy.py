"""Policies, limits and oracles: what users configure.

A policy is either a *custom policy* (a sync or async callable of a :class:`PolicyAction`
returning a :class:`PolicyResult`) or a built-in :class:`Limit` counted by the governor.
:class:`Oracle` groups the policies of one key; :class:`Budget` is the shorthand for a
cost limit on the ``llm`` oracle.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from bastion.core import UserError

from ._windows import Window, WindowSpec, parse_window

__all__ = [
    "ALLOW",
    "Backoff",
    "Budget",
    "Ceiling",
    "CustomPolicy",
    "Extract",
    "Limit",
    "Oracle",
    "Policy",
    "PolicyAction",
    "PolicyFn",
    "PolicyResult",
    "allow",
    "deny",
    "interrupt",
]

BUILTIN_LIMITS = ("cost", "calls", "context", "rounds", "retries", "timeout")
Ceiling: TypeAlias = Callable[[float, float, float], bool]
"""``ceiling(next, current, max) -> bool``: may the approver raise ``max`` to ``next``?"""
Extract: TypeAlias = Callable[[Any], "float | Mapping[str, float] | None"]
Backoff: TypeAlias = Literal["exponential"] | float | Callable[[int], float]


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """What a policy decided: allow, deny, or interrupt for a decision.

    Build one with :func:`allow`, :func:`deny` or :func:`interrupt`.

    Attributes:
        approval: ``"allow"``, ``"deny"`` or ``"interrupt"``.
        stop: Allow and stop bubbling: policies above this one are not consulted.
        force: Decide in the capture phase, overriding every policy below.
        reason: Why an action was denied.
        payload: The JSON-serialisable payload of an interrupt.
    """

    approval: Literal["allow", "deny", "interrupt"]
    stop: bool = False
    force: bool = False
    reason: str = ""
    payload: Any = None


ALLOW = PolicyResult(approval="allow")
_ALLOW_STOP = PolicyResult(approval="allow", stop=True)
_ALLOW_FORCE = PolicyResult(approval="allow", force=True)


def allow(*, stop: bool = False, force: bool = False) -> PolicyResult:
    """Allow the action; ``stop`` ends bubbling, ``force`` decides in the capture phase."""
    if force:
        return _ALLOW_FORCE
    return _ALLOW_STOP if stop else ALLOW


def deny(reason: str, *, force: bool = False) -> PolicyResult:
    """Deny the action with a reason the caller (and the model) will read."""
    return PolicyResult(approval="deny", reason=reason, force=force)


def interrupt(payload: Any = None, *, force: bool = False) -> PolicyResult:
    """Pause the action until an interrupt handler or a human decides."""
    return PolicyResult(approval="interrupt", payload=payload, force=force)


@dataclass(kw_only=True, slots=True)
class PolicyAction:
    """The action a custom policy judges, before it runs. Read-only for policies.

    Attributes:
        node: The node (agent) acting, or ``""``.
        oracle: The oracle key of the action, e.g. ``"llm:anthropic:claude-sonnet"``.
        input: The action's input (model request, tool arguments, ...).
        history: Oracle keys or node keys the caller reports as done before.
        ancestry: Node keys from the root to the acting node's parent.
        target: The node an action would start (spawning, handoff), when there is one.
        timestamp: Seconds since the epoch, from the governor's clock.
        invocation_id: The invocation (run) the action belongs to.
        graph_id: The graph execution, when there is one.
        node_id: The node execution id, when there is one.
        oracle_id: The id of this action.
        policy_id: The id of the policy being asked.
    """

    node: str
    oracle: str
    input: Any
    history: Sequence[str]
    ancestry: Sequence[str]
    target: str | None
    timestamp: float
    invocation_id: str
    graph_id: str
    node_id: str
    oracle_id: str
    policy_id: str = ""


PolicyFn: TypeAlias = Callable[
    [PolicyAction], "PolicyResult | Awaitable[PolicyResult | None] | None"
]


@dataclass(kw_only=True, slots=True)
class CustomPolicy:
    """A policy function with an id. ``None`` from the function means "allow, continue"."""

    fn: PolicyFn
    id: str = ""
    is_async: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise UserError(f"A policy must be callable; got {self.fn!r}.")
        self.is_async = inspect.iscoroutinefunction(self.fn)
        if not self.id:
            self.id = getattr(self.fn, "__name__", "") or "policy"


@dataclass(kw_only=True, slots=True)
class Limit:
    """A built-in limit: a maximum of one measure (calls, tokens, cost …) within a window.

    Attributes:
        type: ``cost``, ``calls``, ``context`` (tokens), ``rounds`` (tool-call rounds),
            ``retries``, ``timeout`` (seconds) or a custom counter ``x:<name>``.
        max: The maximum inside the window.
        window: ``minute|hour|day|week|month`` (sliding), ``graph``, ``invocation``, a number
            of seconds (sliding), or ``None`` for no window.
        extract: Maps an action's result to the amount to count (a number, or a breakdown
            such as ``{"prompt": 0.02, "completion": 0.01}`` that is summed). Defaults read a
            :class:`bastion.core.Usage` from the result.
        mutable: Who may raise ``max`` at runtime: approver name → ``True`` or a ceiling
            ``(next, current, max) -> bool``. A breach then interrupts instead of failing.
        backoff: For ``retries``: ``"exponential"`` (1 s, 2 s, 4 s, ...), a fixed number of
            seconds, or a function of the 0-indexed attempt returning seconds.
        unpriced: For ``cost``: what a call whose usage has no price does. ``"fail"``
            (default) raises ``BudgetUnpriced`` (a limit that cannot be enforced is not
            silently ignored); ``"allow"`` counts it as free.
    """

    type: str
    max: float
    window: WindowSpec = None
    extract: Extract | None = None
    mutable: Mapping[str, bool | Ceiling] | None = None
    backoff: Backoff | None = None
    unpriced: Literal["fail", "allow"] = "fail"
    parsed_window: Window = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.type not in BUILTIN_LIMITS and not (
            self.type.startswith("x:") and len(self.type) > 2
        ):
            valid = ", ".join(repr(t) for t in BUILTIN_LIMITS)
            raise UserError(f"Unknown limit type {self.type!r}. Valid: {valid}, or 'x:<name>'.")
        if isinstance(self.max, bool) or not isinstance(self.max, int | float) or self.max < 0:
            raise UserError(f"Limit {self.type!r} needs max >= 0; got {self.max!r}.")
        if self.backoff is not None and self.type != "retries":
            raise UserError(f"backoff applies to 'retries' limits only, not {self.type!r}.")
        if isinstance(self.backoff, str) and self.backoff != "exponential":
            raise UserError(
                f"Unknown backoff {self.backoff!r}: use 'exponential', seconds, or a function."
            )
        if self.mutable is not None and self.type in ("retries", "timeout"):
            raise UserError(f"A {self.type!r} limit cannot be mutable.")
        if self.unpriced not in ("fail", "allow"):
            raise UserError(f"Limit unpriced must be 'fail' or 'allow', got {self.unpriced!r}.")
        self.parsed_window = parse_window(self.window)

    def backoff_delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (0-indexed)."""
        backoff = self.backoff
        if backoff is None:
            return 0.0
        if backoff == "exponential":
            return float(2**attempt)
        if callable(backoff):
            return float(backoff(attempt))
        return float(backoff)


Policy: TypeAlias = "Limit | CustomPolicy | PolicyFn"


@dataclass(kw_only=True, slots=True)
class Oracle:
    """The policies of one oracle key, and optionally the function that performs its actions.

    ``executor(input)`` runs when ``Governor.exec`` is called without a function; child keys
    inherit their nearest ancestor's executor.
    """

    policies: Sequence[Policy] = ()
    executor: Callable[[Any], Any] | None = None


@dataclass(kw_only=True, slots=True)
class Budget:
    """Shorthand for a cost limit on an oracle (``llm`` by default).

    ``Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50)`` is
    ``Limit(type="cost", max=10, window="day", mutable={"human:cfo": <next <= 50>})`` on
    the ``llm`` oracle: every model call counts against it.

    Attributes:
        cost_usd: The maximum spend in the window, in US dollars.
        window: The window (see :class:`Limit`).
        mutable_by: Approver name(s) who may raise the budget; without one a breach fails.
        ceiling: The highest value approvers may raise it to; ``None`` for no ceiling.
        oracle: The oracle key the limit sits on.
        unpriced: ``"fail"`` (default): a call with no price fails the run
            (``budget_unpriced``), since the budget could not be enforced; ``"allow"``
            counts it as free.
    """

    cost_usd: float
    window: WindowSpec = "day"
    mutable_by: str | Sequence[str] | None = None
    ceiling: float | None = None
    oracle: str = "llm"
    unpriced: Literal["fail", "allow"] = "fail"

    def limit(self) -> Limit:
        """Return the equivalent :class:`Limit`."""
        mutable: dict[str, bool | Ceiling] | None = None
        if self.mutable_by is not None:
            names = [self.mutable_by] if isinstance(self.mutable_by, str) else self.mutable_by
            ceiling = self.ceiling
            rule: bool | Ceiling = (
                True if ceiling is None else (lambda next_, current, max_: next_ <= ceiling)
            )
            mutable = dict.fromkeys(names, rule)
        elif self.ceiling is not None:
            raise UserError("Budget(ceiling=...) needs mutable_by=: who may raise the budget?")
        return Limit(
            type="cost",
            max=self.cost_usd,
            window=self.window,
            mutable=mutable,
            unpriced=self.unpriced,
        )
