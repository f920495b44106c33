"""Defining graphs: decorators, conditional routing, validation, manifests, Mermaid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import UserError
from bastion.graph import Checkpointer, Graph, MemoryCheckpointer, NodeContext, Registry


def test_build_errors_name_the_node() -> None:
    graph = Graph("bad")
    graph.add_node("a", lambda inputs: 1)
    graph.add_edge("a", "ghost")
    with pytest.raises(UserError, match="edge 'a' -> 'ghost' names unknown node 'ghost'"):
        graph.validate()

    graph = Graph("island")
    graph.add_node("a", lambda inputs: 1).add_node("b", lambda inputs: 2)
    graph.add_node("c", lambda inputs: 3)
    graph.add_edge("a", "b").add_edge("c", "c", when=lambda out: False)
    graph.add_edge("b", "a", when=lambda out: False)
    with pytest.raises(UserError, match="node 'c' is unreachable"):
        Graph("island2", entry="a").add_node("a", len).add_node("c", len).validate()
    with pytest.raises(UserError, match="already has a node 'a'"):
        graph.add_node("a", lambda inputs: 0)
    with pytest.raises(UserError, match="Invalid node key 'no spaces'"):
        graph.add_node("no spaces", lambda inputs: 0)
    with pytest.raises(UserError, match="is not a node"):
        graph.add_node("number", 42)  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="takes \\(inputs\\) or \\(inputs, ctx\\)"):
        graph.add_node("three", lambda a, b, c: 0)  # pyright: ignore[reportArgumentType, reportUnknownLambdaType]
    with pytest.raises(UserError, match="has no nodes"):
        Graph("empty").validate()
    with pytest.raises(UserError, match="is added twice"):
        Graph("twice").add_node("a", len).add_node("b", len).add_edge("a", "b").add_edge(
            "a", "b"
        ).validate()


async def test_decorators_and_conditional_routing() -> None:
    # covers L-03: conditional edges route; untaken branches are skipped, joins still run
    graph = Graph("router")

    @graph.node
    def classify(inputs: list[Any]) -> str:
        return "billing" if "invoice" in inputs[0] else "support"

    @graph.node(key="billing")
    def handle_billing(inputs: list[Any]) -> str:
        return f"billing handled {inputs[0]}"

    @graph.node
    def support(inputs: list[Any]) -> str:
        return "support handled"

    @graph.node
    def reply(inputs: list[Any]) -> list[Any]:
        return inputs

    graph.add_conditional_edges("classify", lambda kind: kind, ["billing", "support"])
    graph.add_edge("billing", "reply").add_edge("support", "reply")
    result = await graph.run("an invoice question")
    assert result.output == ["billing handled billing"]
    assert set(result.outputs) == {"classify", "billing", "reply"}


async def test_a_manifest_names_registered_nodes_and_loads_from_json_or_yaml(
    tmp_path: Path,
) -> None:
    # covers L-04, L-05, L-06: a registry of Python nodes, graphs by name
    registry = Registry()

    @registry.node
    def split(inputs: list[Any]) -> dict[str, list[str]]:
        return {"words": str(inputs[0]).split()}

    @registry.node
    def shout(inputs: list[Any]) -> str:
        return str(inputs[0]).upper()

    @registry.node
    def join(inputs: list[Any]) -> str:
        return " ".join(inputs[0])

    @registry.condition
    def has_words(output: Any) -> bool:
        return bool(output["words"])

    registry.add_graph({"key": "loud", "nodes": {"shout": "shout"}})
    manifest = {
        "key": "shouting",
        "nodes": {
            "split": "split",
            "each": {"map": "loud", "items": "words", "max_concurrency": 2},
            "join": "join",
        },
        "edges": [{"from": "split", "to": "each", "when": "has_words"}, ["each", "join"]],
    }
    (tmp_path / "shouting.json").write_text(json.dumps(manifest))
    graph = registry.load(tmp_path / "shouting.json")
    assert (await graph.run("graphs are fun")).output == "GRAPHS ARE FUN"
    yaml_text = """
key: shouting_yaml
nodes: {split: split, each: {map: loud, items: words}, join: join}
edges:
  - [split, each]
  - [each, join]
