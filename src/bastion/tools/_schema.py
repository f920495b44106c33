"""Argument schemas and validation for tools.

Three sources, one interface (:class:`ArgsValidator`): a typed Python function (a pydantic
model is built from its signature), a pydantic model given explicitly, or a raw JSON Schema
(validated with ``jsonschema``). Validation takes the model's raw JSON text and returns the
keyword arguments for the function, or raises :class:`ToolArgumentsError` listing every
problem in words the model can act on.
"""

from __future__ import annotations

import functools
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_type_hints

from bastion.core import JsonObject, JsonValue, RunContext, UserError

from ._docstring import parse_docstring

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaViolation
    from jsonschema.protocols import Validator
    from pydantic import BaseModel, ValidationError

__all__ = [
    "ArgsValidator",
    "CallArguments",
    "JsonSchemaValidator",
    "ModelArgsValidator",
    "ToolArgumentsError",
    "compile_schema",
    "function_schema",
    "signature_and_hints",
]


CallArguments: TypeAlias = tuple[tuple[object, ...], dict[str, object]]
"""What a tool function is called with: positional and keyword arguments."""


class ToolArgumentsError(Exception):
    """The model's arguments do not fit the tool's schema."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems

    def for_model(self, tool_name: str) -> str:
        """The message the model reads."""
        listed = "\n".join(f"- {p}" for p in self.problems)
        return (
            f"Invalid arguments for tool {tool_name!r}:\n{listed}\n"
            "Fix the arguments and call the tool again."
        )


class ArgsValidator(ABC):
    """Turns the model's raw JSON arguments into what the tool function receives."""

    parameters: dict[str, Any]

    @abstractmethod
    def validate(self, arguments: str) -> CallArguments:
        """Return ``(args, kwargs)`` for the function.

        Raises:
            ToolArgumentsError: The arguments are not valid JSON or do not fit the schema.
        """


def _format_pydantic_errors(exc: ValidationError) -> list[str]:
    problems: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "json_invalid":
            problems.append(f"arguments are not valid JSON: {err['msg']}")
            continue
        where = f"`{loc}`" if loc else "arguments"
        got = err.get("input")
        shown = "" if err["type"] == "missing" else f" (got {json.dumps(got, default=str)[:80]})"
        problems.append(f"{where}: {err['msg']}{shown}")
    return problems


class ModelArgsValidator(ArgsValidator):
    """Validates with a pydantic model.

    With ``unpack`` the model's fields become keyword arguments (the function-signature
    case); otherwise the model instance itself is passed as the one argument.
    """

    def __init__(self, model: type[BaseModel], *, unpack: bool, strict: bool = False) -> None:
        if strict and model.model_config.get("extra") != "forbid":
            # Validate as advertised: a strict schema says additionalProperties: false.
            config = {**model.model_config, "extra": "forbid"}
            model = type(
                model.__name__, (model,), {"model_config": config, "__doc__": model.__doc__}
            )
        self.model = model
        self.unpack = unpack
        self._fields = tuple(model.model_fields)
        schema = model.model_json_schema()
        schema.pop("title", None)
        if strict:
            schema["additionalProperties"] = False
        self.parameters = schema

    def validate(self, arguments: str) -> CallArguments:
        """Validate the raw JSON in one pass (pydantic parses and validates together)."""
        from pydantic import ValidationError

        try:
            instance = self.model.model_validate_json(arguments if arguments.strip() else "{}")
        except ValidationError as exc:
            raise ToolArgumentsError(_format_pydantic_errors(exc)) from None
        if not self.unpack:
            return (instance,), {}
        values = instance.__dict__
        return (), {name: values[name] for name in self._fields}


class JsonSchemaValidator(ArgsValidator):
    """Validates with a raw JSON Schema; the function receives the arguments as one dict."""

    def __init__(self, parameters: dict[str, Any]) -> None:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(parameters)
        except SchemaError as exc:
            raise UserError(f"Invalid JSON Schema for tool parameters: {exc.message}") from None
        self.parameters = parameters
        self._validator = Draft202012Validator(parameters)

    def validate(self, arguments: str) -> CallArguments:
        """Parse the JSON and list every schema violation."""
        value = parse_arguments(arguments)
        check_against(self._validator, value)
        return (value,), {}


