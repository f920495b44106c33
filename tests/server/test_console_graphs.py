"""The console's graph view in real Chromium: start an execution, watch its nodes, answer."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from playwright.async_api import expect

from bastion.graph import Graph, NodeContext
from bastion.server import create_app

from ._console import TOKEN, browser, open_console, serving, shot


def review(gate: asyncio.Event) -> Graph:
    graph = Graph("review")

    async def draft(inputs: list[Any]) -> str:
        await gate.wait()
        return f"A post about {inputs[0]}"

    async def approve(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.pause({"draft": inputs[0]}, reason="Publish this post?")

    graph.add_node("draft", draft).add_node("approve", approve)
    graph.add_node("publish", lambda inputs: f"published: {inputs[0]}")
    graph.add_node("notify", lambda inputs: "notified")
    graph.add_edge("draft", "approve").add_edge("approve", "publish")
    graph.add_edge("approve", "notify")
    return graph


async def test_a_graph_runs_live_in_the_console_and_is_answered_there(sqlite_url: str) -> None:
    gate = asyncio.Event()
    app = create_app({}, graphs={"review": review(gate)}, store=sqlite_url, auth={TOKEN: "acme"})
    errors: list[str] = []
    async with serving(app) as url, browser() as chromium:
        page = await open_console(chromium, url, errors)
        await page.get_by_role("link", name="Graphs").click()
        listed = page.get_by_role("list", name="Graph review")
        await expect(listed.get_by_role("listitem")).to_have_count(4)
        await page.get_by_label("Input of review (JSON or text)").fill("graphs")
        await page.get_by_role("button", name="Start execution").click()
        await expect(page).to_have_url(re.compile(r"#/executions/gx_"))

        # Live: draft waits on the gate, so it shows running while the execution is in flight.
        draft = page.get_by_role("listitem", name="Node draft")
        await expect(draft.locator(".node-state")).to_have_text("running")
        await expect(page.get_by_role("listitem", name="Node publish")).to_contain_text("pending")
        await shot(page, "graph-running")
        gate.set()

        approve = page.get_by_role("listitem", name="Node approve")
        await expect(approve.locator(".node-state")).to_have_text("waiting")
        await expect(draft.locator(".node-state")).to_have_text("done")
        card = page.get_by_role("region", name="Publish this post?")
        await expect(card.locator(".args")).to_contain_text("A post about graphs")
        await expect(page.locator("h1 + .row .status")).to_have_text("awaiting_approval")
        await shot(page, "graph-waiting")

        await card.get_by_label("Answer (JSON)").fill('"ship it"')
        await card.get_by_role("button", name="Answer and resume").click()
        await expect(page.locator("h1 + .row .status")).to_have_text("completed")
        for node in ("draft", "approve", "publish", "notify"):
            state = page.get_by_role("listitem", name=f"Node {node}").locator(".node-state")
            await expect(state).to_have_text("done")
        await expect(page.locator("h1 + .row .output")).to_contain_text("published: ship it")
        signals = page.get_by_role("list", name="Signals").get_by_role("listitem")
        await expect(signals.last).to_contain_text("graph.after")
        await shot(page, "graph-completed")

        # The execution's trace: the graph's bar, a bar per node run under it.
        await page.get_by_role("link", name="Trace").click()
        chart = page.get_by_role("tree", name="Trace")
        graph_bar = chart.locator(".trace-row.kind-graph .bar")
        await expect(graph_bar).to_have_class("bar kind-graph state-completed")
        nodes = chart.locator(".trace-row.kind-node[data-depth='2'] .name")
        await expect(nodes).to_have_count(4)
        assert sorted(await nodes.all_text_contents()) == ["approve", "draft", "notify", "publish"]
        await chart.locator(".trace-row.kind-node", has_text="publish").locator(".bar").click()
        attributes = page.get_by_role("table", name="Attributes of publish")
        await expect(attributes.get_by_role("row", name="output")).to_contain_text("ship it")
        approve_row = chart.locator(".trace-row.kind-node", has_text="approve")
        await expect(approve_row.locator(".bar")).to_have_class("bar kind-node state-ok")
        await approve_row.locator(".bar").click()
        resumed = page.get_by_role("table", name="Attributes of approve")
        await expect(resumed.get_by_role("row", name="before_resume")).to_contain_text(
            "suspended: InterruptRequired"
        )
        await shot(page, "trace-execution")
    assert errors == []
