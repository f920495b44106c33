"""The ``AgentEvent`` union is exhaustive and every event has a unique dotted type."""

import dataclasses
import inspect
from typing import Any, Literal, get_args, get_origin, get_type_hints

import bastion.core._events as events_module
from bastion.core import AgentEvent, TextDeltaEvent, ToolExecuteErrorEvent


def declared_event_classes() -> list[type[Any]]:
    return [
        cls
        for name, cls in inspect.getmembers(events_module, inspect.isclass)
        if name.endswith("Event") and cls.__module__ == events_module.__name__
    ]


def type_literal(cls: type[Any]) -> str:
    hint = get_type_hints(cls)["type"]
    assert get_origin(hint) is Literal, f"{cls.__name__}.type is not a Literal"
    (value,) = get_args(hint)
    default = next(f.default for f in dataclasses.fields(cls) if f.name == "type")
    assert default == value, f"{cls.__name__}.type defaults to {default!r}, not {value!r}"
    return value


def test_agent_event_union_covers_every_event_class():
    # covers G-13
    declared = set(declared_event_classes())
    assert len(declared) >= 20
    assert set(get_args(AgentEvent)) == declared


def test_every_event_has_a_unique_dotted_type_literal():
    # covers G-13, G-14
    literals = [type_literal(cls) for cls in declared_event_classes()]
    assert all("." in t for t in literals), literals
    assert len(literals) == len(set(literals))


def test_event_types_named_in_the_spec_exist():
    # covers G-14
    literals = {type_literal(cls) for cls in get_args(AgentEvent)}
    assert {
        "agent.start",
        "step.start",
        "text.delta",
        "tool.call.start",
        "tool.call.end",
        "tool.execute.start",
        "tool.execute.end",
        "tool.execute.error",
        "tool.execute.progress",
        "tool.execute.partial",
        "tool.approval.requested",
        "context.compacted",
        "agent.model.fellback",
        "agent.end",
    } <= literals


def test_every_event_carries_run_id_and_seq():
    # covers G-13
    for cls in get_args(AgentEvent):
        names = {f.name for f in dataclasses.fields(cls)}
        assert {"run_id", "seq", "type"} <= names, cls.__name__


def test_events_match_exhaustively_by_class():
    # covers G-13
    def describe(event: AgentEvent) -> str:
        match event:
            case TextDeltaEvent(delta=delta):
                return f"text {delta}"
            case ToolExecuteErrorEvent(kind=kind):
                return f"error {kind}"
            case _:
                return event.type

    assert describe(TextDeltaEvent(run_id="r", seq=1, delta="hi")) == "text hi"
    error = ToolExecuteErrorEvent(
        run_id="r", seq=2, tool_call_id="c", tool_name="t", kind="timeout", message="m"
    )
    assert describe(error) == "error timeout"
