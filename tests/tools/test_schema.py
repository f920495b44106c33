"""Argument schemas from signatures, pydantic models and raw JSON Schema, and their validators.

Validation errors are read by the model, so they must name every problem and every field.
"""

import json
from typing import Any, Literal

import pytest
from dirty_equals import IsStr
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bastion.core import RunContext, UserError
from bastion.tools import (
    ArgsValidator,
    JsonSchemaValidator,
    ModelArgsValidator,
    ToolArgumentsError,
    function_schema,
)


class Point(BaseModel):
    x: int
    y: int = 0


def forecast(
    ctx: RunContext[Any],
    city: str,
    days: int = 3,
    units: Literal["c", "f"] = "c",
    *,
    detail: bool = False,
) -> str:
    """Forecast the weather.

    Args:
        city: City name.
        days: Days ahead.
    """
    return city


def test_schema_from_a_signature_has_types_defaults_and_descriptions():
    # covers C8, T-01, T-29
    validator, takes_ctx, description = function_schema(forecast)
    assert takes_ctx
    assert description == "Forecast the weather."
    schema = validator.parameters
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    props = schema["properties"]
    assert list(props) == ["city", "days", "units", "detail"]
    assert props["city"] == {"type": "string", "title": "City", "description": "City name."}
    assert props["days"] == {
        "type": "integer",
        "default": 3,
        "title": "Days",
        "description": "Days ahead.",
    }
    assert props["units"]["enum"] == ["c", "f"]
    assert props["detail"] == {"type": "boolean", "default": False, "title": "Detail"}
    assert "title" not in schema


def test_validated_arguments_become_keyword_arguments_with_defaults_filled():
    # covers C8, T-01
    validator, _, _ = function_schema(forecast)
    assert validator.validate('{"city": "Oslo", "days": "5"}') == (
        (),
        {"city": "Oslo", "days": 5, "units": "c", "detail": False},
    )


def test_sphinx_param_descriptions_reach_the_schema():
    # covers C8
    def send(to: str, body: str = "") -> None:
        """Send a message.

        :param to: Recipient.
        :param body: Text to send.
        """

    validator, takes_ctx, description = function_schema(send)
    assert not takes_ctx
    assert description == "Send a message."
    assert validator.parameters["properties"]["to"]["description"] == "Recipient."
    assert validator.parameters["properties"]["body"]["description"] == "Text to send."


def test_nested_models_and_containers_in_a_signature():
    # covers C8, T-29
    def plot(points: list[Point], label: str | None = None) -> None: ...

    validator, _, _ = function_schema(plot)
    _, kwargs = validator.validate('{"points": [{"x": 1}, {"x": 2, "y": 3}]}')
    assert kwargs == {"points": [Point(x=1), Point(x=2, y=3)], "label": None}
    assert "$defs" in validator.parameters


def test_run_context_not_first_is_rejected():
    # covers C8, A-01
    def bad(city: str, ctx: RunContext[Any]) -> None: ...

    with pytest.raises(UserError, match="RunContext must be the first parameter, not 'ctx'"):
        function_schema(bad)


def test_bare_run_context_first_is_detected():
    #
    def fine(ctx: RunContext, n: int) -> None: ...

    validator, takes_ctx, _ = function_schema(fine)
    assert takes_ctx
    assert list(validator.parameters["properties"]) == ["n"]


def test_a_parameter_without_annotation_is_rejected():
    # covers C8, T-01
    namespace: dict[str, Any] = {}
    exec("def bad(city, days: int) -> None: ...", namespace)
    with pytest.raises(UserError, match="parameter 'city' needs a type annotation"):
        function_schema(namespace["bad"])


@pytest.mark.parametrize(
    "source",
    [
        "def bad(*args: int) -> None: ...",
        "def bad(**kwargs: int) -> None: ...",
        "def bad(a: int, /) -> None: ...",
    ],
)
def test_variadic_and_positional_only_parameters_are_rejected(source: str):
    # covers C8
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(UserError, match="tool parameters must be plain or keyword-only"):
        function_schema(namespace["bad"])


def test_unresolvable_annotation_is_a_user_error():
    # covers C8
    namespace: dict[str, Any] = {}
    exec("def bad(x: 'NotDefinedAnywhere') -> None: ...", namespace)
    with pytest.raises(UserError, match="Cannot resolve the type hints of tool 'bad'"):
        function_schema(namespace["bad"])


def test_strict_forbids_extra_arguments():
    # covers A-34, C8
    def f(a: int) -> None: ...

    strict, _, _ = function_schema(f, strict=True)
    assert strict.parameters["additionalProperties"] is False
    with pytest.raises(ToolArgumentsError) as info:
        strict.validate('{"a": 1, "b": 2}')
    assert info.value.problems == ["`b`: Extra inputs are not permitted (got 2)"]

    lenient, _, _ = function_schema(f)
    assert "additionalProperties" not in lenient.parameters
    assert lenient.validate('{"a": 1, "b": 2}') == ((), {"a": 1})


# -- the messages the model reads --


