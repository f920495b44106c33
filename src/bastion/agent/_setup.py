"""Building an ``Agent``: hook flags, and the validated parts its constructor assembles.

Every check here runs in ``Agent.__init__``, so a bad configuration raises ``UserError``
before any run (or any side effect) can start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bastion import context, governance, providers, stores, tools
from bastion._lazy import lazy_module
from bastion.core import Model, UserError

from ._governance import GOVERNANCE_EVENTS, AgentGovernance
from ._hooks import AgentHooks, LoopHooks, overridden
from ._options import GovernanceOptions

if TYPE_CHECKING:
    # Compaction, code mode, governance and stores load when an agent uses them.
    from bastion.context import ContextConfig, Suggestions
    from bastion.core import Clock
    from bastion.governance import Budget, Policy
    from bastion.stores import Stores
    from bastion.tools import ApprovalConfig, CodeMode, CodeModeConfig, Tool

    from . import _context, _suggest
    from ._config import RunConfig
    from ._context import ContextKeeper
    from ._suggest import Suggester
else:
    _context = lazy_module("bastion.agent._context")
    _suggest = lazy_module("bastion.agent._suggest")

__all__ = [
    "HookFlags",
    "build_code_mode",
    "build_context",
    "build_governance",
    "build_store",
    "build_suggester",
    "check_positive",
    "resolve_model",
]

_DEFAULT_GOVERNANCE = GovernanceOptions()


@dataclass(kw_only=True, slots=True, frozen=True)
class HookFlags:
    """Which hook methods are overridden; the loop skips the others at no cost."""

    before_run: bool = False
    after_run: bool = False
    on_tool_call: bool = False
    on_error: bool = False
    prepare_step: bool = False
    before_llm_call: bool = False
    after_llm_call: bool = False
    before_tool_exec: bool = False
    after_tool_exec: bool = False
    on_roundtrip_complete: bool = False

    @property
    def any_tool_hook(self) -> bool:
        """True when any hook intercepts tool calls."""
        return self.on_tool_call or self.before_tool_exec or self.after_tool_exec

    @classmethod
    def of(cls, hooks: AgentHooks | None, loop_hooks: LoopHooks | None) -> HookFlags:
        """Inspect hook objects."""
        agent_names = ("before_run", "after_run", "on_tool_call", "on_error")
        loop_names = (
            "prepare_step",
            "before_llm_call",
            "after_llm_call",
            "before_tool_exec",
            "after_tool_exec",
            "on_roundtrip_complete",
        )
        flags = {n: overridden(hooks, AgentHooks, n) for n in agent_names}
        flags.update({n: overridden(loop_hooks, LoopHooks, n) for n in loop_names})
        return cls(**flags)


def build_context(config: ContextConfig | None, model: Model, name: str) -> ContextKeeper | None:
    """The agent's compaction settings for ``model`` (``None`` without a config)."""
    if config is None:
        return None
    if not isinstance(config, context.ContextConfig):
        raise UserError(f"Agent {name!r}: context must be a ContextConfig, got {config!r}.")
    given = config.summarizer
    summarizer = model if given is None else resolve_model(given, "context summarizer")
    return _context.ContextKeeper(config, model, summarizer, f"Agent {name!r}")


def build_suggester(config: Suggestions | None, model: Model, name: str) -> Suggester | None:
    """The agent's follow-up suggestions for ``model`` (``None``: off)."""
    if config is None:
        return None
    if not isinstance(config, context.Suggestions):
        raise UserError(f"Agent {name!r}: suggestions must be a Suggestions, got {config!r}.")
    given = config.model
    writer = model if given is None else resolve_model(given, "suggestions model")
    return _suggest.Suggester(count=config.count, model=writer)


def model_variant(config: RunConfig, model: Model | str) -> RunConfig:
    """``config`` on another model, its fallback models kept (``Agent.with_model``)."""
    resolved = resolve_model(model, "model")
    return replace(
        config,
        model=resolved,
        models=(resolved, *config.models[1:]),
        context=build_context(config.context_config, resolved, config.name),
    )


def resolve_model(model: Model | str, what: str) -> Model:
    if isinstance(model, Model):
        return model
    if isinstance(model, str):
        return providers.resolve_model(model)
    raise UserError(f"{what} must be a Model or a 'provider:model' string, got {model!r}.")


def build_code_mode(
    invocation: str,
    config: CodeModeConfig | None,
    registry: dict[str, Tool],
    approval: ApprovalConfig | None,
    name: str,
) -> CodeMode | None:
    if invocation not in ("direct", "code-mode"):
        raise UserError(
            f"Agent {name!r}: tool_options.invocation must be 'direct' or 'code-mode', "
            f"got {invocation!r}."
        )
    if invocation == "direct":
        if config is not None:
            raise UserError(f"Agent {name!r}: tool_options.code_mode needs invocation='code-mode'.")
        return None
    mode = tools.CodeMode(registry, config=config, approval=approval)
    for built in mode.tools:
        registry[built.name] = built
    return mode


def build_governance(
    name: str,
    clock: Clock,
    policies: Sequence[Policy],
    budget: Budget | Sequence[Budget] | None,
    options: GovernanceOptions | None,
) -> AgentGovernance | None:
    """The agent's governance: the shared governor, one built from the settings, or none."""
    options = _DEFAULT_GOVERNANCE if options is None else options
    if not isinstance(options, GovernanceOptions):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"Agent {name!r}: governance must be a GovernanceOptions, got {options!r}.")
    events = options.events
    if events not in GOVERNANCE_EVENTS:
        raise UserError(
            f"Agent {name!r}: governance.events must be one of {', '.join(GOVERNANCE_EVENTS)}, "
            f"got {events!r}."
        )
    configured = bool(policies or options.oracles or budget or options.handle_interrupt)
    if options.governor is not None:
        if configured:
            raise UserError(
                f"Agent {name!r}: governance.governor is exclusive with policies, budget, "
                "governance.oracles and governance.handle_interrupt; configure the shared "
                "Governor itself."
            )
        return AgentGovernance(options.governor, name, events=events)
    if not configured:
        return None  # no governance: the loop and the gate skip it entirely
    built = governance.Governor(
        policies=policies,
        oracles=options.oracles,
        budget=budget,
        handle_interrupt=options.handle_interrupt,
        clock=clock,
    )
    return AgentGovernance(built, name, events=events)


def build_store(store: Stores | str | None, name: str) -> Stores | None:
    if store is None:
        return None
    if isinstance(store, stores.Stores):
        return store
    if isinstance(store, str):
        return stores.open_store(store)  # parses only: connecting waits for the first run
    raise UserError(
        f"Agent {name!r}: store must be a Stores (bastion.stores.open_store) or a store URL "
        f"such as 'sqlite:///runs.db', got {store!r}."
    )


def check_positive(field: str, value: int, name: str) -> None:
    if not isinstance(value, int) or value < 1:
        raise UserError(f"Agent {name!r}: {field} must be an integer >= 1, got {value!r}.")
