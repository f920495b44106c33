"""The console in real Chromium: start a run, watch it stream, approve it, see it finish."""

from __future__ import annotations

import asyncio
import re

import httpx
from playwright.async_api import expect

from bastion.server import create_app
from bastion.server._console import STATIC

from ._console import REFUNDED, TOKEN, analyst, browser, open_console, serving, shot, support


async def test_start_stream_approve_and_finish_a_run_from_the_page(sqlite_url: str) -> None:
    # covers G-07
    REFUNDED.clear()
    gate = asyncio.Event()
    app = create_app(support(gate), store=sqlite_url, auth={TOKEN: "acme"}, drain_timeout=1)
    errors: list[str] = []
    async with serving(app) as url, browser() as chromium:
        try:
            page = await open_console(chromium, url, errors)
            await page.get_by_label("Input").fill("Refund A-17")
            await page.get_by_role("button", name="Start run").click()
            await expect(page).to_have_url(re.compile(r"#/runs/run_"))

            # Live: the look-up waits on the gate, so this shows while the run is in flight.
            step = page.get_by_role("region", name="Step 1").first
            await expect(step.locator(":scope > .text")).to_have_text("Checking the order.")
            await expect(step.locator(":scope > details.reasoning")).to_contain_text(
                "check the order"
            )
            look_up = step.locator(":scope > .tools > .tool", has_text="look_up_order")
            await expect(look_up.locator(".tool-status")).to_have_text("running")
            await expect(look_up.locator(".args")).to_contain_text('"order": "A-17"')
            await expect(page.get_by_text("(live)")).to_be_visible()
            await shot(page, "run-streaming")
            gate.set()

            # The sub-agent's own steps and tool call, nested under the call that ran it.
            nested = page.get_by_label("Sub-agent researcher")
            await expect(nested.locator(".tool .name")).to_have_text("read_policy")
            await expect(nested.locator(".step .text").last).to_have_text(
                "Policy: refunds within 30 days."
            )
            await expect(look_up.locator(":scope > .result")).to_contain_text(
                "Order A-17: 30 EUR, paid"
            )
            await expect(look_up.locator(":scope > header .duration")).to_have_text(
                re.compile(r"\d+ ms|\d+\.\d+ s")
            )

            # The run suspends: the page offers the decision.
            card = page.get_by_role("region", name="Approve refund?")
            await expect(card.locator(".args")).to_contain_text('"order": "A-17"')
            await expect(page.locator("h1 + .row .status")).to_have_text("awaiting_approval")
            await expect(page.get_by_role("table", name="Usage by model")).to_contain_text(
                "support-model"
            )
            await expect(page.get_by_role("table", name="Usage by model")).to_contain_text(
                "policy-model"
            )
            await shot(page, "run-approval")
            assert REFUNDED == []
            await card.get_by_role("button", name="Approve").click()

            # It goes on and finishes, live.
            await expect(page.locator(".output .final").last).to_have_text(
                "The refund of A-17 went through."
            )
            await expect(page.locator("h1 + .row .status")).to_have_text("completed")
            await expect(page.get_by_text("Nothing waits for a decision.")).to_be_visible()
            counters = page.get_by_role("table", name="Counters")
            await expect(counters.get_by_role("row", name="steps")).to_contain_text("3")
            await expect(counters.get_by_role("row", name="tool calls")).to_contain_text("3")
            await shot(page, "run-completed")
            assert REFUNDED == ["A-17"]

            # The run list finds it by a search word.
            await page.get_by_role("link", name="Runs").first.click()
            found = page.get_by_role("status").filter(has_text="runs")
            await page.get_by_label("Search", exact=True).fill("no such words")
            await expect(found).to_have_text("0 of 2 runs")
            await page.get_by_label("Search", exact=True).fill("went through")
            await expect(found).to_have_text("1 of 2 runs")
            rows = page.get_by_role("table").locator("tbody tr")
            await expect(rows).to_have_count(1)
            await expect(rows.get_by_role("cell").nth(2)).to_have_text("completed")
            await shot(page, "run-list")

        finally:
            gate.set()  # a failure above must not leave the run waiting forever
    assert errors == []


async def test_a_tool_result_with_markup_renders_as_text(sqlite_url: str) -> None:
    attack = '<img src=x onerror="window.__xss = 1"><script>window.__xss = 2</script>'
    app = create_app(support(), store=sqlite_url, auth={TOKEN: "acme"}, drain_timeout=1)
    errors: list[str] = []
    async with serving(app) as url, browser() as chromium:
        page = await open_console(chromium, url, errors)
        await page.get_by_label("Input").fill(f"Refund {attack}")
        await page.get_by_role("button", name="Start run").click()
        look_up = page.locator(".tool", has_text="look_up_order").first
        await expect(look_up.locator(":scope > .result")).to_contain_text(
            f"Order {attack}: 30 EUR, paid"
        )
        await expect(page.get_by_role("region", name="Approve refund?")).to_be_visible()
        assert await page.evaluate("() => window.__xss") is None
        assert await page.locator("#view img, #view script").count() == 0
        await shot(page, "xss-as-text")
    assert errors == []


async def test_raise_a_budget_from_the_page(sqlite_url: str) -> None:
    app = create_app(analyst(), store=sqlite_url, auth={TOKEN: "acme"})
    errors: list[str] = []
    async with serving(app) as url, browser() as chromium:
        page = await open_console(chromium, url, errors)
        await page.get_by_label("Input").fill("Read both pages")
        await page.get_by_role("button", name="Start run").click()
        card = page.get_by_role("region", name="A budget limit was reached")
        await expect(card).to_contain_text("cost limit on 'llm' reached: 12 of 10 (day)")
        await expect(card.get_by_label("New limit")).to_have_value("20")
        usage = page.get_by_role("table", name="Usage by model")
        await expect(usage.get_by_role("row", name=re.compile("analyst-model"))).to_contain_text(
            "$12.0000"
        )
        budgets = page.get_by_role("table", name="Budgets")
        await expect(budgets.get_by_role("row", name="llm cost (day)")).to_contain_text("12 of 10")
        await shot(page, "budget-interrupt")
        await card.get_by_label("New limit").fill("30")
        await card.get_by_role("button", name="Raise budget").click()
        await expect(page.locator(".output .final").last).to_have_text("Both pages read.")
        await expect(page.locator("h1 + .row .status")).to_have_text("completed")
        await expect(usage.get_by_role("row", name=re.compile("analyst-model"))).to_contain_text(
            "$13.0000"
        )
        await shot(page, "budget-raised")
    assert errors == []


def test_the_console_files_name_no_other_origin() -> None:
    files = sorted(STATIC.rglob("*.*"))
    assert {f.suffix for f in files} == {".html", ".css", ".js"}
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.IGNORECASE), file
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"):
            assert sink not in text, (file, sink)


async def test_the_console_is_served_without_external_resources(sqlite_url: str) -> None:
    app = create_app(support(), store=sqlite_url, auth={TOKEN: "acme"}, drain_timeout=1)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        moved = await http.get("/console")
        assert (moved.status_code, moved.headers["location"]) == (307, "/console/")
        page = await http.get("/console/")
        assert page.status_code == 200
        assert "script-src 'self'" in page.headers["content-security-policy"]
        script = await http.get("/console/js/main.js")
        assert script.headers["content-type"].split(";")[0] in {
            "text/javascript",
            "application/javascript",
        }
        assert (await http.get("/agents")).status_code == 401
        agents = await http.get("/agents", headers={"Authorization": f"Bearer {TOKEN}"})
        assert agents.json() == [{"name": "support", "model": "test:support-model"}]
