"""Code mode: the model writes Python that calls the tools.

With ``Agent(tool_options=ToolOptions(invocation="code-mode"))`` the model is offered two
tools only:

* ``code_execute(source)`` runs a script in the pydantic-monty sandbox
  (``_code_sandbox.py``). Inside, ``await tools.<name>(arg=value, ...)`` calls a real tool
  *through the agent's executor* (``ToolExecutor.run_one``): deny list, validation, hooks,
  inbound sanitisation, result limits and the audit all apply as for a direct call.
  A tool's result comes back as a Python value (its JSON parsed; other text as ``str``). A
  failed call raises ``RuntimeError("<error kind>: <message>")`` in the script, which may
  catch it. Only the value of the script's **trailing expression** enters the model's
  context, rendered as JSON and capped (``CodeModeConfig.max_result_chars``); ``print``
  output is kept in the result metadata (``bastion.code_mode.stdout``), never shown.
* ``code_search(query)`` returns the exact call signatures of matching tools, one line
  each plus a one-line description: ``await tools.get_weather(city: str) -> dict``.

Tools that may need a human decision (``needs_approval`` set, or named by the agent's
approval policy) are left out of the code API entirely: ``tools.<name>`` raises
``AttributeError`` and ``code_search`` does not list them. A call that a
``before_tool_call`` hook sends to a human is refused (``approval_denied``).
"""

from __future__ import annotations

import itertools
import json
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bastion._lazy import lazy_module
from bastion.core import JsonValue, RunContext, ToolCall, UserError

from ._code_sandbox import CodeSandbox, HostFunction
from ._gate import ApprovalConfig
from ._result import render_output
from ._tool import Tool, ToolResult, tool

if TYPE_CHECKING:
    from . import _search
    from ._executor import ToolExecutor
else:
    _search = lazy_module("bastion.tools._search")  # tool search loads with the first search

__all__ = ["CODE_EXECUTE", "CODE_SEARCH", "CodeMode", "CodeModeConfig", "call_signature"]

CODE_EXECUTE = "code_execute"
CODE_SEARCH = "code_search"
_NAMES_IN_DESCRIPTION = 40


