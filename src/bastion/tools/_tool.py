"""The ``Tool`` type and the ``@tool`` factory.

A tool is built from a typed Python function (sync, async, or an async generator that
streams progress), from a function taking one pydantic model (``args_model=``), or from a
raw JSON Schema (``parameters=``, as MCP tools arrive). Classification metadata is recorded
on every tool; the executor, approvals and the side-effect ledger act on it.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict, overload

from bastion.core import JsonObject, JsonValue, SandboxConfig, ToolDefinition, Usage, UserError
from bastion.core._runtime import check_sandbox_setting

from ._schema import (
    ArgsValidator,
    JsonSchemaValidator,
    ModelArgsValidator,
    _is_run_context,  # pyright: ignore[reportPrivateUsage]
    function_schema,
    signature_and_hints,
)
from ._stacklevel import stacklevel_outside

if TYPE_CHECKING:
    from pydantic import BaseModel
    from typing_extensions import Unpack  # an annotation only: not loaded at run time

__all__ = [
    "ExecutionMode",
    "InboundPolicy",
    "MissingClassificationWarning",
    "Progress",
    "Sensitivity",
    "SideEffectClass",
    "Tool",
    "ToolExample",
    "ToolResult",
    "ToolTrustClass",
    "TruncationStrategy",
    "tool",
]

SideEffectClass: TypeAlias = Literal["pure", "read_only", "side_effecting", "external_stateful"]
ExecutionMode: TypeAlias = Literal["parallel", "sequential"]
TruncationStrategy: TypeAlias = Literal[
    "middle", "tail", "json_smart", "spill_to_file", "summarize"
]
Sensitivity: TypeAlias = Literal["public", "internal", "secret"]
ToolTrustClass: TypeAlias = Literal[
    "first_party_built_in",
    "first_party_user_defined",
    "skill_trusted",
    "skill_untrusted",
    "mcp_derived",
    "web_search",
]
InboundPolicy: TypeAlias = Literal[
    "pass-through",
    "detect-and-flag",
    "detect-and-strip",
    "detect-and-wrap",
    "detect-and-strip-and-wrap",
]
FunctionKind: TypeAlias = Literal["sync", "async", "async_gen"]

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_SIDE_EFFECT_CLASSES: tuple[str, ...] = ("pure", "read_only", "side_effecting", "external_stateful")
_warned_unclassified: set[str] = set()


class MissingClassificationWarning(UserWarning):
    """A tool was defined without ``side_effect_class``; it is treated as side-effecting."""


@dataclass(kw_only=True, slots=True)
class ToolResult:
    """A tool's result with more than text.

    Attributes:
        output: What the model reads (a string, or any JSON-serializable value).
        metadata: Data for the application, not shown to the model.
        untrusted: The output carries content that is not first-party (a file, a web page,
            a sub-agent that read some): later requests of the run carry the inbound
            preamble.
        promote_tools: Names of deferred tools to add to the run's catalogue from the next
            step on (what ``tool_search`` returns); unknown or eager names are ignored.
        usage: What model calls the tool made for the run cost, by ``"provider:model"``
            (a sub-agent's); the agent adds it to the run's usage.
    """

    output: object
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    untrusted: bool = False
    promote_tools: Sequence[str] = ()
    usage: Mapping[str, Usage] = field(default_factory=dict[str, Usage])


@dataclass(kw_only=True, slots=True)
class Progress:
    """Yielded by an async-generator tool to report progress (``tool.execute.progress``)."""

    current: float
    total: float | None = None
    message: str | None = None


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolExample:
    """A worked example of calling the tool, rendered into its description."""

    input: JsonObject
    output: JsonValue = None
    description: str | None = None


@dataclass(kw_only=True, slots=True)
class Tool:
    """A function the model may call, with its schema and classification.

    Build one with :func:`tool`; construct directly only for raw-schema tools.
    """

    name: str
    description: str
    function: Callable[..., Any]  # sync, async or async generator: see ``kind``
    validator: ArgsValidator
    takes_ctx: bool = False
    side_effect_class: SideEffectClass = "side_effecting"
    idempotency_key: Callable[[dict[str, object]], str] | None = None
    needs_approval: bool | Callable[..., bool] = False
    execution_mode: ExecutionMode = "parallel"
    defer_loading: bool = False
    max_result_tokens: int | None = None
    truncation_strategy: TruncationStrategy | None = None
    cache_ttl: float | None = None
    sandbox: bool | SandboxConfig | None = None
    secrets_allowed: tuple[str, ...] = ()
    sensitivity: Sensitivity = "public"
    trust_class: ToolTrustClass = "first_party_user_defined"
    examples: tuple[ToolExample, ...] = ()
    preferred_model: str | None = None
    strict: bool = False
    label: str | None = None
    output_schema: JsonObject | None = None
    timeout: float | None = None
    run_in_thread: bool = True
    inbound_sanitization: InboundPolicy | None = None
    fail_closed: bool = False
    source: str | None = None
    kind: FunctionKind = "sync"
    oracle_key: str | None = None
    """The governance key of the tool's calls; ``None``: ``tool:<name>`` (a sub-agent made
    with ``Agent.as_tool`` is governed as ``agent:<agent name>``)."""

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments."""
        return self.validator.parameters

    def definition(self) -> ToolDefinition:
        """The tool as advertised to the model (examples rendered into the description).

        A deferred tool (``defer_loading``) never renders its examples: it is advertised
        only once ``tool_search`` found it, and must stay cheap in the catalogue.
        """
        description = self.description
        if self.examples and not self.defer_loading:
            import json

            rendered = "\n".join(
                f"- {json.dumps(e.input, sort_keys=True)}"
                + (f" -> {json.dumps(e.output, default=str)}" if e.output is not None else "")
                + (f"  ({e.description})" if e.description else "")
                for e in self.examples
            )
            description = f"{description}\n\nExamples:\n{rendered}".strip()
        return ToolDefinition(
            name=self.name, description=description, parameters=self.parameters, strict=self.strict
        )

    def classification(self) -> dict[str, str | bool | None]:
        """The metadata a human approving a call, or an audit row, needs to see."""
        return {
            "side_effect_class": self.side_effect_class,
            "execution_mode": self.execution_mode,
            "sensitivity": self.sensitivity,
            "trust_class": self.trust_class,
            "needs_approval": bool(self.needs_approval),
            "idempotent": self.idempotency_key is not None,
            "label": self.label,
        }


