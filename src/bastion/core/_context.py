"""``RunContext``: what tools, hooks, guardrails and instructions see of a run."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, Protocol, overload
from typing import TypeVar as _TypeVar

from ._bus import EventBus
from ._clock import Clock, SystemClock
from ._events import AgentEvent
from ._messages import Message
from ._runtime import Runtime, SandboxConfig, resolve_sandbox
from ._usage import Usage

__all__ = ["CancelToken", "DepsT", "Lazy", "RunContext", "ToolProgressSink"]

if TYPE_CHECKING:  # PEP 696 defaults for type checkers; typing_extensions costs 40 ms to import
    from typing_extensions import TypeVar

    DepsT = TypeVar("DepsT", default=None)
else:
    from typing import TypeVar

    DepsT = TypeVar("DepsT")

T = _TypeVar("T")
_P = ParamSpec("_P")


class CancelToken:
    """Tells work in progress that its run was aborted.

    Async code is cancelled directly; a sync tool running in a worker thread cannot be, so
    it should check ``ctx.cancelled`` between chunks of work, or block in :meth:`wait`.
    """

    __slots__ = ("_event", "_reason")

    def __init__(self) -> None:
        self._reason: str | None = None
        self._event: threading.Event | None = None  # made only when a thread waits

    @property
    def cancelled(self) -> bool:
        """True once the run was asked to stop."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """Why, once cancelled."""
        return self._reason

    def cancel(self, reason: str) -> None:
        """Mark as cancelled (the first reason is kept) and wake threads in :meth:`wait`."""
        if self._reason is None:
            self._reason = reason
        if self._event is not None:
            self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block the calling thread until cancelled or ``timeout``; True when cancelled.

        For sync tools in worker threads, never for async code (it would block the loop).
        """
        event = self._event
        if event is None:
            event = self._event = threading.Event()
            if self._reason is not None:  # cancelled before the event existed
                event.set()
        return event.wait(timeout)


class Lazy(Generic[T]):
    """A dependency made on demand, once per run: ``deps={"db": Lazy(connect)}``.

    The factory (sync or async, no arguments) runs when the run starts; tools see its
    result in ``ctx.deps``. Wrap the whole ``deps`` value or values of a ``deps`` dict.
    """

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], T | Awaitable[T]]) -> None:
        self.factory = factory

    async def resolve(self) -> T:
        """Run the factory."""
        value = self.factory()
        if inspect.isawaitable(value):
            return await value
        return value

    def __repr__(self) -> str:
        return f"Lazy({self.factory!r})"


