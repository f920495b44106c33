"""A tool call of one step on its way through the gate, and what the batch's parts read.

:func:`prepare_call` runs stages 1 and 2 of the gate (name-level deny, validation) when the
batch is made; the admission (``_admission.py``) and the call runner (``_call_runner.py``)
then work on the :class:`PreparedCall` in place, within the :class:`BatchScope` they share.
:class:`ExecutorView` is what they read of the executor, :class:`ToolCallHooks` what the
agent plugs in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from bastion.core import Clock, RunContext, ToolCall

from ._gate import ApprovalDecision, ApprovalRequest
from ._input import InputRequest
from ._outcome import SkipTool, ToolOutcome, error_outcome
from ._schema import ToolArgumentsError

if TYPE_CHECKING:
    from bastion.observability import ToolAudit
    from bastion.security import Vault

    from ._cache import ToolCache
    from ._gate import ToolGate
    from ._memory_guard import MemoryGuard
    from ._pipeline import ResultProcessor
    from ._retry import ToolRetry
    from ._tool import Tool

__all__ = [
    "NO_MOCK",
    "BatchScope",
    "ExecutorView",
    "PreparedCall",
    "ToolCallHooks",
    "approval_request",
    "args_view",
    "prepare_call",
]

NO_MOCK: object = object()
"""The ``PreparedCall.mock`` of a call that has no mocked result."""


class ToolCallHooks(Protocol):
    """Interception points the agent layer plugs into the executor."""

    async def before(
        self, tool: Tool, call: ToolCall, args: Mapping[str, object]
    ) -> SkipTool | None:
        """Called after validation, before the tool runs."""
        ...

    async def after(self, tool: Tool, call: ToolCall, content: str) -> str:
        """Called with the rendered result; returns the (possibly replaced) result."""
        ...

    async def before_approval(self, request: ApprovalRequest) -> None:
        """Called before ``on_approval`` is asked (a human may take hours to answer)."""
        ...


class ExecutorView(Protocol):
    """What a batch reads of its executor, when it needs it (the agent sets some late)."""

    gate: ToolGate
    clock: Clock
    audit: ToolAudit
    cache: ToolCache
    retry: ToolRetry | None
    memory_guard: MemoryGuard | None
    vault: Vault | None
    max_parallel: int
    cancel_grace: float
    event_queue_depth: int

    def chain(self, tool: Tool) -> tuple[ResultProcessor, ...]:
        """The processors that apply to ``tool``."""
        ...


@dataclass(frozen=True, slots=True)
class BatchScope:
    """What the parts of one batch share: the run, the hooks, and the human decisions.

    Attributes:
        ctx: The run's context.
        hooks: The agent's interception points.
        pending: Requests of calls left waiting for a human, in call order.
        decided: Decisions humans gave on the batch's calls (asked live, or passed in on
            resume), by call id.
    """

    ctx: RunContext[Any]
    hooks: ToolCallHooks | None
    pending: list[ApprovalRequest]
    decided: dict[str, ApprovalDecision]


@dataclass(slots=True)
class PreparedCall:
    """One call of a batch: its tool, validated arguments, and what the gate made of it.

    Attributes:
        index: The call's place in the step.
        call: The call (rewritten when a hook, a repair or a human changed its arguments).
        tool: The tool (``None``: unknown).
        args: The validated positional arguments.
        kwargs: The validated keyword arguments.
        outcome: Set when the gate decided the call (it does not run) or when it ran.
        mock: A result to use instead of running the tool (``NO_MOCK``: none).
        pending: The request of a call left waiting for a human.
        invalid: The validation error awaiting the repair round.
    """

    index: int
    call: ToolCall
    tool: Tool | None
    args: tuple[object, ...] = ()
    kwargs: dict[str, object] = field(default_factory=dict[str, object])
    outcome: ToolOutcome | None = None
    mock: object = NO_MOCK
    pending: ApprovalRequest | None = None
    invalid: ToolArgumentsError | None = None  # awaiting the repair round


def prepare_call(
    index: int, call: ToolCall, tools: Mapping[str, Tool], gate: ToolGate
) -> PreparedCall:
    """Stages 1 and 2 of the gate: an unknown or denied tool, then the arguments' validation.

    Args:
        index: The call's place in the step.
        call: The call as the model made it.
        tools: The tools the step may run.
        gate: The gate (its deny list, and whether a repair hook gets invalid arguments).
    """
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(repr(n) for n in sorted(tools)) or "none"
        return PreparedCall(
            index=index,
            call=call,
            tool=None,
            outcome=error_outcome(
                call,
                "unknown_tool",
                f"Unknown tool {call.name!r}. Available tools: {available}.",
            ),
        )
    if gate.denied(call.name):
        return PreparedCall(
            index=index,
            call=call,
            tool=tool,
            outcome=error_outcome(
                call, "capability_blocked", f"Tool {call.name!r} is not allowed in this run."
            ),
        )
    p = PreparedCall(index=index, call=call, tool=tool)
    try:
        p.args, p.kwargs = tool.validator.validate(call.arguments)
    except ToolArgumentsError as exc:
        p.outcome = error_outcome(call, "invalid_input", exc.for_model(tool.name))
        if gate.repair is not None:
            p.invalid = exc
    return p


def approval_request(
    p: PreparedCall, tool: Tool, reason: str | None, step: int, question: InputRequest | None = None
) -> ApprovalRequest:
    """The request a human decides for the call (``question``: the call stopped to ask one)."""
    return ApprovalRequest(
        tool_call_id=p.call.id,
        tool_name=tool.name,
        arguments=dict(args_view(p)),
        classification=tool.classification(),
        reason=reason,
        step=step,
        input=question,
    )


def args_view(p: PreparedCall) -> Mapping[str, object]:
    """The call's validated arguments as a mapping (what hooks, policies and caches see)."""
    if p.kwargs:
        return p.kwargs
    if p.args:
        first = p.args[0]
        if isinstance(first, dict):
            return cast("dict[str, object]", first)  # raw JSON-schema tools get a JSON object
        dump = getattr(first, "model_dump", None)
        if dump is not None:
            return dump()
    return {}