def _function_kind(function: Callable[..., object]) -> FunctionKind:
    if inspect.isasyncgenfunction(function):
        return "async_gen"
    if inspect.iscoroutinefunction(function):
        return "async"
    call = getattr(function, "__call__", None)  # noqa: B004 - callable objects with async __call__
    if call is not None and inspect.iscoroutinefunction(call):
        return "async"
    return "sync"


def _check_metadata(
    name: str, side_effect_class: str | None, execution_mode: str
) -> SideEffectClass:
    if not _NAME.match(name):
        raise UserError(
            f"Invalid tool name {name!r}: use 1-128 characters from letters, digits, '.', '_', '-'."
        )
    if execution_mode not in ("parallel", "sequential"):
        raise UserError(
            f"Invalid execution_mode {execution_mode!r} for tool {name!r}: "
            "use 'parallel' or 'sequential'."
        )
    if side_effect_class is None:
        if name not in _warned_unclassified:
            _warned_unclassified.add(name)
            warnings.warn(
                f"Tool {name!r} has no side_effect_class; treating it as 'side_effecting'. "
                "Pass side_effect_class='pure' | 'read_only' | 'side_effecting' | "
                "'external_stateful' to silence this.",
                MissingClassificationWarning,
                stacklevel=stacklevel_outside("bastion.tools"),
            )
        return "side_effecting"
    if side_effect_class not in _SIDE_EFFECT_CLASSES:
        raise UserError(
            f"Invalid side_effect_class {side_effect_class!r} for tool {name!r}: "
            f"use one of {', '.join(repr(c) for c in _SIDE_EFFECT_CLASSES)}."
        )
    return side_effect_class  # type: ignore[return-value]  # narrowed by the membership test


