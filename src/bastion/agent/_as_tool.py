"""``Agent.as_tool``: an agent offered to another agent's model as a tool.

Builds the :class:`~bastion.tools.Tool` (its schema ``{"input": str}``, its side-effect
class, its governance key ``agent:<name>``) around a :class:`~bastion.agent._subrun.SubagentCall`,
which runs the child when the parent's model calls it. :func:`check_subagents` is called
by ``Agent.__init__`` to refuse sub-agent configurations that cannot work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

from bastion.core import UserError
from bastion.tools import ModelArgsValidator, Tool

from ._capability import CAPABILITIES, SECRETS_MODES, VAULT_MODES, Capability, SecretsMode
from ._causality import CAUSALITY_MODES, CausalityMode
from ._slice import BudgetSlice
from ._subrun import (
    EXPOSE_TURNS,
    FORWARD_EVENTS,
    Delegate,
    ExposeTurns,
    ForwardEvents,
    InputFilter,
    SubagentCall,
)

if TYPE_CHECKING:
    from bastion.security import SecretInheritance
    from bastion.tools import SideEffectClass

    from ._config import RunConfig
    from ._governance import AgentGovernance
    from ._subrun import (
        ExposeTurns,
        ForwardEvents,
        InputFilter,
    )

__all__ = ["check_subagents", "subagent_tool"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_INPUT_DESCRIPTION = (
    "The task, with everything the sub-agent needs to know: it does not see this conversation."
)


@cache
def _input_validator() -> ModelArgsValidator:
    """Validates ``{"input": str}`` (built on first use: pydantic loads only then)."""
    from pydantic import BaseModel, ConfigDict, Field

    class SubagentInput(BaseModel):
        model_config = ConfigDict(extra="forbid")
        input: str = Field(description=_INPUT_DESCRIPTION)

    return ModelArgsValidator(SubagentInput, unpack=True)


_SIDE_EFFECT_CLASSES = ("pure", "read_only", "side_effecting", "external_stateful")


def subagent_tool(
    agent: Delegate,
    *,
    name: str | None,
    description: str | None,
    expose_turns: ExposeTurns,
    forward_events: ForwardEvents,
    input_filter: InputFilter | None,
    side_effect_class: SideEffectClass | None,
    capability: Capability = "full",
    secrets: SecretsMode = "inherit_allowlist",
    inherit_secrets: Sequence[str] = (),
    text_progress: bool = False,
    budget: BudgetSlice | None = None,
    causality: CausalityMode = "off",
) -> Tool:
    """The tool that runs ``agent`` as a sub-agent (see ``Agent.as_tool``).

    Raises:
        UserError: An option is invalid (nothing has been run).
    """
    config = agent.config
    tool_name = config.name if name is None else name
    owner = f"Agent {config.name!r}: as_tool()"
    if not isinstance(tool_name, str) or not _TOOL_NAME.match(tool_name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"{owner} needs a tool name of 1-128 letters, digits, '.', '_' or '-'; got "
            f"{tool_name!r}. Pass as_tool(name='...')."
        )
    if expose_turns not in EXPOSE_TURNS:
        raise UserError(
            f"{owner}: expose_turns must be one of {', '.join(map(repr, EXPOSE_TURNS))}, "
            f"got {expose_turns!r}."
        )
    if forward_events not in FORWARD_EVENTS:
        raise UserError(
            f"{owner}: forward_events must be one of {', '.join(map(repr, FORWARD_EVENTS))}, "
            f"got {forward_events!r}."
        )
    if input_filter is not None and not callable(input_filter):
        raise UserError(f"{owner}: input_filter must be a function of the parent's messages.")
    if side_effect_class is not None and side_effect_class not in _SIDE_EFFECT_CLASSES:
        raise UserError(
            f"{owner}: side_effect_class must be one of "
            f"{', '.join(map(repr, _SIDE_EFFECT_CLASSES))}, got {side_effect_class!r}."
        )
    if capability not in CAPABILITIES:
        raise UserError(
            f"{owner}: capability must be one of {', '.join(map(repr, CAPABILITIES))}, "
            f"got {capability!r}."
        )
    grant = _secrets_grant(owner, config, secrets, inherit_secrets)
    if budget is not None and not isinstance(budget, BudgetSlice):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: budget must be a BudgetSlice, got {budget!r}.")
    if causality not in CAUSALITY_MODES:
        raise UserError(
            f"{owner}: causality must be one of {', '.join(map(repr, CAUSALITY_MODES))}, "
            f"got {causality!r}."
        )
    from bastion.governance import key_ancestry  # governance loads when an agent uses it

    oracle_key = f"agent:{config.name}"
    key_ancestry(oracle_key)  # a name the governor cannot key raises UserError here
    text = description if description is not None else config.description
    return Tool(
        name=tool_name,
        description=text or f"Delegate a task to the agent {config.name!r}.",
        function=SubagentCall(
            agent,
            expose_turns=expose_turns,
            forward_events=forward_events,
            input_filter=input_filter,
            capability=capability,
            secrets=grant,
            text_progress=text_progress,
            budget=budget,
            causality=causality,
        ),
        validator=_input_validator(),
        takes_ctx=True,
        side_effect_class=side_effect_class or derived_side_effect_class(agent),
        label=f"sub-agent {config.name}",
        kind="async",
        oracle_key=oracle_key,
        idempotency_key=_child_key,
    )


def _child_key(arguments: dict[str, object]) -> str:
    """A sub-agent call runs again by continuing its child's run (``_child.py``): idempotent."""
    del arguments  # the child's run id, derived from the call, is the real key
    return "child-run"


def _secrets_grant(
    owner: str, config: RunConfig, mode: SecretsMode, names: Sequence[str]
) -> SecretInheritance | None:
    """The secrets the parent grants, checked; ``None`` when it grants none.

    Raises:
        UserError: An unknown mode, names with ``isolated``, a name that is not a string,
            or names granted to a child that has its own vault.
    """
    if mode not in SECRETS_MODES:
        raise UserError(
            f"{owner}: secrets must be one of {', '.join(map(repr, SECRETS_MODES))}, got {mode!r}."
        )
    if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
        raise UserError(f"{owner}: inherit_secrets must be a list of secret names, got {names!r}.")
    if not names:
        return None
    if mode == "isolated":
        raise UserError(f"{owner}: secrets='isolated' grants nothing; drop inherit_secrets.")
    if config.security is not None and config.security.vault is not None:
        raise UserError(
            f"{owner}: agent {config.name!r} has its own vault; it cannot also be granted the "
            "parent's secrets. Put what it needs in its vault and use secrets='isolated', or "
            "drop its vault."
        )
    from bastion.security import SecretInheritance  # loaded when a sub-agent is granted some

    return SecretInheritance(mode=VAULT_MODES[mode], names=tuple(names))


def derived_side_effect_class(agent: Delegate) -> SideEffectClass:
    """``read_only`` when every tool of ``agent`` is ``pure`` or ``read_only``.

    Such a sub-agent may run again after a crash (the journal's side-effect ledger);
    anything else it can do to the world makes the whole sub-agent ``side_effecting``.
    """
    safe = ("pure", "read_only")
    if all(tool.side_effect_class in safe for tool in agent.config.tools.by_name.values()):
        return "read_only"
    return "side_effecting"


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
