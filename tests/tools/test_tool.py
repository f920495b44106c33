"""The ``@tool`` factory: sources of schemas, names, classification and examples."""

import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from bastion.core import RunContext, ToolDefinition, UserError, new_id
from bastion.tools import (
    JsonSchemaValidator,
    MissingClassificationWarning,
    ModelArgsValidator,
    Progress,
    Tool,
    ToolExample,
    tool,
)


class SearchArgs(BaseModel):
    query: str
    limit: int = 5


def identity(args: Any) -> Any:
    return args


def test_decorator_builds_a_tool_from_a_typed_function():
    # covers C8, T-01, S-28
    @tool(side_effect_class="read_only")
    def get_weather(city: str, days: int = 1) -> str:
        """Get the weather for a city.

        Args:
            city: The city.
        """
        return f"{city}: sunny for {days} day(s)"

    assert isinstance(get_weather, Tool)
    assert get_weather.name == "get_weather"
    assert get_weather.description == "Get the weather for a city."
    assert get_weather.kind == "sync"
    assert not get_weather.takes_ctx
    assert get_weather.parameters["required"] == ["city"]
    assert get_weather.parameters["properties"]["city"]["description"] == "The city."
    assert get_weather.function("Oslo", 2) == "Oslo: sunny for 2 day(s)"
    assert get_weather.definition() == ToolDefinition(
        name="get_weather",
        description="Get the weather for a city.",
        parameters=get_weather.parameters,
        strict=False,
    )


def test_name_and_description_can_be_overridden():
    # covers C8, C9
    def f(x: int) -> int:
        """Docstring."""
        return x

    t = tool(f, name="math.identity", description="Return x.", side_effect_class="pure")
    assert (t.name, t.description) == ("math.identity", "Return x.")
    assert tool(f, description="", side_effect_class="pure").description == ""


def test_run_context_first_parameter_is_detected_and_hidden_from_the_model():
    # covers A-01, T-01
    @tool(side_effect_class="pure")
    async def whoami(ctx: RunContext[Any], loud: bool = False) -> str:
        return ctx.agent_name

    assert whoami.takes_ctx
    assert whoami.kind == "async"
    assert list(whoami.parameters["properties"]) == ["loud"]


def test_function_kinds_are_detected():
    # covers C8
    async def agen() -> AsyncIterator[str | Progress]:
        yield "x"

    async def coro() -> str:
        return ""

    def sync() -> str:
        return ""

    assert tool(agen, side_effect_class="pure").kind == "async_gen"
    assert tool(coro, side_effect_class="pure").kind == "async"
    assert tool(sync, side_effect_class="pure").kind == "sync"


class McpLikeTool:
    """A callable object, as an MCP bridge would wrap a remote tool."""

    __name__ = "remote_search"

    async def __call__(self, args: dict[str, Any]) -> str:
        return str(args)


def test_a_callable_object_with_a_raw_schema_is_an_async_tool():
    # covers A-35, C8
    t = tool(McpLikeTool(), parameters={"type": "object"}, side_effect_class="read_only")
    assert t.kind == "async"
    assert not t.takes_ctx


def test_a_callable_object_without_a_schema_takes_its_schema_from_call():
    # covers C8
    t = tool(McpLikeTool(), side_effect_class="read_only")
    assert t.kind == "async"
    assert t.name == "remote_search"
    assert t.parameters["required"] == ["args"]
    assert t.validator.validate('{"args": {"q": "x"}}') == ((), {"args": {"q": "x"}})


def test_a_callable_object_without_a_name_is_a_user_error():
    # Misuse must surface as UserError, never as a bare TypeError from introspection.
    # covers C8
    class Nameless:
        async def __call__(self, q: str) -> str:
            return q

    with pytest.raises(UserError, match=r"has no __name__: pass tool\(\.\.\., name="):
        tool(Nameless(), side_effect_class="read_only")


def test_args_model_tool_receives_the_model_instance():
    # covers C8, T-29
    def search(args: SearchArgs) -> str:
        """Search the index.

        Longer explanation that is not part of the description.
        """
        return f"{args.query}:{args.limit}"

    t = tool(search, args_model=SearchArgs, side_effect_class="read_only")
    assert isinstance(t.validator, ModelArgsValidator)
    assert t.description == "Search the index."
    assert t.parameters["required"] == ["query"]
    args, kwargs = t.validator.validate('{"query": "cats"}')
    assert args == (SearchArgs(query="cats", limit=5),)
    assert kwargs == {}
    assert t.function(*args) == "cats:5"