class ToolKeywords(TypedDict, total=False):
    """The keyword arguments of :func:`tool` (each described there), for wrappers of it."""

    name: str | None
    description: str | None
    args_model: type[BaseModel] | None
    parameters: dict[str, Any] | None
    side_effect_class: SideEffectClass | None
    idempotency_key: Callable[[dict[str, object]], str] | None
    needs_approval: bool | Callable[..., bool]
    execution_mode: ExecutionMode
    defer_loading: bool
    max_result_tokens: int | None
    truncation_strategy: TruncationStrategy | None
    cache_ttl: float | None
    sandbox: bool | SandboxConfig | None
    secrets_allowed: Sequence[str]
    sensitivity: Sensitivity
    trust_class: ToolTrustClass
    examples: Sequence[ToolExample]
    preferred_model: str | None
    strict: bool
    label: str | None
    output_schema: JsonObject | None
    timeout: float | None
    run_in_thread: bool
    inbound_sanitization: InboundPolicy | None
    fail_closed: bool
    source: str | None


@overload
def tool(
    function: None = None, /, **options: Unpack[ToolKeywords]
) -> Callable[[Callable[..., object]], Tool]: ...


@overload
def tool(function: Callable[..., object], /, **options: Unpack[ToolKeywords]) -> Tool: ...


