"""``RunContext``: what tools, hooks, guardrails and instructions see of a run (SPEC C15)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol

from ._clock import Clock, SystemClock
from ._messages import Message
from ._usage import Usage

__all__ = ["DepsT", "RunContext", "ToolProgressSink"]

if TYPE_CHECKING:  # PEP 696 defaults for type checkers; typing_extensions costs 40 ms to import
    from typing_extensions import TypeVar

    DepsT = TypeVar("DepsT", default=None)
else:
    from typing import TypeVar

    DepsT = TypeVar("DepsT")


class ToolProgressSink(Protocol):
    """Receives what a running tool reports; the executor turns it into events."""

    def progress(self, current: float, total: float | None, message: str | None) -> None:
        """A progress report."""
        ...

    def partial(self, content: str) -> None:
        """A piece of streamed output."""
        ...


@dataclass(kw_only=True, slots=True)
class RunContext(Generic[DepsT]):
    """The context of one run.

    A tool asks for it by annotating its first parameter ``ctx: RunContext[MyDeps]``.

    Attributes:
        run_id: Unique id of the run.
        agent_name: Name of the agent running.
        deps: The dependencies given to ``agent.run(..., deps=...)``.
        session_id: Conversation id (a new one per run unless given).
        user_id: End user the run acts for, if known.
        tenant_id: Tenant the run belongs to, for multi-tenant isolation.
        metadata: Free-form values given by the caller.
        session_state: Mutable state that a session persists across turns.
        usage: Usage of the run so far.
        step: Number of the current step (1-based; 0 before the first model call).
        messages: The conversation so far (read it; the loop owns it).
        clock: The clock the run uses.
        tool_call_id: Inside a tool, the id of the call being executed.
        tool_name: Inside a tool, the name of the tool being executed.
    """

    run_id: str
    agent_name: str
    deps: DepsT = None  # pyright: ignore[reportAssignmentType]
    session_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    session_state: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    step: int = 0
    messages: list[Message] = field(default_factory=list)
    clock: Clock = field(default_factory=SystemClock)
    tool_call_id: str | None = None
    tool_name: str | None = None
    _sink: ToolProgressSink | None = field(default=None, repr=False)

    def get_state(self, key: str, default: Any = None) -> Any:
        """Return ``session_state[key]``, or ``default`` when absent."""
        return self.session_state.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Set ``session_state[key]``; a session persists it with the conversation."""
        self.session_state[key] = value

    def report_progress(
        self, current: float, total: float | None = None, message: str | None = None
    ) -> None:
        """From inside a tool: emit a ``tool.execute.progress`` event. Ignored elsewhere."""
        if self._sink is not None:
            self._sink.progress(current, total, message)

    def stream_content(self, text: str) -> None:
        """From inside a tool: emit a ``tool.execute.partial`` event with a piece of output.

        When the tool returns nothing, the pieces joined become its result.
        """
        if self._sink is not None:
            self._sink.partial(text)

    def for_tool_call(
        self, tool_call_id: str, tool_name: str, sink: ToolProgressSink | None
    ) -> RunContext[DepsT]:
        """Return a copy bound to one tool call."""
        return replace(self, tool_call_id=tool_call_id, tool_name=tool_name, _sink=sink)