def test_args_model_tool_can_take_run_context_first():
    #
    def search(ctx: RunContext[Any], args: SearchArgs) -> str:
        return args.query

    assert tool(search, args_model=SearchArgs, side_effect_class="read_only").takes_ctx


def test_raw_json_schema_tool_receives_a_dict():
    # covers A-35, C8
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

    def lookup(args: dict[str, Any]) -> str:
        """Look something up.

        Second paragraph kept.
        """
        return str(args["q"])

    t = tool(lookup, parameters=schema, side_effect_class="read_only")
    assert isinstance(t.validator, JsonSchemaValidator)
    assert t.parameters is schema
    assert t.description == "Look something up.\n\nSecond paragraph kept."
    assert not t.takes_ctx
    assert t.validator.validate('{"q": "x"}') == (({"q": "x"},), {})


def test_raw_json_schema_tool_with_invalid_schema_is_rejected():
    #
    with pytest.raises(UserError, match="Invalid JSON Schema"):
        tool(
            identity,
            name="bad_schema",
            parameters={"type": 12},
            side_effect_class="pure",
        )


def test_args_model_and_parameters_together_are_rejected():
    # covers C8
    with pytest.raises(UserError, match="give args_model or parameters, not both"):
        tool(
            identity,
            name="both",
            args_model=SearchArgs,
            parameters={"type": "object"},
            side_effect_class="pure",
        )


@pytest.mark.parametrize("name", ["has space", "a" * 129, "ünicode", "a/b", "x:y", "<lambda>"])
def test_invalid_tool_names_are_rejected(name: str):
    # covers C9
    def f() -> None: ...

    with pytest.raises(UserError, match="Invalid tool name"):
        tool(f, name=name, side_effect_class="pure")


@pytest.mark.parametrize("name", ["a", "srv.read_file", "Tool-2", "a" * 128])
def test_valid_tool_names_are_accepted(name: str):
    # covers C9
    def f() -> None: ...

    assert tool(f, name=name, side_effect_class="pure").name == name


def test_a_lambda_needs_an_explicit_name():
    # covers C9
    with pytest.raises(UserError, match="Invalid tool name '<lambda>'"):
        tool(lambda: None, side_effect_class="pure")


# -- classification (T-23) --


def test_missing_side_effect_class_warns_once_per_name_and_assumes_side_effecting():
    # covers T-23, C8
    name = f"unclassified_{new_id('t')}"

    def f() -> None: ...

    with pytest.warns(
        MissingClassificationWarning, match=f"Tool '{name}' has no side_effect_class"
    ):
        first = tool(f, name=name)
    assert first.side_effect_class == "side_effecting"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = tool(f, name=name)
    assert second.side_effect_class == "side_effecting"

    other = f"unclassified_{new_id('t')}"
    with pytest.warns(MissingClassificationWarning):
        tool(f, name=other)


def test_missing_classification_warning_points_at_the_tool_definition():
    # A warning is only actionable if it names the user's line, in both call styles.
    # covers T-23
    def f() -> None: ...

    with pytest.warns(MissingClassificationWarning) as plain:
        tool(f, name=f"unclassified_{new_id('t')}")
    assert plain[0].filename == __file__

    with pytest.warns(MissingClassificationWarning) as decorated:

        @tool(name=f"unclassified_{new_id('t')}")
        def g() -> None: ...

    assert decorated[0].filename == __file__


def test_invalid_side_effect_class_is_rejected():
    # covers T-23
    def f() -> None: ...

    wrong: Any = "read-only"
    with pytest.raises(UserError, match="Invalid side_effect_class 'read-only'"):
        tool(f, side_effect_class=wrong)


def test_invalid_execution_mode_is_rejected():
    # covers T-06, G-30
    def f() -> None: ...

    wrong: Any = "serial"
    with pytest.raises(UserError, match="Invalid execution_mode 'serial'"):
        tool(f, side_effect_class="pure", execution_mode=wrong)


def test_negative_max_result_tokens_is_rejected():
    # covers T-18
    def f() -> None: ...

    with pytest.raises(UserError, match="max_result_tokens must be >= 0"):
        tool(f, side_effect_class="pure", max_result_tokens=-1)


