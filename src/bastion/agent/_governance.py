"""The agent's side of governance: one :class:`~bastion.governance.Governor` per agent.

``Agent`` builds an :class:`AgentGovernance` only when policies, oracles, a budget, an
interrupt handler or a governor are configured; otherwise ``RunScope.governance`` is
``None`` and no governance code runs. Model calls are actions on ``llm:<provider>:<model>``
(``ModelCall``), tool calls on ``tool:<name>`` (the tool gate's stage 0, through the
:class:`~bastion.tools.ToolGovernor` protocol this class implements).

Signals become ``governance.signal`` events of the run that caused them: a per-agent
listener appends each to its run's list, found by the signal's ``invocation_id`` (the run
id), so concurrent runs and tool tasks never mix; the loop drains them into the stream in
order. The few signals without an invocation (a decision applied on resume) go to the run
whose :meth:`RunGovernance.guard` is around the governor call.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

from bastion.core import GovernanceEvent
from bastion.governance import (
    Denied,
    InterruptRequired,
    PolicyExceeded,
    SuspendedInterrupt,
)
from bastion.tools import Ask, Deny, Mock

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from bastion.core import Model, ModelRequest, RunContext, ToolCall, Usage
    from bastion.governance import (
        Governor,
        Substitute,
    )
    from bastion.tools import Tool, ToolCallDecision

__all__ = [
    "GOVERNANCE_EVENTS",
    "AgentGovernance",
    "RunGovernance",
    "held_calls",
    "model_key",
]

GOVERNANCE_EVENTS = ("decisions", "all", "none")
"""What ``GovernanceOptions(events=...)`` accepts."""

_Signal = tuple[str, dict[str, object]]  # a signal's name and data, as the governor gave it
_SINK: ContextVar[tuple[AgentGovernance, list[_Signal]] | None] = ContextVar(
    "bastion_governance_sink", default=None
)
_T = TypeVar("_T")


def model_key(model: Model) -> str:
    """The oracle key of a model's calls: ``llm:<provider>:<name>``."""
    return f"llm:{model.key}"


def _nobody() -> None:
    return None


class AgentGovernance:
    """The agent's governor, its signal routing, and the tool gate's governance check."""

    __slots__ = (
        "__weakref__",
        "_children",
        "_extracts",
        "_last",
        "events",
        "governor",
        "node",
        "runs",
    )

    def __init__(self, governor: Governor, node: str, *, events: str = "decisions") -> None:
        self.governor = governor
        self.node = node
        self.events = events
        self._extracts: dict[str, bool] = {}  # tool key -> has a limit with an extract
        # The run that got the last signal (signals come in runs of the same run).
        self._last: tuple[str, Callable[[], RunGovernance | None]] = ("", _nobody)
        self.runs: weakref.WeakValueDictionary[str, RunGovernance] = weakref.WeakValueDictionary()
        self._children: dict[str, AgentGovernance] = {}  # sub-agents' governance (as_tool)
        if events != "none":  # "decisions": the governor skips the routine signals
            governor.subscribe_data(self._collect, routine=events == "all")

    def _collect(self, name: str, data: dict[str, object]) -> None:
        signal = (name, data)
        invocation = data.get("invocation_id")
        if isinstance(invocation, str) and invocation:
            last = self._last
            run = last[1]() if last[0] == invocation else None
            if run is None:
                run = self.runs.get(invocation)
            if run is not None:
                self._last = (invocation, run.ref)
                run.signals.append(signal)
                return
        sink = _SINK.get()
        if sink is not None and sink[0] is self:
            sink[1].append(signal)

    def open(
        self,
        run_id: str,
        *,
        invocation: str | None = None,
        ancestry: Sequence[str] = (),
        graph: str = "",
    ) -> RunGovernance:
        """The governance of one run (held by its scope).

        A sub-agent's run acts in its root run's ``invocation`` (so ``invocation`` windows
        cover the whole tree), below the agents of ``ancestry`` (root first).
        """
        run = RunGovernance(self, run_id, invocation=invocation, ancestry=ancestry, graph=graph)
        self.runs[run_id] = run
        return run

    # -- ToolGovernor -------------------------------------------------------------------

    async def check(
        self, tool: Tool, call: ToolCall, arguments: Mapping[str, object], ctx: RunContext[object]
    ) -> ToolCallDecision | None:
        """Check a call on its oracle key: deny, rate-limit, substitute or interrupt it.

        The key is ``tool:<name>``, or the tool's ``oracle_key`` (``agent:<name>`` for a
        sub-agent, whose name is then the action's ``target``).
        """
        run_id = ctx.run_id
        key = tool.oracle_key or f"tool:{tool.name}"
        governor = self.governor
        run = self.runs.get(run_id)
        invocation, ancestry = (run_id, ()) if run is None else (run.invocation, run.ancestry)
        graph = "" if run is None else run.graph
        target = key[6:] if tool.oracle_key is not None and key.startswith("agent:") else None
        try:
            # Counted when admitted, not when done: the calls of one step are all admitted
            # before any runs, and each must see the ones before it.
            substitute = await governor.check(
                key,
                input=dict(arguments),
                node=self.node,
                graph=graph,
                invocation=invocation,
                ancestry=ancestry,
                target=target,
                calls=1,
            )
        except InterruptRequired as exc:
            if run is not None:
                run.interrupted.append(
                    SuspendedInterrupt(interrupt=exc.interrupt, on="tool", tool_call_ids=(call.id,))
                )
            return Ask(reason=exc.interrupt.reason)
        except PolicyExceeded as exc:
            return Deny(f"Not run: {exc} Try again later.", kind="rate_limited")
        except Denied as exc:
            return Deny(f"Denied by policy: {exc.reason}")
        if substitute is not None:
            return Mock(substitute.value)
        return None

    async def record(
        self, tool: Tool, call: ToolCall, result: str, ctx: RunContext[object]
    ) -> None:
        """Feed a finished call's result to the ``extract`` limits of its oracle key."""
        key = tool.oracle_key or f"tool:{tool.name}"
        extracts = self._extracts.get(key)
        if extracts is None:
            extracts = self._extracts[key] = self.governor.counts_results(key, node=self.node)
        if extracts:
            run = self.runs.get(ctx.run_id)
            invocation, graph = (ctx.run_id, "") if run is None else (run.invocation, run.graph)
            await self.governor.record(
                key, result, calls=0, node=self.node, graph=graph, invocation=invocation
            )

    def for_child(self, name: str) -> AgentGovernance:
        """The governance of sub-agent ``name`` on this governor (made once, then kept).

        Its runs act as node ``name``; the parent passes their invocation and ancestry.
        """
        child = self._children.get(name)
        if child is None:
            child = self._children[name] = AgentGovernance(self.governor, name, events=self.events)
        return child


