"""Handoffs: another agent taking the conversation over, as a ``transfer_to_<name>`` tool.

``Agent(handoffs=[billing, handoff(refunds, input_filter=...), "support"])`` builds one
tool per target (:func:`handoff_tool`). The tool passes the agent's gate like any other
(policies may deny ``tool:transfer_to_billing``; its arguments are validated and a bad one
goes back to the model as a tool error); its function only runs ``on_handoff``. The
transfer itself is done by the loop once the step's tools finished
(``steps/_handoff.py``): the target becomes the run's active agent. Targets named by a
string are looked up in an :class:`AgentRegistry` when the transfer happens, so agents may
hand off to each other in cycles, and a process resuming the run finds them by name.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bastion._lazy import lazy_module
from bastion.core import RunContext, RunError, UserError
from bastion.tools import ModelArgsValidator, Tool

from ._hooks import maybe_await

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bastion import filters
    from bastion.filters import HandoffInputFilterDescriptor

    from ._config import RunConfig
else:
    filters = lazy_module("bastion.filters")

__all__ = [
    "AgentRegistry",
    "Handoff",
    "HandoffError",
    "HandoffLimitExceeded",
    "HandoffTarget",
    "Handoffs",
    "OnHandoff",
    "UnknownHandoffTarget",
    "build_handoffs",
    "handoff",
    "handoff_of",
    "handoff_tool",
]

OnHandoff = Callable[[RunContext[Any], Any], "Awaitable[None] | None"]
"""Called as the transfer tool runs: ``(ctx, input)``; ``input`` is the validated
``input_type`` instance, or ``None`` without one."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_REASON = "Why the conversation is handed over (optional)."


class HandoffTarget(Protocol):
    """What a handoff needs of its target (``bastion.agent.Agent`` is one)."""

    @property
    def name(self) -> str:
        """The agent's name."""
        ...

    @property
    def config(self) -> RunConfig:
        """The agent's run configuration."""
        ...


_T = TypeVar("_T", bound=HandoffTarget)


class HandoffError(RunError):
    """A handoff could not happen; the run fails with ``code``."""

    code = "handoff_failed"


class UnknownHandoffTarget(HandoffError):
    """The target of a handoff is not in the agent registry."""

    code = "handoff_unknown_target"


class HandoffLimitExceeded(HandoffError):
    """The run already made ``max_handoffs`` handoffs."""

    code = "max_handoffs"


@dataclass(frozen=True, kw_only=True, slots=True)
class Handoff:
    """One handoff target of an agent, and how the conversation crosses to it.

    Build it with :func:`handoff`.
    """

    target: HandoffTarget | str
    tool_name: str
    description: str
    input_filter: HandoffInputFilterDescriptor | None = None
    input_type: type[BaseModel] | None = None
    on_handoff: OnHandoff | None = None
    boundary: HandoffInputFilterDescriptor = field(init=False, repr=False, compare=False)
    """The filter applied at the transfer: ``input_filter`` (or the default), then
    ``strip_reasoning``."""
    boundary_json: str = field(init=False, repr=False, compare=False)
    """``boundary`` as JSON (what the ``agent.handoff`` event and the journal record)."""

    def __post_init__(self) -> None:
        boundary = filters.compose(self.input_filter or filters.default_handoff_filter())
        object.__setattr__(self, "boundary", boundary)
        object.__setattr__(self, "boundary_json", filters.to_json(boundary))

    @property
    def target_name(self) -> str:
        """The name of the target agent."""
        return self.target if isinstance(self.target, str) else self.target.name