def test_classification_reports_what_an_approver_needs():
    # covers T-23, C8
    def f(path: str) -> None: ...

    def is_absolute(path: str) -> bool:
        return path.startswith("/")

    t = tool(
        f,
        name="delete_file",
        side_effect_class="external_stateful",
        execution_mode="sequential",
        sensitivity="internal",
        needs_approval=is_absolute,
        idempotency_key=lambda args: str(args["path"]),
        label="Delete a file",
    )
    assert t.classification() == {
        "side_effect_class": "external_stateful",
        "execution_mode": "sequential",
        "sensitivity": "internal",
        "trust_class": "first_party_user_defined",
        "needs_approval": True,
        "idempotent": True,
        "label": "Delete a file",
    }
    plain = tool(f, name="read_file", side_effect_class="read_only")
    assert plain.classification() == {
        "side_effect_class": "read_only",
        "execution_mode": "parallel",
        "sensitivity": "public",
        "trust_class": "first_party_user_defined",
        "needs_approval": False,
        "idempotent": False,
        "label": None,
    }


def test_metadata_is_recorded_on_the_tool():
    # covers C8
    def f() -> None: ...

    t = tool(
        f,
        side_effect_class="pure",
        defer_loading=True,
        max_result_tokens=100,
        truncation_strategy="tail",
        cache_ttl=60.0,
        sandbox=True,
        secrets_allowed=["vault://a"],
        trust_class="mcp_derived",
        preferred_model="fast",
        output_schema={"type": "string"},
        timeout=2.5,
        run_in_thread=False,
    )
    assert t.defer_loading
    assert (t.max_result_tokens, t.truncation_strategy, t.cache_ttl) == (100, "tail", 60.0)
    assert t.sandbox is True
    assert t.secrets_allowed == ("vault://a",)
    assert (t.trust_class, t.preferred_model) == ("mcp_derived", "fast")
    assert t.output_schema == {"type": "string"}
    assert (t.timeout, t.run_in_thread) == (2.5, False)


# -- strict and examples --


def test_strict_tool_forbids_additional_properties():
    # covers A-34, C8
    def f(a: int) -> None: ...

    t = tool(f, side_effect_class="pure", strict=True)
    assert t.parameters["additionalProperties"] is False
    assert t.definition().strict is True


def test_strict_args_model_tool_rejects_extra_arguments_as_advertised():
    # The schema sent to the model says additionalProperties: false; validation must agree.
    # covers A-34, C8
    from bastion.tools import ToolArgumentsError

    t = tool(
        identity,
        name="strict_search",
        args_model=SearchArgs,
        side_effect_class="read_only",
        strict=True,
    )
    assert t.parameters["additionalProperties"] is False
    with pytest.raises(ToolArgumentsError, match=r"(?i)extra inputs"):
        t.validator.validate('{"query": "q", "surprise": 1}')


def test_examples_are_rendered_into_the_definition():
    # covers T-27, G-20
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    t = tool(
        add,
        side_effect_class="pure",
        examples=[
            ToolExample(input={"b": 2, "a": 1}, output=3, description="small numbers"),
            ToolExample(input={"a": 0, "b": 0}),
        ],
    )
    assert t.definition().description == (
        "Add two numbers.\n\nExamples:\n"
        '- {"a": 1, "b": 2} -> 3  (small numbers)\n'
        '- {"a": 0, "b": 0}'
    )
    assert t.description == "Add two numbers."


def test_more_than_five_examples_are_rejected():
    # covers T-27
    def f(a: int) -> None: ...

    examples = [ToolExample(input={"a": i}) for i in range(6)]
    with pytest.raises(UserError, match="at most 5 examples, got 6"):
        tool(f, side_effect_class="pure", examples=examples)
    assert len(tool(f, side_effect_class="pure", examples=examples[:5]).examples) == 5


def test_signature_errors_surface_from_the_decorator():
    # covers C8, T-01
    with pytest.raises(UserError, match="RunContext must be the first parameter"):

        @tool(side_effect_class="pure")
        def bad(x: int, ctx: RunContext[Any]) -> None: ...


def test_an_unknown_keyword_is_a_user_error_that_names_it_and_the_closest_one() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    options: dict[str, Any] = {"side_efect_class": "pure"}  # a typo, as a wrapper passes it
    with pytest.raises(
        UserError, match=r"\['side_efect_class'\] \(did you mean 'side_effect_class'\?\)"
    ):
        tool(add, **options)
    colour: dict[str, Any] = {"colour": "red"}
    with pytest.raises(UserError, match=r"unknown keyword arguments \['colour'\]\.$"):
        tool(**colour)  # the decorator form refuses it before any function
    made = tool(add, side_effect_class="pure", name="plus")
    assert (made.name, made.side_effect_class, made.description) == ("plus", "pure", "Add.")
