"""The ordered gate every tool call passes before it runs.

1. name-level deny (``deny_tools`` patterns): ``capability_blocked``;
2. schema validation, with one round of the operator's repair hook: ``invalid_input``
   (invalid arguments never reach a human);
3. ``before_tool_call`` hooks, in order; the first decision that is not ``None`` wins:
   :class:`Allow` (approved, no human asked), :class:`Deny`, :class:`Rewrite` (new arguments,
   validated again), :class:`Mock` (a result without running the tool), :class:`Ask`
   (a human must decide);
4. the approval requirement: ``Ask``, the tool's ``needs_approval`` (a bool, or a predicate
   of the arguments), or the agent's ``ApprovalConfig.policy`` (``"all"`` or a list of
   names);
5. resolution: the ``on_approval`` callback within ``timeout`` (then ``timeout_action``), or
   else the call is left *pending*: the run suspends with status ``awaiting_approval`` and
   resumes with a :class:`Directive`.

With a :class:`ToolGovernor` (an agent with policies or budgets) the governance check runs
first, right after validation (so policies see the validated arguments), before the hooks:
its ``Deny`` becomes an ``approval_denied`` (or ``rate_limited``) result, ``Mock`` a result
without running the tool, ``Ask`` a pending call (an interrupt; the run suspends). It runs
again for calls a human decided, so a resumed call is checked (and counted) like any other.
"""

from __future__ import annotations

import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from bastion.core import JsonObject, JsonValue, RunContext, ToolCall, ToolErrorKind, UserError

from ._input import InputAnswer, InputRequest

if TYPE_CHECKING:
    from bastion.governance import InterruptDecision

    from ._schema import ToolArgumentsError
    from ._tool import Tool

__all__ = [
    "Allow",
    "ApprovalConfig",
    "ApprovalDecision",
    "ApprovalRequest",
    "Ask",
    "BeforeToolCall",
    "Deny",
    "Directive",
    "InterruptResolution",
    "Mock",
    "RepairHook",
    "Rewrite",
    "ToolCallDecision",
    "ToolCallRequest",
    "GuardVerdict",
    "ToolGate",
    "ToolGovernor",
    "ToolGuard",
]


@dataclass(kw_only=True, slots=True, frozen=True)
class Allow:
    """Run the call without asking a human (overrides ``needs_approval``)."""


@dataclass(slots=True, frozen=True)
class Deny:
    """Do not run the call; the model reads ``reason`` as an ``approval_denied`` error.

    ``kind`` is ``rate_limited`` when a governance limit (not a policy) refused the call.
    """

    reason: str = "The call was denied."
    kind: ToolErrorKind = "approval_denied"


@dataclass(slots=True, frozen=True)
class Rewrite:
    """Run the call with these arguments instead (validated again)."""

    arguments: JsonObject


@dataclass(slots=True, frozen=True)
class Mock:
    """Do not run the tool; use ``result`` as its result."""

    result: object


@dataclass(slots=True, frozen=True)
class Ask:
    """A human must approve the call, whatever the tool's ``needs_approval`` says."""

    reason: str | None = None


ToolCallDecision: TypeAlias = Allow | Deny | Rewrite | Mock | Ask


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolCallRequest:
    """A validated tool call, as a ``before_tool_call`` hook sees it."""

    tool: Tool
    call: ToolCall
    arguments: Mapping[str, object]
    ctx: RunContext[Any]


BeforeToolCall: TypeAlias = Callable[
    [ToolCallRequest], "ToolCallDecision | Awaitable[ToolCallDecision | None] | None"
]
RepairHook: TypeAlias = Callable[
    ["ToolCall", "ToolArgumentsError"],
    "str | JsonObject | Awaitable[str | JsonObject | None] | None",
]


@dataclass(kw_only=True, slots=True, frozen=True)
class ApprovalRequest:
    """A tool call waiting for a human decision.

    Attributes:
        tool_call_id: The call's id; a decision names it.
        tool_name: The tool.
        arguments: The validated arguments.
        classification: The tool's classification (side effects, sensitivity, trust).
        reason: Why approval is needed (from an :class:`Ask` hook decision), if given.
        step: The step the call was made in.
        digest: A digest of exactly this call (run, call id, tool, canonical arguments),
            set when the run suspends; a decision may repeat it to bind itself to what
            the human saw.
        input: The question of a call that stopped in the middle to ask a person (an MCP
            server's elicitation); answer it with ``Directive(inputs=[InputAnswer(...)])``.
    """

    tool_call_id: str
    tool_name: str
    arguments: dict[str, object]
    classification: dict[str, str | bool | None] = field(
        default_factory=dict[str, str | bool | None]
    )
    reason: str | None = None
    step: int = 0
    digest: str | None = None
    input: InputRequest | None = None