"""
    registry.add_graph(yaml_text)
    assert registry.graph_keys() == ("loud", "shouting", "shouting_yaml")
    assert (await registry.graph("shouting_yaml").run("a b")).output == "A B"
    with pytest.raises(UserError, match="node 'x' names 'nope', which is not registered"):
        registry.load({"key": "broken", "nodes": {"x": "nope"}})
    with pytest.raises(UserError, match="names unknown condition 'maybe'"):
        registry.load(
            {
                "key": "broken",
                "nodes": {"a": "split", "b": "join"},
                "edges": [{"from": "a", "to": "b", "when": "maybe"}],
            }
        )
    with pytest.raises(UserError, match="Invalid graph manifest at 'max_rounds'"):
        registry.load({"key": "broken", "nodes": {"a": "split"}, "max_rounds": 0})
    with pytest.raises(UserError, match="No graph 'other' in the registry"):
        registry.graph("other")


def test_mermaid_shows_nodes_edges_conditions_and_loops() -> None:
    graph = Graph("review", entry="draft", max_rounds=3)
    graph.add_node("draft", lambda inputs: "text").add_node("critic", lambda inputs: "ok")
    sub = Graph("one").add_node("one", len)
    graph.add_map("each", sub)
    graph.add_edge("draft", "critic").add_edge("critic", "draft")
    graph.add_edge("critic", "each", when=lambda out: out == "ok", label="approved")
    assert graph.to_mermaid() == (
        "flowchart TD\n"
        "    __start__((start))\n"
        '    draft["draft"]\n'
        '    critic["critic"]\n'
        '    each[/"each (map)"/]\n'
        "    __start__ --> draft\n"
        "    draft --> critic\n"
        "    critic -->|loop| draft\n"
        "    critic -.->|approved| each\n"
    )


async def test_a_resumed_execution_skips_the_nodes_that_finished() -> None:
    # the Checkpointer seam: outputs saved per node, the next start with the id reuses them
    checkpointer = MemoryCheckpointer()
    assert isinstance(checkpointer, Checkpointer)
    calls: list[str] = []
    failing = True

    def fetch(inputs: list[Any]) -> int:
        calls.append("fetch")
        return 20

    def compute(inputs: list[Any]) -> int:
        calls.append("compute")
        if failing:
            raise ConnectionError("lost the worker")
        return inputs[0] + 1

    graph = Graph("resumable", checkpointer=checkpointer)
    graph.add_node("fetch", fetch).add_node("compute", compute).add_edge("fetch", "compute")
    first = await graph.run(None, execution_id="job-1")
    assert first.status == "failed"
    saved = await checkpointer.load("job-1")
    assert saved is not None
    assert dict(saved.finished) == {"fetch@0": 20}
    assert saved.status == "failed"
    failing = False
    second = await graph.run(None, execution_id="job-1")
    assert (second.status, second.output) == ("completed", 21)
    assert calls == ["fetch", "compute", "compute"]
    steps = checkpointer.steps["job-1"]
    assert [dict(s.finished) for s in steps] == [{"fetch@0": 20}, {"compute@0": 21}]


async def test_spawned_and_mapped_executions_checkpoint_under_their_own_ids() -> None:
    checkpointer = MemoryCheckpointer()
    inner = Graph("inner").add_node("inner", lambda inputs: inputs[0] * 2)
    graph = Graph("outer", checkpointer=checkpointer)

    async def spawn(inputs: list[Any], ctx: NodeContext) -> Any:
        return (await ctx.spawn(inner, 5)).output

    graph.add_node("spawn", spawn).add_node("items", lambda inputs: [1, 2])
    graph.add_map("each", inner).add_edge("spawn", "items").add_edge("items", "each")
    await graph.run(None, execution_id="root")
    assert sorted(checkpointer.checkpoints) == [
        "root",
        "root/each@0[0]",
        "root/each@0[1]",
        "root/spawn@0~1",
    ]
    spawned = await checkpointer.load("root/spawn@0~1")
    assert spawned is not None
    assert spawned.output == 10


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
manifest_like = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["g", "bad key", 3]) | st.text(max_size=5),
        "nodes": st.dictionaries(
            st.sampled_from(["a", "b", "c d"]),
            st.sampled_from(["split", "missing"]) | json_values,
            max_size=3,
        )
        | json_values,
        "edges": st.lists(
            st.lists(st.sampled_from(["a", "b", "z"]), max_size=3) | json_values, max_size=3
        ),
        "entry": json_values,
        "max_rounds": json_values,
        "output": json_values,
    },
)


@settings(max_examples=200, deadline=None)
@given(manifest_like)
def test_any_manifest_builds_or_is_a_user_error(data: dict[str, Any]) -> None:
    registry = Registry()
    registry.add_node("split", lambda inputs: inputs)
    try:
        graph = registry.build(data)
    except UserError:
        return
    assert isinstance(graph, Graph)


async def test_a_stream_runs_once() -> None:
    graph = Graph("once").add_node("a", lambda inputs: 1)
    stream = graph.stream()
    assert [s.type async for s in stream][-1] == "graph.after"
    with pytest.raises(UserError, match="A GraphStream runs once"):
        [s async for s in stream]


async def test_a_manifest_names_registered_policies_at_graph_and_node_level() -> None:
    # covers L-04 (graph and node policies of a manifest), L-25
    from bastion.governance import max_cycles, max_loop

    registry = Registry()
    registry.add_node("draft", lambda inputs: "draft").add_node("check", lambda inputs: "ok")
    registry.add_policy("no_repeats", max_cycles(0)).add_policy("loop_twice", max_loop("draft", 2))
    graph = registry.load(
        {
            "key": "drafting",
            "entry": ["draft"],
            "policies": ["no_repeats"],
            "nodes": {"draft": {"node": "draft", "policies": ["loop_twice"]}, "check": "check"},
            "edges": [["draft", "check"], ["check", "draft"]],
        }
    )
    result = await graph.run()
    assert result.rounds == 4
    assert result.stopped == ("draft",)
    with pytest.raises(UserError, match="names policy 'nope', which is not registered"):
        registry.load({"key": "x", "policies": ["nope"], "nodes": {"a": "draft"}})
