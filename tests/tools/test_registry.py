"""The tool registry: precedence, collision strategies, worked examples (T-02..T-04, T-27)."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, ToolOptions, tool
from bastion.core import RunContext, ToolMessage, UserError
from bastion.observability import Counters
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import (
    PRECEDENCE,
    DuplicateToolNameError,
    Tool,
    ToolCollision,
    ToolExample,
    ToolRegistry,
    ToolTrustClass,
    find_collisions,
)


def make(
    name: str,
    trust_class: ToolTrustClass = "first_party_user_defined",
    source: str | None = None,
    reply: str | None = None,
) -> Tool:
    answer = reply or f"{trust_class}:{name}"

    def run(query: str = "") -> str:
        return answer

    return tool(
        run,
        name=name,
        description=f"{name} from {source or trust_class}",
        side_effect_class="read_only",
        trust_class=trust_class,
        source=source,
    )


# --- precedence and strategies ----------------------------------------------------------


def test_precedence_ladder_first_party_over_skills_over_mcp() -> None:
    # covers T-04
    assert PRECEDENCE["first_party_built_in"] == PRECEDENCE["first_party_user_defined"] == 0
    assert PRECEDENCE["web_search"] == 0  # a built-in tool: first-party for naming
    assert (
        PRECEDENCE["first_party_user_defined"]
        < PRECEDENCE["skill_trusted"]
        < PRECEDENCE["skill_untrusted"]
        < PRECEDENCE["mcp_derived"]
    )


def test_auto_prefix_keeps_the_higher_name_and_prefixes_the_lower_with_its_source() -> None:
    # covers T-03, T-04
    mine = make("search")
    skill = make("search", "skill_untrusted", source="web-kit")
    mcp = make("search", "mcp_derived", source="github")
    registry = ToolRegistry([mcp, skill, mine])  # order does not matter
    # Each renamed tool follows its winner, higher precedence first.
    assert registry.names() == ("search", "web-kit__search", "github__search")
    assert registry["search"] is mine
    assert registry["github__search"].description == "search from github"
    assert registry["github__search"].trust_class == "mcp_derived"
    assert registry.original("github__search") is mcp
    assert registry.original("search") is mine
    assert registry.collisions == (
        ToolCollision(
            name="search",
            winner="first_party_user_defined",
            winner_source=None,
            loser="skill_untrusted",
            loser_source="web-kit",
            resolution="renamed",
            renamed_to="web-kit__search",
        ),
        ToolCollision(
            name="search",
            winner="first_party_user_defined",
            winner_source=None,
            loser="mcp_derived",
            loser_source="github",
            resolution="renamed",
            renamed_to="github__search",
        ),
    )


def test_auto_prefix_falls_back_to_the_trust_class_and_sanitises_the_source() -> None:
    # covers T-03
    registry = ToolRegistry(
        [
            make("fetch"),
            make("fetch", "mcp_derived"),
            make("fetch", "skill_trusted", source="my skill/v2"),
        ]
    )
    assert registry.names() == ("fetch", "my_skill_v2__fetch", "mcp__fetch")


def test_auto_prefix_keeps_an_over_long_name_valid_and_distinct() -> None:
    # covers T-03
    long = "x" * 120
    registry = ToolRegistry(
        [
            make(long),
            make(long, "mcp_derived", source="server-a"),
            make(long, "skill_untrusted", source="server-b"),
        ]
    )
    renamed = [n for n in registry.names() if n != long]
    assert len(renamed) == 2
    assert len(set(renamed)) == 2
    for name in renamed:
        assert len(name) == 128
        assert make(name).name == name  # still a valid tool name


def test_a_prefixed_name_that_is_taken_is_an_error() -> None:
    # covers T-03
    with pytest.raises(DuplicateToolNameError, match="'mcp__read' is taken too") as info:
        ToolRegistry([make("read"), make("mcp__read"), make("read", "mcp_derived")])
    assert info.value.names == ("read", "mcp__read")


def test_priority_drops_the_lower_tool_and_counts_it() -> None:
    # covers T-03
    counters = Counters()
    mine = make("search")
    registry = ToolRegistry(
        [make("search", "mcp_derived", source="gh"), mine],
        collision_strategy="priority",
        counters=counters,
    )
    assert registry.names() == ("search",)
    assert registry["search"] is mine
    assert [(c.loser, c.resolution, c.renamed_to) for c in registry.collisions] == [
        ("mcp_derived", "dropped", None)
    ]
    assert counters.get("tool.collision.dropped.total") == 1


def test_manual_raises_listing_every_collision_and_registers_nothing() -> None:
    # covers T-03
    with pytest.raises(DuplicateToolNameError) as info:
        ToolRegistry(
            [
                make("a"),
                make("a", "mcp_derived", source="s1"),
                make("b", "skill_trusted"),
                make("b", "skill_untrusted", source="s2"),
            ],
            collision_strategy="manual",
            owner="Agent 'x'",
        )
    message = str(info.value)
    assert message.startswith("Agent 'x': tool name collisions (collision_strategy='manual'): ")
    assert "'a': first_party_user_defined (no source) over mcp_derived (s1)" in message
    assert "'b': skill_trusted (no source) over skill_untrusted (s2)" in message
    assert info.value.names == ("a", "b")
    assert isinstance(info.value, UserError)


@pytest.mark.parametrize("strategy", ["auto-prefix", "priority", "manual"])
def test_same_rung_duplicates_of_one_source_are_always_an_error(strategy: Any) -> None:
    # covers T-03
    with pytest.raises(DuplicateToolNameError, match=r"two tools are named 'x' \(both MCP\)"):
        ToolRegistry(
            [make("x", "mcp_derived", source="one"), make("x", "mcp_derived", source="one")],
            collision_strategy=strategy,
        )
    with pytest.raises(DuplicateToolNameError, match=r"'y' \(both first-party\)"):
        ToolRegistry([make("y", "first_party_built_in"), make("y")], collision_strategy=strategy)


def test_an_unknown_strategy_is_a_user_error() -> None:
    with pytest.raises(UserError, match="collision_strategy must be one of 'auto-prefix'"):
        ToolRegistry([], collision_strategy="rename")  # type: ignore[arg-type]


def test_register_later_renames_an_earlier_lower_tool_and_is_atomic() -> None:
    # covers T-02, T-03
    counters = Counters()
    live: dict[str, Tool] = {}
    registry = ToolRegistry(
        [make("files", "mcp_derived", source="fs")], into=live, counters=counters
    )
    assert list(live) == ["files"]
    added = registry.register(make("files", "skill_trusted", source="kit"))
    assert added is registry["files"]
    assert list(live) == ["files", "fs__files"]  # the synced dict follows
    assert live["fs__files"].trust_class == "mcp_derived"
    renamed = registry.register(make("files", "skill_untrusted", source="other"))
    assert renamed is not None
    assert renamed.name == "other__files"
    with pytest.raises(DuplicateToolNameError):
        registry.register(make("files", "mcp_derived", source="fs"))  # a second from fs
    assert registry.names() == ("files", "other__files", "fs__files")  # unchanged
    assert counters.get("tool.collision.renamed.total") == 2


def test_register_returns_none_for_a_dropped_tool() -> None:
    # covers T-02
    registry = ToolRegistry([make("q")], collision_strategy="priority")
    assert registry.register(make("q", "mcp_derived")) is None
    assert registry.names() == ("q",)


def test_tools_put_straight_into_the_synced_dict_are_adopted() -> None:
    # covers T-02
    live: dict[str, Tool] = {}
    registry = ToolRegistry([make("a")], into=live)
    live["helper"] = make("helper", "first_party_built_in")
    assert "helper" in registry
    with pytest.raises(DuplicateToolNameError, match="'helper'"):
        registry.register(make("helper"))  # the adopted tool holds the name on its rung
    registry.register(make("helper", "mcp_derived", source="m"))
    assert registry.names() == ("a", "helper", "m__helper")


def test_the_registry_is_a_read_only_mapping() -> None:
    # covers T-02
    registry = ToolRegistry([make("a")])
    assert dict(registry) == {"a": registry["a"]}
    assert len(registry) == 1
    assert registry.get("missing") is None
    with pytest.raises(TypeError):
        registry["b"] = make("b")  # type: ignore[index]


def test_pure_detection_and_assert_no_duplicates() -> None:
    # covers T-03
    a1, a2, b = make("a"), make("a", "mcp_derived"), make("b")
    assert find_collisions([a1, b, a2]) == {"a": (a1, a2)}
    assert find_collisions([a1, b]) == {}
    clean = ToolRegistry([a1, b])
    clean.assert_no_duplicates()
    resolved = ToolRegistry([a1, a2, b])
    with pytest.raises(DuplicateToolNameError, match="'a': first_party_user_defined"):
        resolved.assert_no_duplicates()


# --- through the agent ------------------------------------------------------------------


async def test_the_model_sees_and_calls_both_tools_of_a_collision() -> None:
    # covers G-17, G-18, T-03
    mine = make("search", reply="first-party result")
    theirs = make("search", "mcp_derived", source="web", reply="mcp result")
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("search", {"query": "q"}), Call("web__search", {"query": "q"})]),
            "done",
        ]
    )
    agent = Agent(
        "a",
        model=model,
        tools=[mine, theirs],
        tool_options=ToolOptions(inbound_sanitization="pass-through"),
    )
    result = await agent.run("go")
    assert [t.name for t in model.requests[0].tools] == ["search", "web__search"]
    sent = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert [(m.tool_name, m.content) for m in sent] == [
        ("search", "first-party result"),
        ("web__search", "mcp result"),
    ]
    assert agent.registry.names() == ("search", "web__search")
    assert [c.renamed_to for c in agent.registry.collisions] == ["web__search"]
    assert agent.audit.counters.get("tool.collision.renamed.total") == 1
    assert result.status == "completed"


async def test_priority_agent_offers_only_the_winner() -> None:
    # covers T-03
    model = ScriptedModel([Turn(tool_calls=[Call("web__search", {})]), "done"])
    agent = Agent(
        "a",
        model=model,
        tools=[make("search"), make("search", "mcp_derived", source="web")],
        tool_options=ToolOptions(collision_strategy="priority"),
    )
    result = await agent.run("go")
    assert [t.name for t in model.requests[0].tools] == ["search"]
    assert result.tool_calls[0].error_kind == "unknown_tool"
    assert agent.audit.counters.snapshot()["tool.collision.dropped.total"] == 1


def test_manual_agent_refuses_at_construction() -> None:
    # covers T-03
    with pytest.raises(DuplicateToolNameError, match="Agent 'a': tool name collisions"):
        Agent(
            "a",
            model=ScriptedModel([]),
            tools=[make("search"), make("search", "mcp_derived")],
            tool_options=ToolOptions(collision_strategy="manual"),
        )


def test_agent_tools_are_the_registry_s_current_tool_set() -> None:
    agent = Agent("a", model=ScriptedModel([]), tools=[make("x")])
    first = agent.config.tools
    assert agent.config.tools.by_name is first.by_name
    assert agent.registry.names() == tuple(agent.config.tools.by_name) == ("x",)
    agent.registry.register(make("y"))
    assert agent.config.tools is not first  # a new, frozen set per change
    assert tuple(first.by_name) == ("x",)
    assert tuple(agent.config.tools.by_name) == ("x", "y")
    assert [d.name for d in agent.config.tools.advertised] == ["x", "y"]


# --- worked examples (T-27) -------------------------------------------------------------


def _with_examples(*examples: ToolExample, output_schema: dict[str, Any] | None = None) -> Tool:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return tool(
        add,
        side_effect_class="pure",
        examples=examples,
        output_schema=output_schema,
    )


def test_an_example_whose_input_does_not_fit_fails_fast_naming_tool_and_index() -> None:
    # covers T-27
    bad = _with_examples(
        ToolExample(input={"a": 1, "b": 2}, output=3),
        ToolExample(input={"a": "one"}),
    )
    with pytest.raises(UserError) as info:
        Agent("a", model=ScriptedModel([]), tools=[bad])
    message = str(info.value)
    assert message.startswith(
        "Agent 'a': tool 'add': examples[1].input does not fit the argument schema: "
    )
    assert "`a`: Input should be a valid integer" in message
    assert "`b`: Field required" in message


def test_an_example_whose_output_does_not_fit_the_output_schema_fails_fast() -> None:
    # covers T-27
    bad = _with_examples(
        ToolExample(input={"a": 1, "b": 2}, output=3),
        ToolExample(input={"a": 1, "b": 1}, output="two"),
        output_schema={"type": "integer"},
    )
    with pytest.raises(UserError, match=r"tool 'add': examples\[1\]\.output does not fit"):
        ToolRegistry([bad])
    with pytest.raises(UserError, match="invalid output_schema"):
        ToolRegistry([_with_examples(output_schema={"type": "nope"})])


def test_more_than_five_examples_on_a_hand_built_tool_is_refused() -> None:
    # covers T-27
    base = _with_examples(ToolExample(input={"a": 1, "b": 1}))
    base.examples = tuple(ToolExample(input={"a": i, "b": i}) for i in range(6))
    with pytest.raises(UserError, match="at most 5 examples, got 6"):
        ToolRegistry([base])


async def test_valid_examples_reach_the_model_but_never_for_a_deferred_tool() -> None:
    # covers T-27, G-20, G-36
    shown = _with_examples(
        ToolExample(input={"a": 1, "b": 2}, output=3, description="small numbers"),
        output_schema={"type": "integer"},
    )

    def echo(args: dict[str, Any]) -> Any:
        return args["x"]

    hidden = tool(
        echo,
        name="echo",
        description="Echo x.",
        parameters={"type": "object", "properties": {"x": {"type": "string"}}},
        side_effect_class="pure",
        defer_loading=True,
        examples=[ToolExample(input={"x": "hi"}, output="hi")],
    )
    model = ScriptedModel(["ok"])
    agent = Agent("a", model=model, tools=[shown, hidden])
    await agent.run("go")
    definitions = {t.name: t for t in model.requests[0].tools}
    assert definitions["add"].description == (
        'Add two numbers.\n\nExamples:\n- {"a": 1, "b": 2} -> 3  (small numbers)'
    )
    assert "echo" not in definitions
    assert hidden.definition().description == "Echo x."


def test_a_negative_cache_ttl_is_refused_at_registration() -> None:
    bad = make("slow")
    bad.cache_ttl = -1
    with pytest.raises(UserError, match="tool 'slow': cache_ttl must be a number of seconds"):
        ToolRegistry([bad])


# --- idempotency keys (T-24) ------------------------------------------------------------


async def test_the_idempotency_key_reaches_the_tool_in_its_context() -> None:
    # covers T-24
    seen: list[str | None] = []

    @tool(
        side_effect_class="side_effecting",
        idempotency_key=lambda args: f"charge:{args['order']}:{args['cents']}",
    )
    def charge(ctx: RunContext[None], order: str, cents: int) -> str:
        """Charge an order."""
        seen.append(ctx.idempotency_key)
        return "charged"

    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("charge", {"order": "o-7", "cents": 250})]),
            "done",
        ]
    )
    agent = Agent("a", model=model, tools=[charge])
    rows: list[Any] = []
    agent.audit.subscribe(rows.append)
    await agent.run("go")
    assert seen == ["charge:o-7:250"]
    assert rows[0].classification["idempotent"] is True
    assert agent.audit.counters.get("tool.classification.idempotency_key_missing.total") == 0


async def test_a_failing_idempotency_key_fails_the_call_before_it_runs() -> None:
    # covers T-24
    ran: list[int] = []

    def broken(args: dict[str, Any]) -> str:
        raise KeyError("order")

    @tool(side_effect_class="external_stateful", idempotency_key=broken)
    def send(to: str) -> str:
        """Send."""
        ran.append(1)
        return "sent"

    model = ScriptedModel([Turn(tool_calls=[Call("send", {"to": "x"})]), "done"])
    result = await Agent("a", model=model, tools=[send]).run("go")
    assert ran == []
    assert result.tool_calls[0].error_kind == "execution_failed"
    assert result.tool_calls[0].result == "Tool 'send' failed: KeyError: 'order'"


def test_side_effecting_tools_without_a_key_are_counted_not_warned() -> None:
    @tool(side_effect_class="side_effecting")
    # covers T-24
    def write(text: str) -> str:
        """Write."""
        return text

    @tool(side_effect_class="read_only")
    def read() -> str:
        """Read."""
        return ""

    agent = Agent("a", model=ScriptedModel([]), tools=[write, read])
    assert agent.audit.counters.get("tool.classification.idempotency_key_missing.total") == 1
    assert write.classification()["idempotent"] is False


def test_register_many_resolves_a_whole_server_in_one_pass() -> None:
    # covers T-02, T-03
    registry = ToolRegistry([make("read"), make("write")], collision_strategy="priority")
    served = [make(n, "mcp_derived", source="fs") for n in ("read", "list", "write", "stat")]
    assert [t.name if t else None for t in registry.register_many(served)] == [
        None,
        "list",
        None,
        "stat",
    ]
    assert registry.names() == ("read", "write", "list", "stat")
    with pytest.raises(DuplicateToolNameError):
        registry.register_many([make("new"), make("list", "mcp_derived", source="fs")])
    assert "new" not in registry  # all or nothing


def test_two_mcp_servers_with_one_tool_name_are_resolved_by_the_strategy() -> None:  # covers T-03
    one, two = make("x", "mcp_derived", source="one"), make("x", "mcp_derived", source="two")
    prefixed = ToolRegistry([one, two])
    assert prefixed.names() == ("x", "two__x")
    assert prefixed.original("two__x") is two
    assert ToolRegistry([one, two], collision_strategy="priority").names() == ("x",)
    with pytest.raises(DuplicateToolNameError, match="collision_strategy='manual'"):
        ToolRegistry([one, two], collision_strategy="manual")


def test_a_source_group_is_replaced_whole_and_versions_count_changes() -> None:
    registry = ToolRegistry([make("local")])
    start = registry.version
    first = registry.set_source("source:srv", [make("a", "mcp_derived", source="srv")])
    assert [t.name for t in first if t is not None] == ["a"]
    registry.set_source(
        "source:srv",
        [make("b", "mcp_derived", source="srv"), make("local", "mcp_derived", source="srv")],
    )
    assert registry.names() == ("local", "srv__local", "b")
    assert registry.version == start + 2
    registry.set_source("source:srv", [])
    assert registry.names() == ("local",)


def test_a_tool_put_again_into_the_synced_dict_replaces_the_one_adopted_before() -> None:
    live: dict[str, Tool] = {}
    registry = ToolRegistry([make("a")], into=live)
    live["builtin"] = make("builtin", "first_party_built_in")
    registry.register(make("b"))
    live["builtin"] = make("builtin", "first_party_built_in")  # rebuilt, same key
    registry.register(make("c"))  # would be a same-rung duplicate without the replacement
    assert registry.names() == ("a", "b", "builtin", "c")
