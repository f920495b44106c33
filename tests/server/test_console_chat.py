"""The console's chat view in real Chromium: send a message, steer and queue while it streams."""

from __future__ import annotations

import asyncio
import re

from playwright.async_api import expect

from bastion.server import create_app

from ._agents import SENT, mailer
from ._console import TOKEN, browser, chatter, open_console, serving, shot


async def test_send_then_steer_and_queue_while_the_answer_streams(sqlite_url: str) -> None:
    # covers G-07
    streaming, gate = asyncio.Event(), asyncio.Event()
    app = create_app(
        chatter(streaming, gate), store=sqlite_url, auth={TOKEN: "acme"}, drain_timeout=1
    )
    errors: list[str] = []
    async with serving(app) as url, browser() as chromium:
        try:
            page = await open_console(chromium, url, errors)
            await page.get_by_role("link", name="Chat").click()
            await page.get_by_role("button", name="New session").click()
            await expect(page).to_have_url(re.compile(r"#/chat/session_"))
            transcript = page.get_by_role("log", name="Transcript")

            message = page.get_by_label("Message", exact=True)
            await message.fill("tides")
            await page.get_by_role("button", name="Send").click()
            await streaming.wait()  # the model is half way through its answer
            streamed = transcript.locator(".bubble.assistant.streaming")
            await expect(streamed).to_contain_text("Thinking about tides.")
            await expect(page.get_by_role("heading", name=re.compile("Session"))).to_contain_text(
                "running"
            )
            await shot(page, "chat-streaming")

            await message.fill("only spring tides")
            async with page.expect_response(re.compile(r"/messages$")) as steered:
                await page.get_by_role("button", name="Steer").click()
            assert (await (await steered.value).json())["mode"] == "steer"
            await message.fill("and the moon?")
            async with page.expect_response(re.compile(r"/messages$")) as queued:
                await page.get_by_role("button", name="Queue").click()
            assert (await (await queued.value).json())["mode"] == "queue"
            gate.set()

            # The steering message joined the running turn: the call of the step it cut
            # is answered "steered", then the model answers the new message; the queued
            # message is the next turn.
            await expect(transcript.locator(".bubble.assistant").last).to_have_text(
                re.compile(r"Answer to and the moon\? \(after 3 user messages\)\.")
            )
            await expect(page.get_by_role("heading", name=re.compile("Session"))).to_contain_text(
                "idle"
            )
            users = transcript.locator(".bubble.user .content")
            await expect(users).to_have_text(["tides", "only spring tides", "and the moon?"])
            answers = transcript.locator(".bubble.assistant .content")
            await expect(answers).to_have_text(
                [
                    "Thinking about tides. ",
                    "Answer to only spring tides (after 2 user messages).",
                    "Answer to and the moon? (after 3 user messages).",
                ]
            )
            cut = transcript.locator(".tool", has_text="check_tides")
            await expect(cut.locator(".result")).to_contain_text("steered")
            turns = transcript.locator(".turn-run").get_by_role("link", name=re.compile(r"^run_"))
            await expect(turns).to_have_count(2)  # the steer joined the first turn's run
            await shot(page, "chat-steered")

            # Reloaded, the page tells the same story from the session's event log.
            await page.reload()
            await expect(transcript.locator(".bubble.user .content")).to_have_text(
                ["tides", "only spring tides", "and the moon?"]
            )
        finally:
            gate.set()
    assert errors == []


async def test_deny_a_call_the_session_waits_for_from_the_chat(sqlite_url: str) -> None:
    SENT.clear()
    app = create_app(mailer(), store=sqlite_url, auth={TOKEN: "acme"})
    errors: list[str] = []
    async with serving(app) as url, browser() as chromium:
        page = await open_console(chromium, url, errors)
        await page.get_by_role("link", name="Chat").click()
        await page.get_by_role("button", name="New session").click()
        await expect(page).to_have_url(re.compile(r"#/chat/session_"))
        await page.get_by_label("Message", exact=True).fill("Mail Bob")
        await page.get_by_role("button", name="Send").click()

        card = page.get_by_role("region", name="Approve send_email?")
        await expect(card.locator(".args")).to_contain_text('"to": "bob@example.com"')
        heading = page.get_by_role("heading", name=re.compile("Session"))
        await expect(heading).to_contain_text("waiting")
        await shot(page, "chat-approval")
        await card.get_by_label("Reason (if denied)").fill("not today")
        await card.get_by_role("button", name="Deny").click()

        transcript = page.get_by_role("log", name="Transcript")
        mail = transcript.locator(".tool", has_text="send_email")
        await expect(mail.locator(".result")).to_contain_text("not today")
        await expect(transcript.locator(".bubble.assistant").last).to_contain_text("Done:")
        await expect(heading).to_contain_text("idle")
        await expect(card).to_have_count(0)
        await expect(transcript.locator(".turn-run")).to_have_text(
            [re.compile(r"^turn run_"), re.compile(r"^resumed run_")]
        )
        await shot(page, "chat-denied")
    assert SENT == []
    assert errors == []