@dataclass(kw_only=True, slots=True, frozen=True)
class CodeModeConfig:
    """Limits of code mode's scripts.

    Attributes:
        timeout: Seconds of computation per script (waiting for tools is not counted);
            a script over it fails with ``TimeoutError``.
        max_memory: Bytes of heap per script; over it, ``MemoryError``.
        max_tool_calls: Tool calls per script; further calls raise ``RuntimeError``.
        max_result_chars: Characters of the returned value the model reads; the rest is
            cut with a note.
        search_results: Most signatures one ``code_search`` returns.
    """

    timeout: float = 5.0
    max_memory: int = 64 * 1024 * 1024
    max_tool_calls: int = 100
    max_result_chars: int = 16_000
    search_results: int = 10

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise UserError(f"CodeModeConfig.timeout must be > 0, got {self.timeout!r}.")
        for field in ("max_memory", "max_tool_calls", "max_result_chars", "search_results"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise UserError(f"CodeModeConfig.{field} must be an integer >= 1, got {value!r}.")


class CodeMode:
    """The two code-mode tools of one agent, and the sandbox they share.

    Args:
        tools: The agent's real tools by name (the code API is built from them).
        config: Script limits.
        approval: The agent's approval configuration (its policy excludes tools too).

    Raises:
        UserError: A real tool is named ``code_execute`` or ``code_search``.
    """

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        config: CodeModeConfig | None = None,
        approval: ApprovalConfig | None = None,
    ) -> None:
        for reserved in (CODE_EXECUTE, CODE_SEARCH):
            if reserved in tools:
                raise UserError(
                    f"A tool is named {reserved!r}, which code mode reserves; rename it."
                )
        self.config = config or CodeModeConfig()
        policy = (approval or ApprovalConfig()).policy
        self.api: dict[str, Tool] = (
            {}
            if policy == "all"
            else {
                name: t
                for name, t in tools.items()
                if t.needs_approval is False and (isinstance(policy, str) or name not in policy)
            }
        )
        self.sandbox = CodeSandbox(
            timeout=self.config.timeout,
            max_memory=self.config.max_memory,
            max_suspensions=4 * self.config.max_tool_calls + 100,
        )
        self._executor: ToolExecutor | None = None
        self._ids = itertools.count(1)
        self.tools: tuple[Tool, Tool] = (self._execute_tool(), self._search_tool())

    def bind(self, executor: ToolExecutor) -> None:
        """Route in-script tool calls through ``executor`` (the agent's)."""
        self._executor = executor

    async def aclose(self) -> None:
        """Stop the sandbox's worker pool."""
        await self.sandbox.aclose()

    async def execute(self, source: str, ctx: RunContext[Any]) -> ToolResult:
        """Run a script; its trailing expression's value is the result (module docstring).

        Raises:
            CodeExecutionError: The script failed or hit a limit.
        """
        calls = [0]
        functions = {name: self._host_function(t, ctx, calls) for name, t in self.api.items()}
        run = await self.sandbox.run(source, functions)
        if run.value is None:
            text = "None (end the script with an expression to return its value)"
        else:
            text = render_output(run.value)
        cap = self.config.max_result_chars
        if len(text) > cap:
            text = (
                f"{text[:cap]}\n[... {len(text) - cap} more characters cut; return a smaller value]"
            )
        return ToolResult(output=text, metadata={"stdout": run.stdout, "tool_calls": calls[0]})

    def search(self, query: str) -> str:
        """The call signatures of the API tools matching ``query`` (all for ``""``/``"*"``)."""
        tools = list(self.api.values())
        if not tools:
            return "No tools are available to code."
        k = self.config.search_results
        if query.strip() in ("", "*"):
            found = tools[:k]
        else:
            index = _search.ToolIndex(tools)
            found = [hit.tool for hit in index.lexical(query, k) or index.name_match(query, k)]
        if not found:
            names = ", ".join(sorted(self.api))
            return f"No tool matches {query!r}. Tools: {names}."
        return "\n".join(call_signature(t) for t in found)

    def _host_function(self, target: Tool, ctx: RunContext[Any], calls: list[int]) -> HostFunction:
        params = list(target.parameters.get("properties", {}))
        limit = self.config.max_tool_calls

        async def call_tool(*args: object, **kwargs: object) -> JsonValue:
            if len(args) > len(params):
                raise TypeError(
                    f"tools.{target.name}() takes {len(params)} arguments, got {len(args)}."
                )
            for name, value in zip(params, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"tools.{target.name}() got {name!r} twice.")
                kwargs[name] = value
            if calls[0] >= limit:
                raise RuntimeError(
                    f"tool_call_limit: a script may make at most {limit} tool calls."
                )
            calls[0] += 1
            executor = self._executor
            assert executor is not None  # bound by the agent before any run
            call = ToolCall(
                id=f"{ctx.tool_call_id or 'code'}.{next(self._ids)}",
                name=target.name,
                arguments=json.dumps(kwargs, default=str),
            )
            outcome = await executor.run_one(call, ctx)
            if outcome.is_error:
                raise RuntimeError(f"{outcome.error_kind or 'execution_failed'}: {outcome.content}")
            try:
                return json.loads(outcome.content)
            except ValueError:
                return outcome.content

        return call_tool

    def _execute_tool(self) -> Tool:
        config = self.config
        names = sorted(self.api)
        shown = ", ".join(names[:_NAMES_IN_DESCRIPTION]) or "none"
        if len(names) > _NAMES_IN_DESCRIPTION:
            shown += f", ... ({len(names)} in all)"
        effects = {t.side_effect_class for t in self.api.values()}
        description = (
            "Run a Python script in a sandbox and return the value of its last expression "
            "(as JSON). Call tools with `await tools.<name>(arg=value)`; each returns the "
            "tool's result as a Python value. A failed call raises RuntimeError('<kind>: "
            "<message>'). Use code_search to get exact signatures. Work on results inside "
            "the script and return only what you need. A Python subset: no files, network "
            "or third-party modules (json, re, math, datetime, asyncio work); print() output "
            f"is discarded. Limits: {config.timeout:g} s of computation, "
            f"{config.max_memory // (1024 * 1024)} MB memory, {config.max_tool_calls} tool "
            f"calls. Tools: {shown}."
        )
        this = self

        async def code_execute(ctx: RunContext[Any], source: str) -> ToolResult:
            return await this.execute(source, ctx)

        return tool(
            code_execute,
            name=CODE_EXECUTE,
            description=description,
            side_effect_class="read_only" if effects <= {"pure", "read_only"} else "side_effecting",
        )

    def _search_tool(self) -> Tool:
        this = self

        async def code_search(query: str) -> str:
            return this.search(query)

        return tool(
            code_search,
            name=CODE_SEARCH,
            description=(
                "Find tools callable from code_execute; returns their exact Python call "
                "signatures and descriptions. Query with words (e.g. 'weather'); '*' lists all."
            ),
            side_effect_class="pure",
        )


