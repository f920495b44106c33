"""A store that refuses a run's last journal write: the run ends failed, streams still end."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import httpx

from bastion import Agent, tool
from bastion.core import RunStatus
from bastion.server import create_app
from bastion.stores import JournalEntry, JournalStore, NewEntry, RunPage, RunRecord, open_store
from bastion.testing import Call, ScriptedModel, Turn

from ._agents import Sse, read_sse
from .conftest import client, running


class RefusingEnds:
    """A journal that fails the first ``refusals`` writes holding a ``run_ended`` entry."""

    def __init__(self, inner: JournalStore, refusals: int) -> None:
        self.inner = inner
        self.refusals = refusals
        self.refused = 0

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        if any(e.kind == "run_ended" for e in entries) and self.refused < self.refusals:
            self.refused += 1
            raise OSError("disk full")
        return await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        return await self.inner.read(run_id, after_seq)

    async def last_seq(self, run_id: str) -> int:
        return await self.inner.last_seq(run_id)

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self.inner.get_run(run_id)

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RunPage:
        return await self.inner.list_runs(status=status, agent=agent, limit=limit, offset=offset)

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        return await self.inner.delete_runs(run_ids)


@tool(side_effect_class="side_effecting")
def save(text: str) -> str:
    """Save a text.

    Args:
        text: What to save.
    """
    return f"saved {text}"


def _agent() -> Agent[None, str]:
    """Saves (its call is durable before it runs), then answers: the run's end is refused."""
    model = ScriptedModel([Turn(tool_calls=[Call("save", {"text": "x"})]), "All done."])
    return Agent("writer", model=model, tools=[save])


async def test_a_refused_run_ended_ends_the_stream_failed_and_the_record_failed(
    store_url: str,
) -> None:
    stores = open_store(store_url)
    journal = RefusingEnds(stores.journal, refusals=1)
    stores.journal = journal
    async with stores:
        stream = _agent().with_store(stores).stream("Write it")
        types = [event.type async for event in stream]  # no exception escapes the stream
        result = stream.result
        assert types[-2:] == ["agent.error", "agent.end"]
        assert result.status == "failed"
        assert result.error is not None
        assert result.error.code == "store_error"
        assert "disk full" in result.error.message
        assert result.output is None
        record = await stores.journal.get_run(result.run_id)
        assert record is not None
        assert record.status == "failed"  # closed in the store by the second attempt
        entries = await stores.journal.read(result.run_id)
        assert entries[-1].kind == "run_ended"
        ended = cast("dict[str, Any]", entries[-1].payload["state"])
        assert ended["error"]["code"] == "store_error"


async def _events(http: httpx.AsyncClient, run_id: str) -> list[Sse]:
    async with http.stream("GET", f"/runs/{run_id}/events") as response:
        return await read_sse(response)


async def test_the_server_logs_the_whole_failed_run_and_records_it_failed(store_url: str) -> None:
    stores = open_store(store_url)
    stores.journal = RefusingEnds(stores.journal, refusals=1)
    app = create_app(_agent(), store=stores)
    async with stores, running(app), client(app) as http:
        run_id = (await http.post("/runs", json={"input": "Write it"})).json()["run_id"]
        live = await _events(http, run_id)
        assert [e.event for e in live[-2:]] == ["agent.error", "agent.end"]
        assert live[-1].data["status"] == "failed"
        assert [e.id for e in live] == list(range(1, len(live) + 1))
        assert await _events(http, run_id) == live  # the log is complete in the store
        view = (await http.get(f"/runs/{run_id}")).json()
        assert (view["status"], view["error"]["code"]) == ("failed", "store_error")


async def test_followers_end_at_agent_end_when_the_record_stays_running(store_url: str) -> None:
    stores = open_store(store_url)
    stores.journal = RefusingEnds(stores.journal, refusals=2)  # both attempts refused
    app = create_app(_agent(), store=stores)
    async with stores, running(app), client(app) as http:
        run_id = (await http.post("/runs", json={"input": "Write it"})).json()["run_id"]
        live = await _events(http, run_id)
        assert live[-1].data["status"] == "failed"
        record = await stores.journal.get_run(run_id)
        assert record is not None
        assert record.status == "running"  # the store never learnt the end
        # A follower reading the store (as on another server process) ends at agent.end.
        async with asyncio.timeout(30):  # a guard: before the fix this waited for ever
            assert await _events(http, run_id) == live