class RunGovernance:
    """One run's governed actions and the signals they produced, not yet in the stream."""

    __slots__ = (
        "__weakref__",
        "_key",
        "_model",
        "ancestry",
        "governor",
        "graph",
        "interrupted",
        "invocation",
        "node",
        "owner",
        "ref",
        "run_id",
        "signals",
    )

    def __init__(
        self,
        owner: AgentGovernance,
        run_id: str,
        *,
        invocation: str | None = None,
        ancestry: Sequence[str] = (),
        graph: str = "",
    ) -> None:
        self.owner = owner
        self.graph = graph  # the graph execution the run acts in ("" outside graphs)
        self.governor = owner.governor
        self.node = owner.node
        self.run_id = run_id
        # The invocation the run's actions count in: its own id, or its root run's.
        self.invocation = invocation or run_id
        self.ancestry = tuple(ancestry)  # agents above this run, root first
        self.signals: list[_Signal] = []
        # Interrupts raised by tool calls in the current step, moved to the state on suspend.
        self.interrupted: list[SuspendedInterrupt] = []
        self._model: Model | None = None
        self._key = ""
        self.ref = weakref.ref(self)

    def _model_key(self, model: Model) -> str:
        if model is not self._model:
            self._model, self._key = model, model_key(model)
        return self._key

    async def guard(self, action: Awaitable[_T]) -> _T:
        """Await a governor call, collecting its signals for this run."""
        token = _SINK.set((self.owner, self.signals))
        try:
            return await action
        finally:
            _SINK.reset(token)

    def drain(self, run_id: str) -> list[GovernanceEvent]:
        """The collected signals as events, in the order they happened."""
        signals = self.signals
        if not signals:
            return []
        events = [GovernanceEvent(run_id=run_id, signal=name, data=data) for name, data in signals]
        signals.clear()
        return events

    # The three below return the governor's coroutine instead of awaiting it: one frame
    # less on every model call and round.

    def check_model(self, model: Model, request: ModelRequest) -> Awaitable[Substitute | None]:
        """Check a model call before anything is sent (raises ``Denied`` & co.)."""
        governor = self.governor
        return governor.check(
            self._model_key(model),
            input=request,
            node=self.node,
            graph=self.graph,
            invocation=self.invocation,
            ancestry=self.ancestry,
            calls=1 if governor.counts_on_check else 0,  # shared stores: count when admitted
        )

    def record_model(self, model: Model, usage: Usage | None) -> Awaitable[None]:
        """Count a model call (its cost and tokens when it answered)."""
        governor = self.governor
        return governor.record(
            self._model_key(model),
            usage=usage,
            calls=0 if governor.counts_on_check else 1,
            node=self.node,
            graph=self.graph,
            invocation=self.invocation,
        )

    def begin_round(self, model: Model) -> Awaitable[None]:
        """Count one tool-call round against the model's ``rounds`` limits."""
        return self.governor.begin_round(
            self._model_key(model), node=self.node, graph=self.graph, invocation=self.invocation
        )

    async def call(self, key: str, work: Callable[[], object]) -> object:
        """Run a tool's ``ctx.call(key, fn)`` work through the governor, for this run."""
        return await self.governor.exec(
            key,
            work,
            node=self.node,
            graph=self.graph,
            invocation=self.invocation,
            ancestry=self.ancestry,
        )

    def take_interrupted(self) -> list[SuspendedInterrupt]:
        """The interrupts the step's tool calls raised (and forget them)."""
        interrupted, self.interrupted = self.interrupted, []
        return interrupted


def held_calls(interrupts: Sequence[SuspendedInterrupt]) -> set[str]:
    """The ids of the tool calls held by ``interrupts``."""
    return {i for item in interrupts for i in item.tool_call_ids}
