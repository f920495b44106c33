"""The trace view in real Chromium: a run's waterfall grows live, nests, shows attributes."""

from __future__ import annotations

import asyncio
import re

import httpx
from playwright.async_api import expect

from bastion.server import create_app

from ._console import TOKEN, browser, open_console, serving, shot, support

_HOSTILE = "A1<img src=x onerror=alert(1)>"


async def test_the_trace_of_a_live_run_nests_its_bars_and_shows_a_bars_attributes(
    sqlite_url: str,
) -> None:
    # covers G-07
    gate = asyncio.Event()
    app = create_app(support(gate), store=sqlite_url, auth={TOKEN: "acme"}, drain_timeout=1)
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with serving(app) as url, browser() as chromium:
        async with httpx.AsyncClient(base_url=url, headers=headers) as http:
            started = await http.post("/runs", json={"input": f"Refund {_HOSTILE}"})
        run_id = started.json()["run_id"]
        page = await open_console(chromium, url, errors)
        await page.goto(f"{url}/console#/runs/{run_id}/trace")
        chart = page.get_by_role("tree", name="Trace")

        # Live: the look-up waits on the gate, so its bar is open while the run goes on.
        look_up = chart.locator(".trace-row.kind-tool", has_text="look_up_order")
        await expect(look_up.locator(".bar")).to_have_class("bar kind-tool state-running open")
        await expect(page.get_by_text("(live)")).to_be_visible()
        await shot(page, "trace-live")
        gate.set()

        # The run suspends at the refund: every bar is in, nested under what ran it.
        refund = chart.locator(".trace-row.kind-tool", has_text="refund")
        await expect(refund.locator(".bar")).to_have_class(
            "bar kind-tool state-awaiting_approval open"
        )
        await expect(look_up.locator(".bar")).to_have_class("bar kind-tool state-ok")
        rows = chart.locator(".trace-row[data-kind]")
        shown = [
            (await row.get_attribute("data-depth"), await row.get_attribute("data-kind"),
             await row.locator(".name").text_content())
            for row in await rows.all()
        ]  # fmt: skip
        assert shown == [
            ("1", "run", "support"),
            ("2", "step", "step 1"), ("3", "model", "test:support-model"),
            ("3", "tool", "look_up_order"), ("3", "tool", "researcher"),
            ("4", "run", "researcher"),
            ("5", "step", "step 1"), ("6", "model", "test:policy-model"),
            ("6", "tool", "read_policy"),
            ("5", "step", "step 2"), ("6", "model", "test:policy-model"),
            ("2", "step", "step 2"), ("3", "model", "test:support-model"),
            ("3", "tool", "refund"),
        ]  # fmt: skip
        run_bar = chart.locator(".trace-row.kind-run").first.locator(".bar")
        await expect(run_bar).to_have_attribute("aria-label", re.compile(r"awaiting_approval"))
        await expect(page.locator("h1 + .row .status")).to_have_text("awaiting_approval")

        # A click on a bar shows its attributes; the hostile order id stays text.
        await look_up.locator(".bar").click()
        attributes = page.get_by_role("table", name="Attributes of look_up_order")
        await expect(attributes.get_by_role("row", name="status")).to_contain_text("ok")
        await expect(attributes.get_by_role("row", name="arguments")).to_contain_text(_HOSTILE)
        await expect(attributes.get_by_role("row", name="result")).to_contain_text("30 EUR")
        await chart.locator(".trace-row.kind-model").first.locator(".bar").click()
        model = page.get_by_role("table", name="Attributes of test:support-model")
        await expect(model.get_by_role("row", name="tokens")).to_contain_text("in,")
        assert await page.locator("main img").count() == 0
        await shot(page, "trace-suspended")
        assert errors == []