def call_signature(target: Tool) -> str:
    """The line a script needs to call ``target``, and its one-line description.

    Example: ``await tools.get_weather(city: str, unit: Literal['c', 'f'] = 'c') -> dict``.
    """
    schema = target.parameters
    defs: JsonValue = schema.get("$defs", {})
    required = set(schema.get("required", []))
    parts: list[str] = []
    for name, spec in schema.get("properties", {}).items():
        part = f"{name}: {_annotation(spec, defs)}"
        if name not in required:
            part += f" = {spec['default']!r}" if "default" in spec else " = None"
        parts.append(part)
    summary = target.description.strip().split("\n", 1)[0]
    line = f"await tools.{target.name}({', '.join(parts)}) -> {_returns(target)}"
    return f"{line}\n    {summary}" if summary else line


def _annotation(spec: JsonValue, defs: JsonValue) -> str:
    if not isinstance(spec, Mapping):
        return "Any"
    if "$ref" in spec:
        return f"{str(spec['$ref']).rsplit('/', 1)[-1]} (dict)"
    if "enum" in spec:
        return f"Literal[{', '.join(repr(v) for v in _items(spec['enum']))}]"
    if "const" in spec:
        return f"Literal[{spec['const']!r}]"
    for key in ("anyOf", "oneOf"):
        if key in spec:
            return " | ".join(dict.fromkeys(_annotation(s, defs) for s in _items(spec[key])))
    kind = spec.get("type")
    if isinstance(kind, list):
        return " | ".join(_annotation({**spec, "type": k}, defs) for k in kind)
    match kind:
        case "string":
            return "str"
        case "integer":
            return "int"
        case "number":
            return "float"
        case "boolean":
            return "bool"
        case "null":
            return "None"
        case "array":
            items = spec.get("items")
            return f"list[{_annotation(items, defs)}]" if items else "list"
        case "object":
            extra = spec.get("additionalProperties")
            return f"dict[str, {_annotation(extra, defs)}]" if isinstance(extra, dict) else "dict"
        case _:
            return "Any"


def _items(value: JsonValue) -> Sequence[JsonValue]:
    """The items of a JSON array (nothing for any other value)."""
    return value if isinstance(value, Sequence) and not isinstance(value, str) else ()


def _returns(target: Tool) -> str:
    if target.output_schema is not None:
        return _annotation(target.output_schema, target.output_schema.get("$defs", {}))
    try:
        hint = typing.get_type_hints(target.function).get("return")
    except Exception:  # unresolvable hints: the signature still helps without them
        return "Any"
    if hint is None:
        return "Any"
    if hint is type(None):
        return "None"
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")
