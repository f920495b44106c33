"""Per-step overrides of a model call, returned by ``LoopHooks.prepare_step``.

A step may change its model, its ``tool_choice``, other sampling settings, its instructions
and which of the agent's tools it advertises. ``apply_overrides`` folds them into the step's
request only (called by ``steps/_respond.choose_model``); the agent and the run's transcript
stay as they were. ``check_tool_choice`` refuses a ``tool_choice`` that names a tool the
request does not advertise, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from bastion.core import (
    Message,
    Model,
    ModelRequest,
    ModelSettings,
    SystemMessage,
    ToolDefinition,
    UserError,
)

__all__ = ["TOOL_CHOICE_MODES", "StepOverrides", "apply_overrides", "check_tool_choice"]

TOOL_CHOICE_MODES = ("auto", "required", "none")
_SETTING_NAMES = frozenset(f.name for f in fields(ModelSettings))


@dataclass(kw_only=True, slots=True, frozen=True)
class StepOverrides:
    """What ``prepare_step`` changes for one step; ``None`` fields keep the agent's choice.

    Example::

        class FirstSearch(LoopHooks):
            def prepare_step(self, ctx, step):
                if step == 1:
                    return StepOverrides(tool_choice="search")  # force the first call
                return StepOverrides(tool_choice="auto", settings=ModelSettings(temperature=0))

    Attributes:
        model: A model (or ``"provider:model"``) for this step; fallback models still apply.
        tool_choice: ``auto``, ``required`` (some tool must be called), ``none`` (answer
            without tools) or the name of an advertised tool that must be called.
        settings: Settings for this step; each field that is not ``None`` replaces the
            agent's (``model_settings``).
        tools: Names of the tools to advertise in this step (a subset of the agent's);
            ``None`` advertises them all. A tool left out that the model calls anyway is
            not run: its result is a ``capability_blocked`` error.
        instructions: The system prompt of this step's call, replacing the agent's (the
            run's transcript keeps the agent's); ``None`` keeps them, ``""`` sends none.

    A ``model`` given here is pinned: if it fails, the step fails; the agent's fallback
    models are not tried in its place.
    """

    model: Model | str | None = None
    tool_choice: str | None = None
    settings: ModelSettings | None = None
    tools: Sequence[str] | None = None
    instructions: str | None = None

    def __post_init__(self) -> None:
        if self.settings is not None and not isinstance(self.settings, ModelSettings):
            raise UserError(
                f"StepOverrides.settings must be a ModelSettings, got {self.settings!r}."
            )
        if isinstance(self.tools, str):
            raise UserError(
                f"StepOverrides.tools must be a list of tool names, got the string {self.tools!r}."
            )
        if self.tool_choice is not None:
            ModelSettings(tool_choice=self.tool_choice)  # validates the value
        if self.instructions is not None and not isinstance(self.instructions, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"StepOverrides.instructions must be a string, got {self.instructions!r}."
            )


def apply_overrides(request: ModelRequest, overrides: StepOverrides) -> frozenset[str]:
    """Fold ``overrides`` into ``request`` (settings merged, tools filtered, choice checked).

    Returns the names of the tools this step no longer advertises.

    Raises:
        UserError: ``tools`` names a tool the agent does not have, or ``tool_choice`` names
            one this step does not advertise.
    """
    settings = request.settings
    if overrides.settings is not None:
        changed: dict[str, object] = {
            name: value
            for name in _SETTING_NAMES
            if (value := getattr(overrides.settings, name)) is not None
        }
        settings = replace(settings, **changed)
    if overrides.tool_choice is not None:
        settings = replace(settings, tool_choice=overrides.tool_choice)
    request.settings = settings
    if overrides.tools is not None:
        available = {d.name: d for d in request.tools}
        unknown = [n for n in overrides.tools if n not in available]
        if unknown:
            raise UserError(
                f"prepare_step asked to advertise unknown tool(s) {', '.join(map(repr, unknown))}. "
                f"Available: {_names(request.tools)}."
            )
        wanted = set(overrides.tools)
        request.tools = [d for d in request.tools if d.name in wanted]
        withheld = frozenset(available) - wanted
    else:
        withheld = frozenset[str]()
    check_tool_choice(settings.tool_choice, request.tools)
    if overrides.instructions is not None:
        request.messages = with_instructions(request.messages, overrides.instructions)
    return withheld


def with_instructions(messages: Sequence[Message], instructions: str) -> list[Message]:
    """``messages`` with the leading system message replaced by ``instructions``.

    Empty ``instructions`` remove it. The agent's instructions are the leading system
    message; other system messages (summaries, steering) stay where they are.
    """
    rest = list(messages[1:] if messages and isinstance(messages[0], SystemMessage) else messages)
    return [SystemMessage(content=instructions), *rest] if instructions else rest


def check_tool_choice(choice: str | None, tools: Sequence[ToolDefinition]) -> None:
    """Refuse a ``tool_choice`` the request cannot honour.

    Raises:
        UserError: ``required`` or a tool name with no tools advertised, or a name that is
            not one of the advertised tools.
    """
    if choice is None or choice in ("auto", "none"):
        return
    if not tools:
        raise UserError(
            f"tool_choice={choice!r} needs tools, but this step advertises none. "
            "Use 'auto' or 'none', or give the agent tools."
        )
    if choice != "required" and all(d.name != choice for d in tools):
        raise UserError(
            f"tool_choice={choice!r} is not a tool this step advertises. "
            f"Use 'auto', 'required', 'none' or one of: {_names(tools)}."
        )


def _names(tools: Sequence[ToolDefinition]) -> str:
    return ", ".join(repr(d.name) for d in tools) or "(no tools)"
