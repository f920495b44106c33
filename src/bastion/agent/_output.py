"""Structured output: the schema sent to the model and the parsing of its answer.

Three ways to ask a model for a typed answer (``OutputMode``): ``native`` sends the schema
in the vendor's JSON-schema response mode; ``prompted`` puts the schema in the system prompt
and asks for JSON mode (vendors and small local models without JSON-schema support);
``tool`` advertises a final-answer tool whose arguments are the answer (models that call
tools reliably but ignore response formats). ``steps/_prepare.shape_output`` shapes the
request, ``steps/_finalize`` parses the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic

from bastion.core import OutputMode, OutputSpec, ToolCall, ToolDefinition

from ._narrow import as_json_object
from ._result import OutputT

if TYPE_CHECKING:
    from typing_extensions import TypeForm

    from ._verifiers import Verification, VerifierLike

__all__ = [
    "OUTPUT_MODES",
    "OUTPUT_TOOL",
    "Output",
    "OutputSchema",
    "OutputValidationError",
    "output_call",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
OUTPUT_TOOL = "final_result"
"""The name of the final-answer tool of ``Output(mode="tool")``."""
OUTPUT_MODES = ("native", "prompted", "tool")
_WRAPPER = "response"


@dataclass(frozen=True, slots=True)
class Output(Generic[OutputT]):
    """An output type with how it is asked for and checked: ``Agent(output_type=Output(...))``.

    A bare type (``output_type=Answer``) is ``Output(Answer)`` with the defaults.

    Example::

        Agent("a", model=model, output_type=Output(Answer, mode="tool", retries=2))

    Attributes:
        type: ``str`` or any type pydantic validates (a model, a dataclass, ``list[int]``).
        mode: How a typed answer is asked for: ``native`` (the vendor's JSON-schema mode),
            ``prompted`` (JSON mode, the schema in the system prompt) or ``tool`` (a
            ``final_result`` tool whose arguments are the answer). ``None`` (default): what
            each step's model prefers (``Model.output_mode``).
        retries: How often an answer that does not parse is sent back for a fix.
        verifiers: Checks of the final answer (functions of ``(ctx, output)`` or objects
            with ``verify``), or a ``Verification`` with a round cap; a failing one sends
            its feedback to the model, which answers again.
    """

    type: type[OutputT] | Any
    mode: OutputMode | None = None
    retries: int = 1
    verifiers: Verification | Sequence[VerifierLike] = ()

    @classmethod
    def of(cls, output_type: Output[OutputT] | type[OutputT] | Any) -> Output[OutputT]:
        """``output_type`` as an ``Output`` (a bare type gets the defaults)."""
        return output_type if isinstance(output_type, Output) else cls(output_type)  # pyright: ignore[reportUnknownVariableType]


class OutputValidationError(Exception):
    """The model's answer does not fit the output type."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems

    def retry_prompt(self) -> str:
        """The message sent back to the model so it can correct itself."""
        listed = "\n".join(f"- {p}" for p in self.problems)
        return (
            f"Your answer does not match the required output schema:\n{listed}\n"
            "Answer again with only the JSON value, fixed."
        )

    def tool_retry_prompt(self) -> str:
        """The error the final-answer tool returns, so the model calls it again, fixed."""
        listed = "\n".join(f"- {p}" for p in self.problems)
        return (
            f"The arguments do not match the required schema:\n{listed}\n"
            f"Call {OUTPUT_TOOL} again with the arguments fixed."
        )


class OutputSchema:
    """The output type of an agent other than ``str``, as a JSON schema and a validator."""

    def __init__(self, output_type: TypeForm[object]) -> None:
        from pydantic import TypeAdapter

        self.output_type = output_type
        self._adapter: TypeAdapter[object] = TypeAdapter(output_type)
        schema = self._adapter.json_schema()
        name = getattr(output_type, "__name__", None) or "output"
        self.spec = OutputSpec(name=re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64], json_schema=schema)
        self.prompted_spec = replace(self.spec, mode="prompted")
        # Tool arguments must be a JSON object: any other type is wrapped in one field.
        self._wrapped = schema.get("type") != "object"
        parameters: dict[str, object] = schema
        if self._wrapped:  # "$defs" must stay at the root for the "#/$defs/..." references
            inner = {k: v for k, v in schema.items() if k != "$defs"}
            parameters = {
                "type": "object",
                "properties": {_WRAPPER: inner},
                "required": [_WRAPPER],
            }
            if "$defs" in schema:
                parameters["$defs"] = schema["$defs"]
        self.tool = ToolDefinition(
            name=OUTPUT_TOOL,
            description=(
                "Give your final answer: call this tool once, with the answer as its "
                "arguments, when you are done."
            ),
            parameters=parameters,
        )
        self.instructions = (
            "Answer with a single JSON value that matches this JSON schema, and nothing "
            f"else (no prose, no code fence):\n{json.dumps(self.spec.json_schema)}"
        )

    def parse(self, text: str) -> object:
        """Parse and validate the model's text (a fenced code block is unwrapped).

        Raises:
            OutputValidationError: The text is not valid JSON or does not fit the type.
        """
        candidate = text.strip()
        fenced = _FENCE.search(candidate)
        if fenced:
            candidate = fenced.group(1).strip()
        if not candidate:
            raise OutputValidationError(["the answer is empty; a JSON value is required"])
        return self._validate(candidate)

    def parse_arguments(self, arguments: str) -> object:
        """Parse and validate the arguments of a call to the final-answer tool.

        Raises:
            OutputValidationError: The arguments are not valid JSON or do not fit the type.
        """
        if not self._wrapped:
            return self._validate(arguments or "{}")
        try:
            value = as_json_object(json.loads(arguments or "{}"))
        except ValueError as exc:
            raise OutputValidationError([f"the arguments are not valid JSON: {exc}"]) from None
        if value is None or _WRAPPER not in value:
            raise OutputValidationError([f"`{_WRAPPER}`: Field required"])
        return self._validate(json.dumps(value[_WRAPPER]))

    def _validate(self, candidate: str) -> object:
        from pydantic import ValidationError

        try:
            return self._adapter.validate_json(candidate)
        except ValidationError as exc:
            problems: list[str] = []
            for err in exc.errors(include_url=False):
                loc = ".".join(str(p) for p in err["loc"])
                problems.append(f"`{loc}`: {err['msg']}" if loc else str(err["msg"]))
            raise OutputValidationError(problems) from None


def output_call(calls: Sequence[ToolCall]) -> ToolCall | None:
    """The call to the final-answer tool among ``calls``, if the model made one."""
    for call in calls:
        if call.name == OUTPUT_TOOL:
            return call
    return None
