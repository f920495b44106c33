"""``bastion serve``: a real server process, and a second server on the same store."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

import httpx
import pytest

from bastion import Agent
from bastion.cli._serve import load_served, parse_tokens
from bastion.core import UserError
from bastion.server import create_app

from ._agents import mailer, parse_sse
from .conftest import client, running

ROOT = Path(__file__).parents[2]


async def _port_of(process: asyncio.subprocess.Process) -> int:
    assert process.stderr is not None
    while line := (await process.stderr.readline()).decode():
        found = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", line)
        if found:
            return int(found.group(1))
    raise AssertionError("the server exited before it listened")


async def test_bastion_serve_process_and_a_second_server_share_runs(sqlite_url: str) -> None:
    env = {**os.environ, "BASTION_SERVER_TOKENS": "tok-1=acme"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bastion.cli", "serve", "tests/server/_agents.py:mailer",
        "--store", sqlite_url, "--port", "0", "--drain-timeout", "5",
        cwd=ROOT, env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        port = await asyncio.wait_for(_port_of(process), timeout=30)
        headers = {"Authorization": "Bearer tok-1"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers) as http:
            assert (await http.get("/runs")).status_code == 200
            run_id = (await http.post("/runs", json={"input": "Mail Bob"})).json()["run_id"]
            async with http.stream("GET", f"/runs/{run_id}/events") as response:
                there = [e async for e in parse_sse(response.aiter_lines())]
        assert there[-1].data["status"] == "awaiting_approval"

        here = create_app(mailer(), store=sqlite_url, auth={"tok-1": "acme"})
        async with running(here), client(here, "tok-1") as http:
            async with http.stream("GET", f"/runs/{run_id}/events") as response:
                assert [e async for e in parse_sse(response.aiter_lines())] == there
            assert (await http.get(f"/runs/{run_id}")).json()["tenant_id"] == "acme"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        assert process.stderr is not None
        rest = (await asyncio.wait_for(process.stderr.read(), timeout=30)).decode()
        # uvicorn shuts down gracefully (draining), then re-raises SIGTERM as its exit status
        assert await process.wait() == -signal.SIGTERM
    assert "Application shutdown complete." in rest


def test_serve_loads_agents_and_tokens() -> None:
    served = load_served("tests/server/_agents.py:mailer")
    assert isinstance(served, Agent)
    assert served.name == "mailer"
    with pytest.raises(UserError, match="serve an Agent or a dict of agents"):
        load_served("tests/server/_agents.py:SENT")
    assert parse_tokens(["a=acme", " ", "b = globex"]) == {"a": "acme", "b": "globex"}
    assert parse_tokens([""]) is None
    with pytest.raises(UserError, match="TOKEN=TENANT"):
        parse_tokens(["secret-without-tenant"])