@dataclass(kw_only=True, slots=True, frozen=True)
class ApprovalDecision:
    """A human's decision on one pending call.

    Attributes:
        tool_call_id: The call decided.
        granted: True to run it; False to deny it.
        reason: Shown to the model when denied.
        arguments: Edited arguments to run with instead (validated again).
        result: Mark the call done with this result instead of running it (for a call
            whose outcome is unknown after a crash, when a human knows it happened).
        digest: The ``ApprovalRequest.digest`` the human decided on; when given, the
            decision only applies to that exact call (a call changed since is refused).
        answer: The answer the call runs again with, for a call that asked a question
            (set by ``resume`` from ``Directive.inputs``).
    """

    tool_call_id: str
    granted: bool
    reason: str | None = None
    arguments: dict[str, object] | None = None
    result: str | None = None
    digest: str | None = None
    answer: InputAnswer | None = None


@dataclass(kw_only=True, slots=True, frozen=True)
class InterruptResolution:
    """A decision on one pending governance interrupt of a suspended run.

    Attributes:
        interrupt_id: The interrupt's ``id`` (in ``result.state.interrupts``).
        decision: A ``bastion.governance`` decision (``MutateDecision``, ``RetryDecision``,
            ``DenyDecision``, ``ResultDecision``) or its JSON form
            (``{"decision": "mutate", "oracle": "llm", "limit_type": "cost", "max": 20}``).
    """

    interrupt_id: str
    decision: InterruptDecision | Mapping[str, object]


@dataclass(kw_only=True, slots=True, frozen=True)
class Directive:
    """What a resumed run is told: the decisions on its pending approvals and interrupts.

    ``inputs`` answer the calls that stopped to ask a question (``ApprovalRequest.input``):
    such a call runs again with its answer. A call can also be denied instead.
    """

    approvals: Sequence[ApprovalDecision] = ()
    interrupts: Sequence[InterruptResolution] = ()
    inputs: Sequence[InputAnswer] = ()


class ToolGovernor(Protocol):
    """The governance check of the gate (stage 0) and the accounting after a call ran."""

    async def check(
        self, tool: Tool, call: ToolCall, arguments: Mapping[str, object], ctx: RunContext[Any]
    ) -> ToolCallDecision | None:
        """``None`` to go on; ``Deny`` / ``Mock`` / ``Ask`` decide the call (see module doc)."""
        ...

    async def record(self, tool: Tool, call: ToolCall, result: str, ctx: RunContext[Any]) -> None:
        """Account a finished call's result (the text the model reads)."""
        ...


@dataclass(kw_only=True, slots=True, frozen=True)
class GuardVerdict:
    """What a :class:`ToolGuard` found about one call.

    Attributes:
        decision: ``None`` to let the call run (shadow mode), ``Deny`` to refuse it,
            ``Ask`` to make it wait for a human (a durable approval interrupt).
        signal: Name of the ``governance.signal`` event reporting the finding.
        data: The event's JSON-ready fields.
    """

    decision: Deny | Ask | None
    signal: str
    data: JsonObject = field(default_factory=dict[str, JsonValue])


class ToolGuard(Protocol):
    """A check of each call's arguments against what the run has read (the data-flow policy).

    It runs after the governance check and before the hooks, also for calls made from
    inside a code-mode script; a call a human already decided on skips it.
    """

    async def check(
        self, tool: Tool, call: ToolCall, arguments: Mapping[str, object], ctx: RunContext[Any]
    ) -> GuardVerdict | None:
        """``None``: nothing to report."""
        ...


OnApproval: TypeAlias = Callable[
    [ApprovalRequest, RunContext[Any]],
    "bool | ApprovalDecision | Awaitable[bool | ApprovalDecision]",
]


@dataclass(kw_only=True, slots=True, frozen=True)
class ApprovalConfig:
    """How tool calls that need approval are decided.

    Attributes:
        policy: Which calls need approval besides tools with ``needs_approval``:
            ``"none"``, ``"all"``, or a list of tool names.
        on_approval: Called for each call needing approval; returns True/False or an
            :class:`ApprovalDecision`. Without it the run suspends (``awaiting_approval``).
        timeout: Seconds to wait for ``on_approval``.
        timeout_action: What a timeout means: ``"deny"`` (default), ``"approve"``, or
            ``"raise"`` (the run fails).
    """

    policy: Literal["none", "all"] | Sequence[str] = "none"
    on_approval: OnApproval | None = None
    timeout: float = 300.0
    timeout_action: Literal["approve", "deny", "raise"] = "deny"

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise UserError(f"ApprovalConfig.timeout must be > 0, got {self.timeout!r}.")
        if self.timeout_action not in ("approve", "deny", "raise"):
            raise UserError(
                f"ApprovalConfig.timeout_action must be 'approve', 'deny' or 'raise', "
                f"got {self.timeout_action!r}."
            )
        if isinstance(self.policy, str) and self.policy not in ("none", "all"):
            raise UserError(
                f"ApprovalConfig.policy must be 'none', 'all' or a list of tool names, "
                f"got {self.policy!r}."
            )


