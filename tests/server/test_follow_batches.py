"""A follower gets a run's events in the batches they were written in, each event once.

The SSE route sends each batch in one write; what it sends must still be every written event
after the client's last one, in order, and nothing before it is written.
"""

from __future__ import annotations

import asyncio
import json

from bastion.server import EventLog, LoggedEvent
from bastion.server._events import Hub
from bastion.server._follow import follow_batches
from bastion.stores import open_store


def _events(first: int, last: int) -> list[LoggedEvent]:
    return [
        LoggedEvent(
            seq=s,
            type="text.delta",
            data=json.dumps({"seq": s, "type": "text.delta", "delta": f"w{s}"}),
        )
        for s in range(first, last + 1)
    ]


def _seqs(batches: list[list[LoggedEvent]]) -> list[list[int]]:
    return [[e.seq for e in batch] for batch in batches]


async def test_missed_then_live_events_come_in_their_written_batches(sqlite_url: str) -> None:
    async with open_store(sqlite_url) as stores:
        log, hub, stopping = EventLog(stores.artifacts), Hub(), asyncio.Event()
        hub.open("r1")
        await log.append("r1", _events(1, 3))  # written before the client connects
        await log.append("r1", _events(4, 5))
        got: list[list[LoggedEvent]] = []
        caught_up = asyncio.Event()

        async def client() -> None:
            async for batch in follow_batches(
                "r1", 2, log=log, hub=hub, journal=stores.journal, poll=1.0, stopping=stopping
            ):
                got.append(batch)
                caught_up.set()

        following = asyncio.create_task(client())
        await caught_up.wait()
        assert _seqs(got) == [[3, 4, 5]]  # everything missed after seq 2, in one batch

        live = _events(5, 8)  # seq 5 again (a resumed run): not sent twice
        await log.append("r1", live)
        hub.publish("r1", live)
        stopping.set()  # the server stops: the follower ends once the live batches are out
        hub.close("r1")
        await following
    assert _seqs(got) == [[3, 4, 5], [6, 7, 8]]
    assert [json.loads(e.data)["delta"] for b in got for e in b] == [
        "w3",
        "w4",
        "w5",
        "w6",
        "w7",
        "w8",
    ]
