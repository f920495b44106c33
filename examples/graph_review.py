"""A durable review graph: a map of writer agents, an editor agent, a human approval.

``outline`` splits a topic into sections; ``sections`` maps a one-node graph over them (a
writer agent drafts each section); ``editor`` is an agent whose ``publish`` tool needs a
human's approval, so the execution suspends into the store; a fresh graph (another
process, in real life) resumes it with the approval, and only ``editor`` and ``report``
run: the drafts are not written again. Offline: the models are scripted.

    python examples/graph_review.py                       # run, suspend, resume, print
    bastion graph run examples/graph_review.py:graph --input '"durable graphs"'
    bastion graph resume gx_… --graph examples/graph_review.py:graph --approve publish_1
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, ToolMessage, UserMessage
from bastion.graph import Graph, GraphResult, StoreCheckpointer
from bastion.testing import Call, FunctionModel, Turn
from bastion.tools import ApprovalDecision, Directive

STORE = os.environ.get("BASTION_STORE", "sqlite:///.bastion/graph_review.db")
PUBLISHED: list[str] = []  # what the publish tool did (a side effect, shown by the demo)


def _last_user_text(request: ModelRequest) -> str:
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    content = users[-1].content if users else ""
    return content if isinstance(content, str) else str(content)


def _write(request: ModelRequest) -> Turn:
    return Turn(text=f"A paragraph on {_last_user_text(request)}.")


def _edit(request: ModelRequest) -> Turn:
    if not any(isinstance(m, AssistantMessage) for m in request.messages):
        draft = _last_user_text(request)
        return Turn(tool_calls=[Call("publish", {"text": draft}, id="publish_1")])
    results = [m.content for m in request.messages if isinstance(m, ToolMessage)]
    return Turn(text=f"Published after review: {results[-1]}")


@tool(side_effect_class="side_effecting", needs_approval=True)
def publish(text: str) -> str:
    """Publish the reviewed text."""
    PUBLISHED.append(text)
    return f"{len(text)} characters live"


def outline(inputs: list[Any]) -> list[str]:
    """The sections of the topic."""
    topic = str(inputs[0])
    return [f"why {topic}", f"how {topic} work", f"when to use {topic}"]


def join_sections(inputs: list[Any]) -> str:
    """The drafts, one paragraph each, for the editor."""
    return "\n".join(str(paragraph) for paragraph in inputs[0])


def report(inputs: list[Any]) -> dict[str, Any]:
    """The execution's output."""
    return {"editor": inputs[0], "published": len(PUBLISHED)}


def build(store: str = STORE) -> Graph:
    """The review graph, checkpointed into ``store``."""
    writer = Agent("writer", model=FunctionModel(_write))
    section = Graph("section").add_node("write", writer)
    editor = Agent("editor", model=FunctionModel(_edit), tools=[publish])
    graph = Graph("review", checkpointer=StoreCheckpointer(store))
    graph.add_node("outline", outline)
    graph.add_map("sections", section)
    graph.add_node("draft", join_sections)
    graph.add_node("editor", editor)
    graph.add_node("report", report)
    for source, target in (
        ("outline", "sections"),
        ("sections", "draft"),
        ("draft", "editor"),
        ("editor", "report"),
    ):
        graph.add_edge(source, target)
    return graph


graph = build()


async def main(store: str) -> GraphResult:
    """Run until the editor waits for approval, then resume in a fresh graph and approve."""
    first = await build(store).run("durable graphs")
    print(f"{first.execution_id}: {first.status}")  # suspended: publish needs approval
    approve = Directive(approvals=[ApprovalDecision(tool_call_id="publish_1", granted=True)])
    result = await build(store).resume(first.execution_id, approve)  # "another process"
    print(f"{result.execution_id}: {result.status} {result.output}")
    return result


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(f"sqlite:///{tmp}/review.db"))