class ToolProgressSink(Protocol):
    """Receives what a running tool reports; the executor turns it into events."""

    def progress(self, current: float, total: float | None, message: str | None) -> None:
        """A progress report."""
        ...

    def partial(self, content: str) -> None:
        """A piece of streamed output."""
        ...

    def subagent(self, agent_name: str, event: AgentEvent, ancestry: tuple[str, ...] = ()) -> None:
        """An event of an agent run the tool started, to forward as ``subagent.event``."""
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
        event_bus: The agent's event bus, when it has one (tools may emit custom events).
        cancel_token: Set when the run is aborted; see :attr:`cancelled`.
        tool_call_id: Inside a tool, the id of the call being executed.
        tool_name: Inside a tool, the name of the tool being executed.
        idempotency_key: Inside a tool with an ``idempotency_key`` function, the key it
            derived from this call's arguments (pass it on to the system the tool changes).
        runtime: Where tools run commands and touch files (``Agent(runtime=...)``).
            Inside a tool it is the runtime of that call: sandboxed or not as the tool's
            ``sandbox=`` and the agent's resolve. ``None``: the agent has no runtime.
        sandbox: The agent's sandbox setting, which tools without their own inherit.
        input_answer: Inside a tool that stopped to ask a person (it raised
            ``bastion.tools.InputRequired``) and runs again after the run was resumed:
            the answer (a ``bastion.tools.InputAnswer``). ``None`` otherwise.
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
    event_bus: EventBus | None = None
    cancel_token: CancelToken = field(default_factory=CancelToken)
    tool_call_id: str | None = None
    tool_name: str | None = None
    idempotency_key: str | None = None
    runtime: Runtime | None = None
    sandbox: bool | SandboxConfig | None = None
    input_answer: Any = None
    _sink: ToolProgressSink | None = field(default=None, repr=False)
    # Installed by an agent with governance: runs ``call``'s work through its governor.
    _governed: Callable[[str, Callable[[], Any]], Awaitable[Any]] | None = field(
        default=None, repr=False
    )

    @property
    def agent_id(self) -> str:
        """Alias of ``agent_name`` (Graphorin's name)."""
        return self.agent_name

    @property
    def step_number(self) -> int:
        """Alias of ``step``."""
        return self.step

    @property
    def dependencies(self) -> DepsT:
        """Alias of ``deps`` (agentium's name)."""
        return self.deps

    @property
    def cancelled(self) -> bool:
        """True once the run was aborted: long-running sync tools should stop early."""
        return self.cancel_token.cancelled

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

    def forward_event(
        self, event: AgentEvent, *, agent_name: str, ancestry: tuple[str, ...] = ()
    ) -> None:
        """From inside a tool: forward an event of an agent run the tool started.

        It joins the run's stream as a ``subagent.event`` of this tool call, live (what
        ``Agent.as_tool`` does with its sub-agent's events). ``ancestry``: the agent names
        from the root run's agent down to ``agent_name``. Ignored elsewhere.
        """
        if self._sink is not None:
            self._sink.subagent(agent_name, event, ancestry)

    @overload
    async def call(
        self, key: str, fn: Callable[_P, Awaitable[T]], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> T: ...

    @overload
    async def call(
        self, key: str, fn: Callable[_P, T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> T: ...

    async def call(self, key: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` (sync or async) as an action on the oracle ``key``.

        With governance (an agent with policies, oracles or a budget) the work goes through
        the governor like the agent's own model and tool calls: the policies and limits of
        ``key`` and its ancestors (``api:market:alpaca`` inherits ``api:market`` and
        ``api``) are checked first, then ``fn`` runs, then its calls (and a result's
        ``usage`` or a limit's ``extract``) are counted. Without governance ``fn`` just
        runs.

        Raises:
            Denied: A policy refused the action; ``fn`` did not run
                (``bastion.governance.Denied``).
            PolicyExceeded: A limit of ``key`` is used up; ``fn`` did not run.
            InterruptRequired: A mutable limit or a policy needs a decision and the agent
                has no ``handle_interrupt`` (a tool cannot suspend mid-call).
        """
        work: Callable[[], Any] = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
        governed = self._governed
        if governed is not None:
            return await governed(key, work)
        result = work()
        if inspect.isawaitable(result):
            return await result
        return result

    def for_tool_call(
        self,
        tool_call_id: str,
        tool_name: str,
        sink: ToolProgressSink | None,
        idempotency_key: str | None = None,
        sandbox: bool | SandboxConfig | None = None,
        *,
        input_answer: Any = None,
    ) -> RunContext[DepsT]:
        """Return a copy bound to one tool call.

        ``sandbox`` is the tool's own setting; with the agent's it decides whether the
        call's ``runtime`` is sandboxed (the tool's wins, ``False`` turns it off).
        ``input_answer`` is the answer a resumed call asked for (see the attribute).
        """
        runtime = self.runtime
        if runtime is not None and (sandbox is not None or self.sandbox is not None):
            runtime = runtime.with_sandbox(resolve_sandbox(sandbox, self.sandbox))
        return replace(
            self,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            idempotency_key=idempotency_key,
            runtime=runtime,
            input_answer=input_answer,
            _sink=sink,
        )