def tool(
    function: Callable[..., object] | None = None, /, **options: Unpack[ToolKeywords]
) -> Tool | Callable[[Callable[..., object]], Tool]:
    """Make a tool from a function.

    Use as ``@tool``, ``@tool(side_effect_class="pure")`` or ``tool(fn, ...)``. The
    description comes from the docstring, parameter descriptions from its ``Args:``
    section, and the argument schema from the type hints. A first parameter annotated
    ``RunContext`` receives the run's context.

    Args:
        function: The function: sync (runs in a worker thread unless
            ``run_in_thread=False``), async, or an async generator yielding ``str`` pieces
            of output, :class:`Progress` reports, and optionally a final :class:`ToolResult`.
        name: Tool name (default: the function's name).
        description: Overrides the docstring.
        args_model: A pydantic model for the arguments; the function receives an instance.
        parameters: A raw JSON Schema for the arguments; the function receives a dict.
        side_effect_class: ``pure``, ``read_only``, ``side_effecting`` or
            ``external_stateful``. Missing: a warning, and ``side_effecting`` is assumed.
        idempotency_key: Derives a key from the arguments that makes a retry safe.
        needs_approval: True, or a predicate of the arguments, to require a human decision.
        execution_mode: ``sequential`` tools never overlap another call of the step.
        defer_loading: Withhold from the catalogue until found by ``tool_search``.
        max_result_tokens: Cap on the result's size (default 16,384 tokens; 0 disables).
        truncation_strategy: How an over-long result is cut.
        cache_ttl: Seconds to cache results for identical arguments.
        sandbox: Where the tool's ``ctx.runtime`` runs commands: a
            :class:`~bastion.core.SandboxConfig`, ``True`` (sandboxed with the agent's
            config, else the defaults), ``False`` (never sandboxed, whatever the agent
            says) or ``None`` (the agent's setting). The tool's Python code itself runs
            in process.
        secrets_allowed: Secret references the tool may resolve.
        sensitivity: Tier of the data the tool returns.
        trust_class: Where the tool comes from; decides inbound sanitisation defaults.
        examples: Worked examples shown to the model.
        preferred_model: A model tier or spec to prefer after this tool ran.
        strict: Forbid extra arguments and ask providers for strict schema mode.
        label: A short human-readable label for UIs.
        output_schema: JSON Schema of the result, when known.
        timeout: Seconds before the call fails with ``timeout``.
        run_in_thread: Run a sync function in a worker thread (default) or inline.
        inbound_sanitization: How the result is screened for injected instructions
            before the model reads it (default: chosen by ``trust_class``).
        fail_closed: Turn an injection finding into a tool error
            (``inbound_sanitization_blocked``) instead of flagging or stripping it.
        source: Where the tool comes from (an MCP server or skill name); used to
            prefix its name when it collides with another tool.

    Raises:
        UserError: The function cannot be turned into a tool (missing annotations, bad
            name, invalid schema, both ``args_model`` and ``parameters``), or a keyword
            argument is not one of the above.
    """
    unknown = sorted(options.keys() - ToolKeywords.__optional_keys__)
    if unknown:
        import difflib  # only for this error: `from bastion import tool` stays light

        close = difflib.get_close_matches(unknown[0], ToolKeywords.__optional_keys__, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UserError(f"tool() got unknown keyword arguments {unknown}{hint}.")
    if function is not None:
        return _build(function, **options)
    return lambda fn: _build(fn, **options)


def _build(
    fn: Callable[..., object],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    args_model: type[BaseModel] | None = None,
    parameters: dict[str, Any] | None = None,
    side_effect_class: SideEffectClass | None = None,
    idempotency_key: Callable[[dict[str, object]], str] | None = None,
    needs_approval: bool | Callable[..., bool] = False,
    execution_mode: ExecutionMode = "parallel",
    defer_loading: bool = False,
    max_result_tokens: int | None = None,
    truncation_strategy: TruncationStrategy | None = None,
    cache_ttl: float | None = None,
    sandbox: bool | SandboxConfig | None = None,
    secrets_allowed: Sequence[str] = (),
    sensitivity: Sensitivity = "public",
    trust_class: ToolTrustClass = "first_party_user_defined",
    examples: Sequence[ToolExample] = (),
    preferred_model: str | None = None,
    strict: bool = False,
    label: str | None = None,
    output_schema: JsonObject | None = None,
    timeout: float | None = None,
    run_in_thread: bool = True,
    inbound_sanitization: InboundPolicy | None = None,
    fail_closed: bool = False,
    source: str | None = None,
) -> Tool:
    tool_name = name or getattr(fn, "__name__", "")
    if not tool_name:
        raise UserError(f"{fn!r} has no __name__: pass tool(..., name='...').")
    validator, takes_ctx, docstring = _arguments(fn, tool_name, args_model, parameters, strict)
    effect = _check_metadata(tool_name, side_effect_class, execution_mode)
    if len(examples) > 5:
        raise UserError(f"Tool {tool_name!r}: at most 5 examples, got {len(examples)}.")
    if max_result_tokens is not None and max_result_tokens < 0:
        raise UserError(f"Tool {tool_name!r}: max_result_tokens must be >= 0.")
    check_sandbox_setting(sandbox, f"Tool {tool_name!r}")
    return Tool(
        name=tool_name,
        description=description if description is not None else docstring,
        function=fn,
        validator=validator,
        takes_ctx=takes_ctx,
        side_effect_class=effect,
        idempotency_key=idempotency_key,
        needs_approval=needs_approval,
        execution_mode=execution_mode,
        defer_loading=defer_loading,
        max_result_tokens=max_result_tokens,
        truncation_strategy=truncation_strategy,
        cache_ttl=cache_ttl,
        sandbox=sandbox,
        secrets_allowed=tuple(secrets_allowed),
        sensitivity=sensitivity,
        trust_class=trust_class,
        examples=tuple(examples),
        preferred_model=preferred_model,
        strict=strict,
        label=label,
        output_schema=output_schema,
        timeout=timeout,
        run_in_thread=run_in_thread,
        inbound_sanitization=inbound_sanitization,
        fail_closed=fail_closed,
        source=source,
        kind=_function_kind(fn),
    )


def _arguments(
    fn: Callable[..., object],
    tool_name: str,
    args_model: type[BaseModel] | None,
    parameters: dict[str, Any] | None,
    strict: bool,
) -> tuple[ArgsValidator, bool, str]:
    """How the tool's arguments are checked, whether it takes ``ctx``, its docstring text."""
    if args_model is not None and parameters is not None:
        raise UserError(f"Tool {tool_name!r}: give args_model or parameters, not both.")
    if parameters is not None:
        return JsonSchemaValidator(parameters), _first_param_is_ctx(fn), inspect.getdoc(fn) or ""
    if args_model is not None:
        validator = ModelArgsValidator(args_model, unpack=False, strict=strict)
        return validator, _first_param_is_ctx(fn), (inspect.getdoc(fn) or "").split("\n\n")[0]
    return function_schema(fn, strict=strict)


def _first_param_is_ctx(fn: Callable[..., object]) -> bool:
    signature, hints = signature_and_hints(fn)
    params = list(signature.parameters)
    return bool(params) and _is_run_context(hints.get(params[0]))