class ToolGate:
    """The agent's gate configuration, compiled once for every call.

    Args:
        deny_tools: Name patterns (``fnmatch``) of tools that may never run.
        before_tool_call: Hooks deciding per call, in order.
        repair: Given a call whose arguments failed validation and the error, returns
            repaired arguments (a JSON string or a dict) or ``None``; one round.
        approval: How approvals are decided.
        governor: The agent's governance check (``None``: no governance, no cost).
        guard: The data-flow check of each call (``None``: none, no cost).
    """

    __slots__ = (
        "_deny",
        "approval",
        "before_tool_call",
        "governor",
        "guard",
        "repair",
        "unattended",
    )

    def __init__(
        self,
        *,
        deny_tools: Sequence[str] = (),
        before_tool_call: Sequence[BeforeToolCall] = (),
        repair: RepairHook | None = None,
        approval: ApprovalConfig | None = None,
        governor: ToolGovernor | None = None,
        guard: ToolGuard | None = None,
    ) -> None:
        self._deny = tuple(deny_tools)
        self.governor: ToolGovernor | None = governor
        """Checks and accounts tool calls against policies (stage 1), when set."""
        self.guard: ToolGuard | None = guard
        """Checks each call's arguments against the run's data flow, when set."""
        self.before_tool_call = tuple(before_tool_call)
        self.repair = repair
        self.approval = approval or ApprovalConfig()
        # True when no hook, approval or repair applies (the governor aside): calls need
        # no approval stage.
        self.unattended: bool = (
            not self._deny
            and not self.before_tool_call
            and self.approval.policy == "none"
            and self.repair is None
        )

    @property
    def trivial(self) -> bool:
        """True when no call can be stopped before validation-and-run (the fast path)."""
        return self.unattended and self.governor is None and self.guard is None

    def with_first_hook(self, hook: BeforeToolCall) -> ToolGate:
        """A copy of this gate that asks ``hook`` before its own ``before_tool_call`` hooks."""
        return ToolGate(
            deny_tools=self._deny,
            before_tool_call=(hook, *self.before_tool_call),
            repair=self.repair,
            approval=self.approval,
            governor=self.governor,
            guard=self.guard,
        )

    def with_approval(self, approval: ApprovalConfig, governor: ToolGovernor | None) -> ToolGate:
        """A copy of this gate with another approval configuration and governor."""
        return ToolGate(
            deny_tools=self._deny,
            before_tool_call=self.before_tool_call,
            repair=self.repair,
            approval=approval,
            governor=governor,
            guard=self.guard,
        )

    def denied(self, name: str) -> bool:
        """True when ``name`` matches a ``deny_tools`` pattern."""
        deny = self._deny
        return bool(deny) and any(fnmatch.fnmatchcase(name, pattern) for pattern in deny)

    async def decide(self, request: ToolCallRequest) -> ToolCallDecision | None:
        """The first non-``None`` decision of the ``before_tool_call`` hooks."""
        for hook in self.before_tool_call:
            decision = hook(request)
            if inspect.isawaitable(decision):
                decision = await decision
            if decision is not None:
                if not isinstance(decision, (Allow, Deny, Rewrite, Mock, Ask)):
                    raise UserError(
                        f"before_tool_call hook {hook!r} returned {decision!r}; return "
                        "Allow(), Deny(reason), Rewrite(arguments), Mock(result), Ask() or None."
                    )
                return decision
        return None

    async def needs_approval(self, tool: Tool, arguments: Mapping[str, object]) -> bool:
        """The approval requirement of stage 4 (without hook decisions)."""
        policy = self.approval.policy
        if policy == "all":
            return True
        if not isinstance(policy, str) and tool.name in policy:
            return True
        needs = tool.needs_approval
        if isinstance(needs, bool):
            return needs
        verdict: object = needs(dict(arguments))
        if inspect.isawaitable(verdict):  # an async predicate
            return bool(await verdict)
        return bool(verdict)
