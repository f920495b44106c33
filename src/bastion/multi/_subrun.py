"""Running a sub-agent inside its parent's tool call (``Agent.as_tool``).

:class:`SubagentCall` is the function of the tool ``as_tool`` builds. When the parent's
model calls it, the child runs with only the given input (plus the history an
``input_filter`` builds from the parent's messages), with the parent's deps, session, user
and tenant, but none of the parent's other state. What it inherits from the parent's
*run* (found by run id, :func:`~bastion.agent._scope.live_scope`):

- governance: under a governed parent the child's model and tool calls go through the
  parent's governor as node ``<child name>``, below the parent in the ancestry, counted in
  the root run's invocation (so ``invocation`` windows cover the whole tree);
- approvals: the parent's ``on_approval`` when the child has none;
- the store: the parent's, when the child has none (the child's run is journaled as its
  own run, linked to the parent by ``metadata``);
- aborts: the parent's abort requests (hard or drain) go to the child's run.

The child's events reach the parent's stream live as ``subagent.event``; its usage joins
the parent's (the result's ``usage``); a child that read untrusted content taints the result.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from bastion.agent._capability import Capability, ReadOnlyCatalog, granted_vault
from bastion.agent._causality import TAINT, CausalityMode, CausalMonitor, taint_of
from bastion.agent._scope import (
    ANCESTRY,
    GRAPH,
    INVOCATION,
    PARENT_AGENT,
    PARENT_RUN_ID,
    PARENT_TOOL_CALL_ID,
    RunScope,
    live_scope,
)
from bastion.agent._slice import BudgetSlice
from bastion.core import (
    AgentEvent,
    AssistantMessage,
    Message,
    RunContext,
    SubagentEvent,
    SystemMessage,
    TextCompleteEvent,
    TextDeltaEvent,
    ToolMessage,
    UserError,
    UserMessage,
)
from bastion.tools import Directive, Tool, ToolError, ToolResult, render_output

from ._child import ChildRun, run_child

if TYPE_CHECKING:
    from bastion.agent._config import RunConfig
    from bastion.agent._governance import AgentGovernance
    from bastion.agent._result import RunResult
    from bastion.agent._state import RunState
    from bastion.agent._stream import AgentStream
    from bastion.security import SecretInheritance
    from bastion.stores import Stores

__all__ = [
    "ANCESTRY",
    "check_subagents",
    "subagent_of",
    "Delegate",
    "EXPOSE_TURNS",
    "FORWARD_EVENTS",
    "GRAPH",
    "INVOCATION",
    "PARENT_AGENT",
    "PARENT_RUN_ID",
    "PARENT_TOOL_CALL_ID",
    "ExposeTurns",
    "ForwardEvents",
    "InputFilter",
    "SubagentCall",
]

ExposeTurns: TypeAlias = Literal["final", "all", "none"]
ForwardEvents: TypeAlias = Literal["all", "lifecycle", "none"]
InputFilter: TypeAlias = Callable[
    [list[Message]], "Sequence[Message] | Awaitable[Sequence[Message]]"
]
EXPOSE_TURNS: tuple[str, ...] = ("final", "all", "none")
FORWARD_EVENTS: tuple[str, ...] = ("all", "lifecycle", "none")


# What ``forward_events="lifecycle"`` leaves out: the pieces, keeping the milestones.
_PIECES = frozenset(
    {
        "text.delta",
        "reasoning.delta",
        "tool.call.delta",
        "tool.execute.progress",
        "tool.execute.partial",
    }
)
_MESSAGE_TYPES = (SystemMessage, UserMessage, AssistantMessage, ToolMessage)


class Delegate(Protocol):
    """What a sub-agent call needs of its agent (``bastion.agent.Agent`` is one).

    Any ``Agent[DepsT, OutputT]`` is one: ``deps`` (the parent run's, passed on unchecked)
    and the stream's output type stay ``Any``, the one spelling every agent's matches.
    """

    @property
    def config(self) -> RunConfig:
        """The agent's run configuration, as it is now."""
        ...

    def stream(
        self,
        input: str | RunState,
        *,
        message_history: Sequence[Message] | None = None,
        deps: Any = None,
        session_id: str | None = None,
        user_id: str | None = None,
        tenant_id: str | None = None,
        metadata: dict[str, object] | None = None,
        directive: Directive | None = None,
        config: RunConfig | None = None,
        run_id: str | None = None,
    ) -> AgentStream[Any]:
        """Start a run with ``config`` (default: the agent's), or resume a ``RunState``."""
        ...

    def resume_stream(
        self,
        run_id: str,
        *,
        directive: Directive | None = None,
        deps: Any = None,
        config: RunConfig | None = None,
    ) -> AgentStream[Any]:
        """Continue the journaled run ``run_id`` with ``config``."""
        ...

    async def stores(self) -> Stores:
        """The agent's store, opened."""
        ...


class SubagentCall:
    """The function of a tool made by ``Agent.as_tool``: runs the child for one call."""

    __slots__ = (
        "agent",
        "budget",
        "capability",
        "causality",
        "expose_turns",
        "forward_events",
        "input_filter",
        "secrets",
        "text_progress",
    )

    def __init__(
        self,
        agent: Delegate,
        *,
        expose_turns: ExposeTurns,
        forward_events: ForwardEvents,
        input_filter: InputFilter | None,
        capability: Capability = "full",
        secrets: SecretInheritance | None = None,
        text_progress: bool = False,
        budget: BudgetSlice | None = None,
        causality: CausalityMode = "off",
    ) -> None:
        self.agent = agent
        self.expose_turns = expose_turns
        self.forward_events = forward_events
        self.input_filter = input_filter
        self.capability = capability
        self.secrets = secrets
        self.text_progress = text_progress
        self.budget = budget
        self.causality = causality

    def check_toolset(
        self, owner: str, tools: Mapping[str, Tool], governance: AgentGovernance | None
    ) -> None:
        """Refuse sub-agents that cannot work under agent ``owner`` (:func:`check_subagents`).

        Raises:
            UserError: See :func:`check_subagents`.
        """
        check_subagents(owner, tools, governance)

    def __repr__(self) -> str:
        return f"SubagentCall({self.agent.config.name!r})"

    async def __call__(self, ctx: RunContext[object], input: str) -> ToolResult:
        """Run the child on ``input`` and return what the parent's model reads.

        Raises:
            ToolError: The child failed or was aborted (the parent's model reads why).
            InputRequired: The child suspended for a decision: the parent's call waits
                for it, and the parent suspends too (``_child.py``).
        """
        parent = live_scope(ctx.run_id)
        config = self.config_for(parent)
        history = await self.history(ctx) if self.input_filter is not None else None
        child = ChildRun(
            agent=self.agent,
            config=config,
            input=input,
            history=history,
            metadata=self._child_metadata(ctx, parent),
        )
        texts: list[str] = []
        if self.forward_events == "none" and self.expose_turns != "all" and not self.text_progress:
            result = await run_child(child, ctx, parent, None)  # nobody needs the events
        else:
            ancestry = (*_ancestry(ctx, parent), config.name)
            relay = self._relay(ctx, texts, config.name, ancestry)
            result = await run_child(child, ctx, parent, relay)
        await _account(parent, config.name, result)
        return self.shaped(result, texts)

    def _relay(
        self, ctx: RunContext[object], texts: list[str], name: str, ancestry: tuple[str, ...]
    ) -> Callable[[AgentEvent], None]:
        """What sees each child event: forward it, keep the text of each turn."""
        forwarding = self.forward_events
        progress = self.text_progress
        written = 0

        def relay(event: AgentEvent) -> None:
            nonlocal written
            if isinstance(event, TextCompleteEvent) and event.text:
                texts.append(event.text)
            elif progress and isinstance(event, TextDeltaEvent):
                written += len(event.delta)  # the child's text, as the call's progress
                ctx.report_progress(written, None, event.delta)
            if forwarding == "all" or (forwarding == "lifecycle" and _milestone(event)):
                ctx.forward_event(event, agent_name=name, ancestry=ancestry)

        return relay

    def config_for(self, parent: RunScope | None) -> RunConfig:
        """The child's configuration as it runs under ``parent``'s run (derived if it differs).

        Raises:
            ToolError: The parent cannot grant the secrets it names (it has no vault).
        """
        config = self._governed(parent)
        if self.capability == "read_only" and not isinstance(config.catalog, ReadOnlyCatalog):
            catalog = ReadOnlyCatalog(config.catalog)
            config = replace(config, catalog=catalog, tools=catalog.current())
        if self.budget is not None:
            config = replace(config, allowance=self.budget)
        grant = self.secrets
        if grant is not None:
            host = parent.config.security if parent is not None else None
            try:
                vault = granted_vault(grant, host.vault if host is not None else None, config.name)
            except UserError as exc:
                raise ToolError(str(exc)) from exc
            executor = config.executor.with_gate(config.executor.gate)
            executor.vault = vault
            config = replace(config, executor=executor)
        if self.causality == "enforce":
            gate = config.executor.gate.with_first_hook(CausalMonitor())
            config = replace(config, executor=config.executor.with_gate(gate))
        return config

    def _child_metadata(
        self, ctx: RunContext[object], parent: RunScope | None
    ) -> dict[str, object]:
        """The child run's metadata: its links to the parent, and the taint it inherits."""
        metadata = _metadata(ctx, parent)
        if self.causality != "off":
            seen = parent is not None and parent.state.untrusted_seen
            taint = taint_of(ctx, seen)
            if taint:
                metadata[TAINT] = taint
        return metadata

    def _governed(self, parent: RunScope | None) -> RunConfig:
        """The child's configuration with its parent's governance, approvals and store."""
        child = self.agent.config
        if parent is None:
            return child
        host = parent.config
        governance = child.governance
        run_governance = parent.governance
        if run_governance is not None and (
            governance is None or governance.governor is not run_governance.governor
        ):
            governance = run_governance.owner.for_child(child.name)
        gate = child.executor.gate
        approval = gate.approval
        asker = host.executor.gate.approval
        if approval.on_approval is None and asker.on_approval is not None:
            approval = replace(
                approval,
                on_approval=asker.on_approval,
                timeout=asker.timeout,
                timeout_action=asker.timeout_action,
            )
        store = child.store if child.store is not None else host.store
        if governance is child.governance and approval is gate.approval and store is child.store:
            return child
        executor = child.executor.with_gate(gate.with_approval(approval, governance))
        return replace(child, governance=governance, store=store, executor=executor)

    async def history(self, ctx: RunContext[object]) -> list[Message]:
        """The messages ``input_filter`` picks from the parent's finished turns."""
        messages = list(ctx.messages)
        last = messages[-1] if messages else None
        if isinstance(last, AssistantMessage) and last.tool_calls:
            messages.pop()  # the turn making this call has no results yet
        assert self.input_filter is not None  # checked by the caller
        picked = self.input_filter(messages)
        if inspect.isawaitable(picked):
            picked = await picked
        chosen = list(picked)
        for message in chosen:
            if not isinstance(message, _MESSAGE_TYPES):
                raise ToolError(
                    f"input_filter of sub-agent {self.agent.config.name!r} returned {message!r}, "
                    "not a message; return a list of bastion.core messages."
                )
        return chosen

    def shaped(
        self, result: RunResult[object], texts: list[str], *, untrusted: bool | None = None
    ) -> ToolResult:
        """What the parent's model reads, per ``expose_turns``; an error for failed runs.

        ``untrusted``: whether the child read untrusted content (default: its state says).
        """
        name = self.agent.config.name
        usage = dict(result.usage_by_model)
        if untrusted is None:
            state = result.state
            untrusted = state is not None and state.untrusted_seen
        status = result.status
        if status == "failed":
            error = result.error
            why = f"{error.code}: {error.message}" if error is not None else "unknown error"
            raise ToolError(f"Sub-agent {name!r} failed ({why}).", untrusted=untrusted, usage=usage)
        if status == "aborted":
            raise ToolError(
                f"Sub-agent {name!r} was aborted before it finished.",
                kind="aborted",
                untrusted=untrusted,
                usage=usage,
            )
        if self.expose_turns == "none":
            text = f"Sub-agent {name!r} finished."
        elif self.expose_turns == "all":
            text = "\n\n".join(texts)
        else:
            text = result.text if result.output is None else render_output(result.output)
        if status == "stopped":
            text = f"{text}\n\n(Sub-agent {name!r} stopped early: {result.stop_reason}.)".lstrip()
        return ToolResult(output=text, untrusted=untrusted, usage=usage)


def _milestone(event: AgentEvent) -> bool:
    while isinstance(event, SubagentEvent):
        event = event.event
    return event.type not in _PIECES


def _ancestry(ctx: RunContext[object], parent: RunScope | None) -> list[str]:
    """The agents above the child: the parent's ancestry, then the parent."""
    above: Sequence[str] = ()
    if parent is not None:
        above = parent.state.metadata.get(ANCESTRY) or ()
    return [*above, ctx.agent_name]


def _metadata(ctx: RunContext[object], parent: RunScope | None) -> dict[str, object]:
    """The child run's links to its parent (journaled with it)."""
    metadata: dict[str, object] = {
        PARENT_RUN_ID: ctx.run_id,
        PARENT_AGENT: ctx.agent_name,
        PARENT_TOOL_CALL_ID: ctx.tool_call_id,
        ANCESTRY: _ancestry(ctx, parent),
    }
    if parent is not None and parent.governance is not None:
        metadata[INVOCATION] = parent.governance.invocation
        if parent.governance.graph:
            metadata[GRAPH] = parent.governance.graph
    return metadata


async def _account(parent: RunScope | None, name: str, result: RunResult[object]) -> None:
    """Count what the child spent against ``agent:<name>`` (its call was counted at admission)."""
    governance = parent.governance if parent is not None else None
    if governance is None:
        return
    await governance.governor.record(
        f"agent:{name}",
        usage=result.usage,
        calls=0,
        node=governance.node,
        graph=governance.graph,
        invocation=governance.invocation,
    )


def subagent_of(tool: Tool) -> Delegate | None:
    """The agent a tool made by ``as_tool`` runs, else ``None``."""
    call = tool.function
    return call.agent if isinstance(call, SubagentCall) else None


def check_subagents(
    name: str, tools: Mapping[str, Tool], governance: AgentGovernance | None
) -> None:
    """Refuse sub-agents that cannot work under agent ``name``.

    Raises:
        UserError: A sub-agent is the agent itself (or runs it further down), two
            different sub-agents share a name (one ``agent:<name>`` key), or a sub-agent
            has its own governor while the parent has another.
    """
    seen: dict[str, Delegate] = {}
    for tool in tools.values():
        delegate = subagent_of(tool)
        if delegate is None:
            continue
        child = delegate.config
        if child.name == name or name in _names_below(delegate):
            raise UserError(
                f"Agent {name!r} cannot run itself as a sub-agent: tool {tool.name!r} runs "
                f"agent {child.name!r}, which is (or runs) an agent named {name!r}. Give "
                "the agents distinct names."
            )
        other = seen.setdefault(child.name, delegate)
        if other is not delegate:
            raise UserError(
                f"Agent {name!r} has two different sub-agents named {child.name!r}; both "
                f"would be governed as 'agent:{child.name}'. Rename one of them."
            )
        if (
            governance is not None
            and child.governance is not None
            and child.governance.governor is not governance.governor
        ):
            raise UserError(
                f"Agent {name!r} and its sub-agent {child.name!r} have different governors. "
                "A governed parent governs its sub-agents' calls: configure the child's "
                "policies on the parent (e.g. GovernanceOptions(oracles={'agent:"
                + child.name
                + "': [...]}), node_policies), or share one Governor "
                "(GovernanceOptions(governor=...)) between both."
            )


def _names_below(agent: Delegate, depth: int = 0) -> set[str]:
    """Names of every agent ``agent`` runs through its sub-agent tools, transitively."""
    names: set[str] = set()
    for tool in agent.config.tools.by_name.values():
        child = subagent_of(tool)
        if child is not None and depth < 64:  # built bottom-up, so no cycle can occur
            names.add(child.config.name)
            names |= _names_below(child, depth + 1)
    return names
