"""``as_tool(agent)``: an agent offered to another agent's model as a tool.

Builds the :class:`~bastion.tools.Tool` (its schema ``{"input": str}``, its side-effect
class, its governance key ``agent:<name>``) around a :class:`~bastion.multi._subrun.SubagentCall`,
which runs the child when the parent's model calls it. :func:`check_subagents` is called
by ``Agent.__init__`` (through the call's ``check_toolset``) to refuse sub-agent
configurations that cannot work.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import cache
from typing import TYPE_CHECKING

from bastion.agent._capability import (
    CAPABILITIES,
    SECRETS_MODES,
    VAULT_MODES,
    Capability,
    SecretsMode,
)
from bastion.agent._causality import CAUSALITY_MODES, CausalityMode
from bastion.agent._slice import BudgetSlice
from bastion.core import UserError
from bastion.governance import key_ancestry
from bastion.security import SecretInheritance
from bastion.tools import ModelArgsValidator, Tool

from ._subrun import (
    EXPOSE_TURNS,
    FORWARD_EVENTS,
    Delegate,
    ExposeTurns,
    ForwardEvents,
    InputFilter,
    SubagentCall,
    check_subagents,
)

if TYPE_CHECKING:
    from bastion.agent._config import RunConfig
    from bastion.security import SecretInheritance
    from bastion.tools import SideEffectClass

    from ._subrun import (
        ExposeTurns,
        ForwardEvents,
        InputFilter,
    )

__all__ = ["as_tool", "check_subagents", "subagent_tool"]

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


def as_tool(
    agent: Delegate,
    name: str | None = None,
    description: str | None = None,
    *,
    expose_turns: ExposeTurns = "final",
    forward_events: ForwardEvents = "all",
    input_filter: InputFilter | None = None,
    side_effect_class: SideEffectClass | None = None,
    capability: Capability = "full",
    secrets: SecretsMode = "inherit_allowlist",
    inherit_secrets: Sequence[str] = (),
    text_progress: bool = False,
    budget: BudgetSlice | None = None,
    causality: CausalityMode = "off",
) -> Tool:
    """``agent`` as a tool another agent's model can call: a sub-agent .

    The model calls it with ``{"input": "<task>"}``. The sub-agent runs on that input
    alone (no parent history unless ``input_filter`` builds some), with the parent
    run's deps, session id, user and tenant, and none of its other state (no session
    state, no metadata, no secrets). Its events reach the parent's stream live as
    ``subagent.event``; its usage adds to the parent run's; under a governed parent
    the call is an action on ``agent:<name>`` and the sub-agent's own calls are
    governed by the parent's governor below it. See ``docs/multi-agent.md``.

    Args:
        agent: The sub-agent (an ``Agent``).
        name: The tool's name (default: the agent's name).
        description: What the parent's model reads about it (default: the agent's
            ``description``).
        expose_turns: What the parent's model gets back: ``final`` (the answer),
            ``all`` (the text of every turn, in order) or ``none`` (only that it
            finished).
        forward_events: Which of the sub-agent's events join the parent's stream:
            ``all``, ``lifecycle`` (not the text, reasoning and argument pieces) or
            ``none``.
        input_filter: Builds the sub-agent's history from the parent's finished
            turns (a function of the message list, sync or async).
        side_effect_class: Overrides the derived class (``read_only`` when every
            tool of the agent is ``pure`` or ``read_only``, else ``side_effecting``).
        capability: ``read_only`` leaves out the sub-agent's tools that may change
            something (and handoffs): its model is not shown them, and a call to one
            is refused (``capability_blocked``). ``full`` (default): all its tools.
        secrets: How the sub-agent gets the parent's secrets: ``inherit_allowlist``
            (the parent's vault, limited to ``inherit_secrets``), ``forward_explicit``
            (their values when the sub-agent starts) or ``isolated`` (none).
        inherit_secrets: The names of the parent's secrets it gets (default: none).
        text_progress: Also report the sub-agent's text as the call's progress
            (``tool.execute.progress`` events, one per text piece).
        budget: The sub-agent's slice of the budget (:class:`BudgetSlice`: tokens,
            tool calls, seconds, dollars); a spent slice stops it cleanly.
        causality: ``record`` journals, with the sub-agent's run, which agents above
            it had read untrusted content when the task was delegated
            (:func:`bastion.agent.causal_chain` walks it); ``enforce`` also refuses the
            sub-agent's side-effecting calls when that chain, or its own run, holds
            untrusted content (``dataflow_policy_blocked``). ``off`` (default): neither.

    Raises:
        UserError: An option is invalid.
    """
    return subagent_tool(
        agent,
        name=name,
        description=description,
        expose_turns=expose_turns,
        forward_events=forward_events,
        input_filter=input_filter,
        side_effect_class=side_effect_class,
        capability=capability,
        secrets=secrets,
        inherit_secrets=inherit_secrets,
        text_progress=text_progress,
        budget=budget,
        causality=causality,
    )


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
    _one_of(owner, "expose_turns", expose_turns, EXPOSE_TURNS)
    _one_of(owner, "forward_events", forward_events, FORWARD_EVENTS)
    if input_filter is not None and not callable(input_filter):
        raise UserError(f"{owner}: input_filter must be a function of the parent's messages.")
    if side_effect_class is not None:
        _one_of(owner, "side_effect_class", side_effect_class, _SIDE_EFFECT_CLASSES)
    _one_of(owner, "capability", capability, CAPABILITIES)
    grant = _secrets_grant(owner, config, secrets, inherit_secrets)
    if budget is not None and not isinstance(budget, BudgetSlice):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: budget must be a BudgetSlice, got {budget!r}.")
    _one_of(owner, "causality", causality, CAUSALITY_MODES)

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


def _one_of(owner: str, option: str, value: object, allowed: Collection[str]) -> None:
    """Refuse ``value`` for ``option`` unless it is one of ``allowed``."""
    if value not in allowed:
        choices = ", ".join(map(repr, allowed))
        raise UserError(f"{owner}: {option} must be one of {choices}, got {value!r}.")


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