def handoff(
    agent: HandoffTarget | str,
    *,
    tool_name: str | None = None,
    description: str | None = None,
    input_filter: HandoffInputFilterDescriptor | None = None,
    input_type: type[BaseModel] | None = None,
    on_handoff: OnHandoff | None = None,
) -> Handoff:
    """A handoff to ``agent`` (an ``Agent``, or the name of one in the agent registry).

    Args:
        agent: The agent that takes over, or its name (looked up when the transfer happens).
        tool_name: The tool's name (default ``transfer_to_<name>``).
        description: What the model reads about the tool (default: the target's
            ``description``).
        input_filter: What of the conversation crosses (``bastion.filters``; default
            ``default_handoff_filter()``). ``strip_reasoning()`` always applies last.
        input_type: A pydantic model of arguments the model fills in when it hands off
            (validated; a bad argument goes back to the model as a tool error).
        on_handoff: Called with ``(ctx, input)`` as the transfer tool runs (sync or async).

    Raises:
        UserError: An option is invalid.
    """
    from pydantic import BaseModel

    if isinstance(agent, str):
        if not agent.strip():
            raise UserError("handoff() needs an agent or a non-empty agent name, got ''.")
        name, text = agent, ""
    elif isinstance(getattr(agent, "name", None), str) and hasattr(agent, "config"):
        name, text = agent.name, agent.config.description
    else:
        raise UserError(f"handoff() takes an Agent or an agent's name, got {agent!r}.")
    tool = tool_name if tool_name is not None else f"transfer_to_{_UNSAFE.sub('_', name)}"
    if not isinstance(tool, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", tool):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"handoff({name!r}) needs a tool name of 1-128 letters, digits, '.', '_' or '-'; "
            f"got {tool!r}."
        )
    if input_filter is not None and not filters.is_filter(input_filter):
        raise UserError(
            f"handoff({name!r}): input_filter must be a filter descriptor from bastion.filters "
            f"(filters.last_n(5), filters.compose(...)), got {input_filter!r}."
        )
    if input_type is not None and not (
        isinstance(input_type, type) and issubclass(input_type, BaseModel)  # pyright: ignore[reportUnnecessaryIsInstance]
    ):
        raise UserError(
            f"handoff({name!r}): input_type must be a pydantic BaseModel subclass, "
            f"got {input_type!r}."
        )
    if on_handoff is not None and not callable(on_handoff):
        raise UserError(f"handoff({name!r}): on_handoff must be a function of (ctx, input).")
    default = f"Hand the conversation over to the agent {name!r}" + (f": {text}" if text else ".")
    return Handoff(
        target=agent,
        tool_name=tool,
        description=description if description is not None else default,
        input_filter=input_filter,
        input_type=input_type,
        on_handoff=on_handoff,
    )


@cache
def _reason_validator() -> ModelArgsValidator:
    """Validates ``{"reason"?: str}``, the arguments of a handoff without ``input_type``."""
    from pydantic import BaseModel, ConfigDict, Field

    class HandoffReason(BaseModel):
        model_config = ConfigDict(extra="forbid")
        reason: str = Field(default="", description=_REASON)

    return ModelArgsValidator(HandoffReason, unpack=False)


class HandoffCall:
    """The function of a handoff tool: runs ``on_handoff``; the loop does the transfer."""

    __slots__ = ("spec",)

    def __init__(self, spec: Handoff) -> None:
        self.spec = spec

    async def __call__(self, ctx: RunContext[Any], args: Any) -> str:
        spec = self.spec
        if spec.on_handoff is not None:
            await maybe_await(spec.on_handoff(ctx, args if spec.input_type is not None else None))
        return f"Transferred to {spec.target_name!r}: it continues the conversation."


def handoff_tool(spec: Handoff) -> Tool:
    """The ``transfer_to_<name>`` tool of ``spec``."""
    validator = (
        _reason_validator()
        if spec.input_type is None
        else ModelArgsValidator(spec.input_type, unpack=False)
    )
    return Tool(
        name=spec.tool_name,
        description=spec.description,
        function=HandoffCall(spec),
        validator=validator,
        takes_ctx=True,
        side_effect_class="pure",  # the transfer is the run's own state, journaled by it
        label=f"handoff to {spec.target_name}",
        kind="async",
    )


def handoff_of(tool: Tool) -> Handoff | None:
    """The handoff a tool made by ``Agent(handoffs=...)`` transfers to, else ``None``."""
    call = tool.function
    return call.spec if isinstance(call, HandoffCall) else None


