"""The console's browser tests: scripted agents, a uvicorn server, Debian's Chromium."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from playwright.async_api import Browser, Page, async_playwright

from bastion import Agent, tool
from bastion.core import (
    ModelRequest,
    StreamChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolMessage,
    Usage,
    UserMessage,
)
from bastion.governance import Budget
from bastion.multi import as_tool
from bastion.testing import Call, FunctionModel, Turn

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "console"
TOKEN = "console-secret"


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncGenerator[str]:
    """``app`` under uvicorn on a free port; its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@asynccontextmanager
async def browser() -> AsyncGenerator[Browser]:
    """Debian's Chromium, headless, through Playwright (never a downloaded browser)."""
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=ARGS
        )
        try:
            yield chromium
        finally:
            await chromium.close()


async def open_console(chromium: Browser, url: str, errors: list[str]) -> Page:
    """A page of the console with the bearer token entered; page errors go to ``errors``."""
    page = await chromium.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(15_000)
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(f"{url}/console")
    await page.get_by_label("Bearer token").fill(TOKEN)
    await page.get_by_role("button", name="Use token").click()
    await page.get_by_text("token set").wait_for()
    await page.reload()  # the token is kept for the tab: a fresh page with it
    await page.get_by_role("heading", level=1).wait_for()
    return page


async def shot(page: Page, name: str) -> Path:
    """A full-page screenshot under ``.artifacts/console/`` (look at it)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path


REFUNDED: list[str] = []


def support(gate: asyncio.Event | None = None) -> Agent[None, str]:
    """Looks the order up (waiting on ``gate``), asks a sub-agent, refunds after approval."""

    @tool(side_effect_class="read_only")
    async def look_up_order(order: str) -> str:
        """Find an order.

        Args:
            order: The order id.
        """
        if gate is not None:
            await gate.wait()
        return f"Order {order}: 30 EUR, paid"

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def refund(order: str) -> str:
        """Refund an order.

        Args:
            order: The order id.
        """
        REFUNDED.append(order)
        return f"refunded {order}"

    @tool(side_effect_class="read_only")
    def read_policy(topic: str) -> str:
        """Read the refund policy.

        Args:
            topic: What about.
        """
        return "Refunds within 30 days."

    def policy_turn(request: ModelRequest) -> Turn:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(text="Policy: refunds within 30 days.")
        return Turn(tool_calls=[Call("read_policy", {"topic": "refunds"})])

    researcher = Agent(
        "researcher",
        model=FunctionModel(policy_turn, name="policy-model"),
        tools=[read_policy],
        description="Finds the policy that applies.",
    )

    def turn(request: ModelRequest) -> Turn:
        asked = next(m.text for m in request.messages if isinstance(m, UserMessage))
        order = re.sub(r"^Refund\s+", "", asked)
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(
                reasoning="The user wants a refund: check the order and the policy first.",
                text="Checking the order.",
                tool_calls=[
                    Call("look_up_order", {"order": order}),
                    Call("researcher", {"input": f"Policy for {order}?"}),
                ],
            )
        if len(results) == 2:
            return Turn(text="Refunding it.", tool_calls=[Call("refund", {"order": order})])
        return Turn(text=f"The refund of {order} went through.")

    return Agent(
        "support",
        model=FunctionModel(turn, name="support-model"),
        tools=[look_up_order, refund, as_tool(researcher)],
    )


def chatter(streaming: asyncio.Event, gate: asyncio.Event) -> Agent[None, str]:
    """First answer: streams a sentence, sets ``streaming``, waits on ``gate``, then asks
    for a tool; every later answer replies to the last user message at once.
    """

    @tool(side_effect_class="read_only")
    def check_tides(place: str) -> str:
        """Tide times.

        Args:
            place: Where.
        """
        return f"High tide at {place}: 14:02"

    async def answer(request: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        users = [m.text for m in request.messages if isinstance(m, UserMessage)]
        if len(users) == 1 and not gate.is_set():
            yield f"Thinking about {users[0]}. "
            streaming.set()
            await gate.wait()
            yield ToolCallStartChunk(id="tides-1", name="check_tides")
            yield ToolCallDeltaChunk(id="tides-1", arguments_delta='{"place": "Brest"}')
            yield ToolCallEndChunk(id="tides-1")
            return
        yield f"Answer to {users[-1]} (after {len(users)} user messages)."

    return Agent(
        "chatter",
        model=FunctionModel(stream_function=answer, name="chat-model"),
        tools=[check_tides],
    )


def analyst() -> Agent[None, str]:
    """Two looks at 6 USD a model call, under a 10 USD daily budget a person may raise."""

    @tool(side_effect_class="read_only")
    def look(what: str) -> str:
        """Look at something.

        Args:
            what: What.
        """
        return f"saw {what}"

    def turn(request: ModelRequest) -> Turn:
        looked = sum(1 for m in request.messages if isinstance(m, ToolMessage))
        if looked < 2:
            return Turn(
                tool_calls=[Call("look", {"what": f"page {looked}"})], usage=Usage(cost_usd=6)
            )
        return Turn(text="Both pages read.", usage=Usage(cost_usd=1))

    budget = Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50)
    return Agent(
        "analyst", model=FunctionModel(turn, name="analyst-model"), tools=[look], budget=budget
    )