def test_every_problem_is_listed_with_its_field_name():
    # covers C8, T-01
    def book(city: str, nights: int, guests: int = 1) -> None: ...

    validator, _, _ = function_schema(book)
    with pytest.raises(ToolArgumentsError) as info:
        validator.validate('{"nights": "many", "guests": [1]}')
    problems = info.value.problems
    assert len(problems) == 3
    assert any(p.startswith("`city`:") and "required" in p.lower() for p in problems)
    assert any(p.startswith("`nights`:") and '"many"' in p for p in problems)
    assert any(p.startswith("`guests`:") for p in problems)

    message = info.value.for_model("book")
    assert message.startswith("Invalid arguments for tool 'book':\n- ")
    assert all(f"- {p}" in message for p in problems)
    assert message.endswith("Fix the arguments and call the tool again.")


@pytest.mark.parametrize("arguments", ['{"city": ', "not json", "{'city': 'x'}"])
def test_invalid_json_is_reported_as_json(arguments: str):
    # covers C8
    def f(city: str) -> None: ...

    validator, _, _ = function_schema(f)
    for v in (validator, JsonSchemaValidator({"type": "object"})):
        with pytest.raises(ToolArgumentsError) as info:
            v.validate(arguments)
        assert info.value.problems == [IsStr(regex=r"arguments are not valid JSON: .+")]


def test_non_object_arguments_are_reported():
    # covers C8
    def f(city: str) -> None: ...

    validator, _, _ = function_schema(f)
    with pytest.raises(ToolArgumentsError) as info:
        validator.validate("[1, 2]")
    assert info.value.problems == [IsStr(regex=r"arguments: .*")]


def test_blank_arguments_mean_no_arguments():
    # covers C8
    def f(n: int = 7) -> None: ...

    validator, _, _ = function_schema(f)
    assert validator.validate("") == ((), {"n": 7})
    assert JsonSchemaValidator({"type": "object"}).validate("  ") == (({},), {})


# -- pydantic model and raw JSON Schema validators --


def test_model_validator_passes_the_instance():
    # covers C8, T-29
    validator = ModelArgsValidator(Point, unpack=False)
    assert validator.validate('{"x": 1}') == ((Point(x=1, y=0),), {})
    assert validator.parameters == {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "title": "X"},
            "y": {"type": "integer", "default": 0, "title": "Y"},
        },
        "required": ["x"],
    }


def test_json_schema_validator_lists_every_violation_with_its_path():
    # covers A-35, C8
    validator = JsonSchemaValidator(
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "maximum": 10},
                "filters": {"type": "object", "properties": {"lang": {"enum": ["en", "de"]}}},
            },
            "required": ["query"],
        }
    )
    assert validator.validate('{"query": "q"}') == (({"query": "q"},), {})
    with pytest.raises(ToolArgumentsError) as info:
        validator.validate('{"limit": 50, "filters": {"lang": "fr"}}')
    assert info.value.problems == [
        "'query' is a required property",
        "`filters.lang`: 'fr' is not one of ['en', 'de']",
        "`limit`: 50 is greater than the maximum of 10",
    ]


def test_an_invalid_json_schema_is_a_user_error():
    #
    with pytest.raises(UserError, match="Invalid JSON Schema for tool parameters"):
        JsonSchemaValidator({"type": "no-such-type"})


def test_deeply_nested_raw_arguments_are_an_argument_error_not_a_crash():
    # A model can emit arbitrarily nested JSON; that is bad arguments, never a crashed run.
    # covers A-35, C8
    validator = JsonSchemaValidator({"type": "object"})
    with pytest.raises(ToolArgumentsError):
        validator.validate("[" * 100_000)


def test_deeply_nested_arguments_for_a_function_tool_are_an_argument_error():
    # covers C8
    def f(x: int) -> None: ...

    validator, _, _ = function_schema(f)
    with pytest.raises(ToolArgumentsError):
        validator.validate("[" * 100_000)


# -- fuzzing: whatever the model sends, validate raises ToolArgumentsError or succeeds --


def _function_validator() -> ArgsValidator:
    def f(name: str, count: int = 1, tags: list[str] | None = None) -> None: ...

    validator, _, _ = function_schema(f)
    return validator


FUZZ_VALIDATORS: dict[str, ArgsValidator] = {
    "function": _function_validator(),
    "model": ModelArgsValidator(Point, unpack=False),
    "raw_schema": JsonSchemaValidator(
        {
            "type": "object",
            "properties": {"q": {"type": "string", "minLength": 1}, "n": {"type": "integer"}},
            "required": ["q"],
            "additionalProperties": False,
        }
    ),
}

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=10,
)
raw_arguments = st.one_of(
    st.text(),
    json_values.map(json.dumps),
    st.dictionaries(
        st.sampled_from(["name", "count", "tags", "x", "y", "q", "n", "other"]),
        json_values,
        max_size=4,
    ).map(json.dumps),
)


@pytest.mark.parametrize("kind", sorted(FUZZ_VALIDATORS))
@settings(max_examples=200, deadline=None)
@given(arguments=raw_arguments)
def test_arbitrary_arguments_only_ever_raise_tool_arguments_error(kind: str, arguments: str):
    # covers C8, A-35
    validator = FUZZ_VALIDATORS[kind]
    problems: list[str] = []
    try:
        args, kwargs = validator.validate(arguments)
    except ToolArgumentsError as exc:
        problems = exc.problems
        assert problems, "an argument error must say what is wrong"
    else:
        assert isinstance(args, tuple)
        assert isinstance(kwargs, dict)
    assert all(isinstance(p, str) and p for p in problems)