class AgentRegistry:
    """Agents by name, for handoffs that name their target (and for resuming such runs).

    Example::

        agents = AgentRegistry()
        routed = RunOptions(agent_registry=agents)
        triage = agents.add(Agent("triage", ..., handoffs=["billing"], run_options=routed))
        billing = agents.add(Agent("billing", ..., handoffs=["triage"], run_options=routed))
    """

    __slots__ = ("_agents",)

    def __init__(self, agents: Iterable[HandoffTarget] = ()) -> None:
        self._agents: dict[str, HandoffTarget] = {}
        for agent in agents:
            self.add(agent)

    def add(self, agent: _T) -> _T:
        """Register ``agent`` under its name; returns it.

        Raises:
            UserError: Another agent already has that name.
        """
        known = self._agents.get(agent.name)
        if known is not None and known is not agent:
            raise UserError(
                f"AgentRegistry already holds another agent named {agent.name!r}; give the "
                "agents distinct names."
            )
        self._agents[agent.name] = agent
        return agent

    def get(self, name: str) -> HandoffTarget | None:
        """The agent named ``name``, else ``None``."""
        return self._agents.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._agents

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents)

    def __len__(self) -> int:
        return len(self._agents)


@dataclass(frozen=True, kw_only=True, slots=True)
class Handoffs:
    """An agent's handoffs: the targets, the registry names resolve in, the run's limit."""

    specs: tuple[Handoff, ...]
    registry: AgentRegistry | None
    max_handoffs: int

    def target(self, spec: Handoff) -> HandoffTarget:
        """The agent ``spec`` hands off to.

        Raises:
            UnknownHandoffTarget: A named target the registry does not hold.
        """
        if not isinstance(spec.target, str):
            return spec.target
        found = self.registry.get(spec.target) if self.registry is not None else None
        if found is None:
            known = sorted(self.registry or ())
            raise UnknownHandoffTarget(
                f"Handoff target {spec.target!r} is not in the agent registry (it holds "
                f"{', '.join(map(repr, known)) or 'no agents'}). Register the agent with "
                "AgentRegistry.add() before the run hands off to it."
            )
        return found


def build_handoffs(
    name: str,
    handoffs: Sequence[HandoffTarget | Handoff | str],
    registry: AgentRegistry | None,
    max_handoffs: int,
) -> tuple[list[Tool], Handoffs | None]:
    """The tools and settings of ``Agent(handoffs=...)`` (``None``: the agent has none).

    Raises:
        UserError: A target is the agent itself, a name without a registry, or not an agent.
    """
    if isinstance(max_handoffs, bool) or not isinstance(max_handoffs, int) or max_handoffs < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"Agent {name!r}: run_options.max_handoffs must be an integer >= 1, "
            f"got {max_handoffs!r}."
        )
    if registry is not None and not isinstance(registry, AgentRegistry):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"Agent {name!r}: run_options.agent_registry must be an AgentRegistry, "
            f"got {registry!r}."
        )
    if not handoffs:
        return [], None
    specs = tuple(item if isinstance(item, Handoff) else handoff(item) for item in handoffs)
    for spec in specs:
        if spec.target_name == name:
            raise UserError(f"Agent {name!r} cannot hand off to itself: remove it from handoffs.")
        if isinstance(spec.target, str) and registry is None:
            raise UserError(
                f"Agent {name!r} hands off to {spec.target!r} by name: pass "
                "run_options=RunOptions(agent_registry=AgentRegistry(...)) holding that agent "
                "(or pass the Agent)."
            )
    return [handoff_tool(spec) for spec in specs], Handoffs(
        specs=specs, registry=registry, max_handoffs=max_handoffs
    )


def find_agent(root: RunConfig, name: str) -> RunConfig | None:
    """The config of the agent ``name`` reachable from ``root`` through handoffs, else None.

    A resuming process starts from the run's own agent and follows its handoffs (agents,
    and names in their registries) to the agent that was active.
    """
    if root.name == name:
        return root
    seen = {root.name}
    queue = [root]
    while queue:
        config = queue.pop(0)
        handoffs = config.handoffs
        if handoffs is None:
            continue
        for spec in handoffs.specs:
            try:
                target = handoffs.target(spec).config
            except UnknownHandoffTarget:
                continue
            if target.name == name:
                return target
            if target.name not in seen:
                seen.add(target.name)
                queue.append(target)
    return None