def parse_arguments(arguments: str) -> JsonValue:
    """The JSON value of a tool call's arguments (empty text: ``{}``).

    Raises:
        ToolArgumentsError: Not JSON, or nested too deeply.
    """
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        raise ToolArgumentsError([f"arguments are not valid JSON: {exc}"]) from None
    except RecursionError:
        raise ToolArgumentsError(["arguments are nested too deeply"]) from None


def compile_schema(schema: JsonObject) -> Validator | Literal[False]:
    """A ``jsonschema`` validator of ``schema``; ``False`` when the schema itself is invalid.

    Schemas from elsewhere (MCP servers) can be invalid: such a schema cannot be enforced,
    so the side that wrote it judges the value.
    """
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    cls = validators.validator_for(schema)  # pyright: ignore[reportUnknownMemberType]
    try:
        cls.check_schema(schema)
    except SchemaError:
        return False
    return cls(schema)


def check_against(validator: Validator, value: JsonValue) -> None:
    """Raise with every violation of a ``jsonschema`` validator, each with its path.

    Raises:
        ToolArgumentsError: ``value`` does not fit.
    """
    errors: list[SchemaViolation] = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    if errors:
        raise ToolArgumentsError(
            [
                f"`{'.'.join(str(p) for p in e.path)}`: {e.message}" if e.path else e.message
                for e in errors
            ]
        )


def _is_run_context(annotation: object) -> bool:
    origin = getattr(annotation, "__origin__", None)
    return annotation is RunContext or origin is RunContext


def _hint_source(function: Callable[..., object]) -> Callable[..., object]:
    """The object whose annotations describe ``function``'s parameters."""
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isfunction(function) or inspect.ismethod(function):
        return function
    call = getattr(type(function), "__call__", None)  # noqa: B004 - callable objects
    return call if call is not None else function


def _doc_of(function: Callable[..., object]) -> str | None:
    source = function
    while isinstance(source, functools.partial):
        source = source.func
    return inspect.getdoc(source)


def signature_and_hints(
    function: Callable[..., object],
) -> tuple[inspect.Signature, dict[str, object]]:
    """The call signature of a function, partial or callable object, and its type hints.

    Raises:
        UserError: The object has no inspectable signature or its hints do not resolve.
    """
    name = getattr(function, "__name__", type(function).__name__)
    try:
        signature = inspect.signature(function)
        hints = get_type_hints(_hint_source(function), include_extras=True)
    except NameError as exc:
        raise UserError(
            f"Cannot resolve the type hints of tool {name!r}: {exc}. "
            "Import the annotated types at module level."
        ) from None
    except (TypeError, ValueError) as exc:
        raise UserError(f"Cannot make a tool of {function!r}: {exc}.") from None
    return signature, hints


def function_schema(
    function: Callable[..., object], *, strict: bool = False
) -> tuple[ModelArgsValidator, bool, str]:
    """Build a validator from a function's signature.

    Returns:
        ``(validator, takes_ctx, description)``; ``takes_ctx`` is True when the first
        parameter is annotated ``RunContext``.

    Raises:
        UserError: A parameter has no type annotation or is positional-only/variadic.
    """
    from pydantic import ConfigDict, Field, create_model

    signature, hints = signature_and_hints(function)
    description, param_docs = parse_docstring(_doc_of(function))
    fields: dict[str, Any] = {}  # create_model's field definitions are untyped
    takes_ctx = False
    for index, (name, param) in enumerate(signature.parameters.items()):
        annotation = hints.get(name, inspect.Parameter.empty)
        if index == 0 and _is_run_context(annotation):
            takes_ctx = True
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise UserError(
                f"Tool {_name(function)!r}: parameter {name!r} is {param.kind.description}; "
                "tool parameters must be plain or keyword-only parameters."
            )
        if _is_run_context(annotation):
            raise UserError(
                f"Tool {_name(function)!r}: RunContext must be the first parameter, not {name!r}."
            )
        if annotation is inspect.Parameter.empty:
            raise UserError(
                f"Tool {_name(function)!r}: parameter {name!r} needs a type annotation "
                "so the model knows what to send."
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        doc = param_docs.get(name)
        fields[name] = (annotation, Field(default, description=doc) if doc else default)
    config = ConfigDict(extra="forbid" if strict else "ignore")
    model = create_model(f"{_name(function)}_args", __config__=config, **fields)
    return ModelArgsValidator(model, unpack=True, strict=strict), takes_ctx, description


def _name(function: Callable[..., object]) -> str:
    source = function
    while isinstance(source, functools.partial):
        source = source.func
    return getattr(source, "__name__", type(source).__name__)
