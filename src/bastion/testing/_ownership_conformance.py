"""Conformance of every backend's ownership mechanisms: head-conditional session appends, leases.

Mixed into :class:`StoreConformance` (one process, two handles) and
:class:`ProcessStoreConformance` (real OS processes race). Running this module as
``python -m bastion.testing._ownership_conformance <mode> …`` is the worker the process tests
start: ``chain`` (append entries after the head, merging on conflict) and ``grab`` (race for
leases).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence

import pytest

from bastion.core import UserError
from bastion.stores import (
    LeaseHeld,
    LeaseLost,
    SessionConflict,
    SessionEntry,
    SessionStore,
    Stores,
    open_store,
)

__all__ = [
    "OwnershipConformance",
    "ProcessOwnershipConformance",
    "append_after_head",
    "read_line",
    "start_together",
    "start_worker",
]

T0 = 1_700_000_000.0


async def append_after_head(
    sessions: SessionStore, session_id: str, head: str | None, payload: dict[str, object]
) -> tuple[SessionEntry, int]:
    """Append after ``head``, following the head on each conflict; (entry, conflicts seen)."""
    conflicts = 0
    while True:
        try:
            entry = await sessions.append(
                session_id, kind="message", payload=payload, parent_id=head, expect_head=True
            )
        except SessionConflict as conflict:
            conflicts += 1
            head = conflict.actual_head
            continue
        return entry, conflicts


def assert_one_chain(entries: Sequence[SessionEntry]) -> None:
    """Each entry's parent is the one stored before it: a single chain, no fork."""
    parents = [e.parent_id for e in entries]
    assert parents == [None, *(e.entry_id for e in entries[:-1])]


class OwnershipConformance:
    """Conditional appends and leases, on two handles of one store."""

    async def test_conditional_session_append_compares_the_head(self, stores: Stores) -> None:
        """A stale head is refused with the actual head; nothing of it is written."""
        s = stores.sessions
        root = await s.append("s", kind="message", payload={"n": 0}, expect_head=True)
        a = await s.append("s", kind="message", payload={"n": 1}, parent_id=root.entry_id)
        with pytest.raises(SessionConflict) as info:
            await s.append(
                "s", kind="message", payload={"n": 2}, parent_id=root.entry_id, expect_head=True
            )
        assert (info.value.expected_head, info.value.actual_head) == (root.entry_id, a.entry_id)
        assert f"ends at entry {a.entry_id!r}" in str(info.value)
        with pytest.raises(SessionConflict) as empty:
            await s.append("s", kind="message", payload={}, expect_head=True)
        assert empty.value.actual_head == a.entry_id
        b = await s.append(
            "s", kind="message", payload={"n": 3}, parent_id=a.entry_id, expect_head=True
        )
        entries = await s.entries("s")
        assert [e.payload for e in entries] == [{"n": 0}, {"n": 1}, {"n": 3}]
        assert [e.position for e in entries] == [1, 2, 3]
        assert b.position == 3
        [info_row] = await s.list_sessions()
        assert info_row.entry_count == 3
        # A session that has only state is empty: its first entry is a root.
        await s.put_state("t", {"k": 1})
        await s.append("t", kind="message", payload={}, expect_head=True)
        with pytest.raises(UserError, match="has no entry 'ghost'"):
            await s.append("t", kind="message", payload={}, parent_id="ghost", expect_head=True)

    async def test_racing_conditional_appends_have_one_winner(
        self, stores: Stores, other: Stores
    ) -> None:
        """Of many appends after the same head, from two handles, exactly one lands."""
        handles = [stores, other]
        root = await stores.sessions.append("s", kind="message", payload={"n": 0})
        results = await asyncio.gather(
            *(
                handles[i % 2].sessions.append(
                    "s", kind="message", payload={"n": i}, parent_id=root.entry_id, expect_head=True
                )
                for i in range(1, 21)
            ),
            return_exceptions=True,
        )
        won = [r for r in results if isinstance(r, SessionEntry)]
        assert len(won) == 1
        assert all(isinstance(r, SessionConflict) for r in results if r not in won)
        entries = await stores.sessions.entries("s")
        assert [e.entry_id for e in entries] == [root.entry_id, won[0].entry_id]

    async def test_writers_following_the_head_keep_one_chain(
        self, stores: Stores, other: Stores
    ) -> None:
        """Two writers appending after the head they see (merging on conflict) never fork."""

        async def writer(handle: Stores, name: str) -> None:
            head: str | None = None
            for n in range(15):
                entry, _ = await append_after_head(
                    handle.sessions, "s", head, {"writer": name, "n": n}
                )
                head = entry.entry_id

        await asyncio.gather(writer(stores, "a"), writer(other, "b"))
        entries = await stores.sessions.entries("s")
        assert len(entries) == 30
        assert_one_chain(entries)
        for name in ("a", "b"):
            mine = [e.payload["n"] for e in entries if e.payload["writer"] == name]
            assert mine == list(range(15))

    async def test_lease_lifecycle(self, stores: Stores, other: Stores) -> None:
        """Acquire, refuse a second owner, renew, expire, take over, lose, release."""
        leases, rival = stores.leases, other.leases
        first = await leases.acquire("run:r1", "w1", ttl=10, now=T0)
        assert (first.owner, first.acquired_at, first.expires_at) == ("w1", T0, T0 + 10)
        with pytest.raises(LeaseHeld) as info:
            await rival.acquire("run:r1", "w2", ttl=10, now=T0 + 4)
        assert info.value.lease.owner == "w1"
        assert "owner 'w1' (held for 4.0 s" in str(info.value)
        again = await leases.acquire("run:r1", "w1", ttl=10, now=T0 + 5)  # its own: renewed
        assert (again.acquired_at, again.expires_at) == (T0, T0 + 15)
        renewed = await leases.renew("run:r1", "w1", ttl=10, now=T0 + 8)
        assert renewed.expires_at == T0 + 18
        held = await rival.get("run:r1")
        assert held is not None
        assert (held.owner, held.renewed_at, held.live(T0 + 17), held.live(T0 + 18)) == (
            "w1",
            T0 + 8,
            True,
            False,
        )
        taken = await rival.acquire("run:r1", "w2", ttl=10, now=T0 + 18)  # expired: taken over
        assert (taken.owner, taken.acquired_at) == ("w2", T0 + 18)
        with pytest.raises(LeaseLost, match="now owned by 'w2'"):
            await leases.renew("run:r1", "w1", ttl=10, now=T0 + 19)
        assert await leases.release("run:r1", "w1") is False
        assert await rival.release("run:r1", "w2") is True
        assert await leases.get("run:r1") is None
        with pytest.raises(LeaseLost, match="was released"):
            await leases.renew("run:r1", "w2", ttl=10, now=T0 + 20)
        free = await leases.acquire("run:r1", "w1", ttl=1, now=T0 + 20)
        assert free.acquired_at == T0 + 20

    async def test_racing_acquirers_have_one_winner(self, stores: Stores, other: Stores) -> None:
        """Owners racing for one free (or expired) lease: exactly one gets it."""
        handles = [stores, other]
        for key, start in (("k-free", None), ("k-expired", "old")):
            if start is not None:
                await stores.leases.acquire(key, start, ttl=1, now=T0)
            results = await asyncio.gather(
                *(
                    handles[i % 2].leases.acquire(key, f"o{i}", ttl=30, now=T0 + 5)
                    for i in range(12)
                ),
                return_exceptions=True,
            )
            winners = [r for r in results if not isinstance(r, BaseException)]
            assert len(winners) == 1, results
            assert all(isinstance(r, LeaseHeld) for r in results if r not in winners)
            held = await stores.leases.get(key)
            assert held is not None
            assert held.owner == winners[0].owner

    async def test_bad_lease_requests_are_user_errors(self, stores: Stores) -> None:
        """An empty key or owner and a ttl that is not positive are refused before a write."""
        with pytest.raises(UserError, match="lease key must be a non-empty string"):
            await stores.leases.acquire("", "w", ttl=1, now=T0)
        with pytest.raises(UserError, match="lease owner"):
            await stores.leases.acquire("k", "", ttl=1, now=T0)
        with pytest.raises(UserError, match="ttl must be a positive number"):
            await stores.leases.renew("k", "w", ttl=0, now=T0)
        assert await stores.leases.get("k") is None


async def start_worker(module: str, args: Sequence[str]) -> asyncio.subprocess.Process:
    """Start ``python -m module args…`` with pipes to its stdin and stdout."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def read_line(proc: asyncio.subprocess.Process) -> str:
    """The worker's next line of output (an error if it exits first)."""
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    if not line:
        raise AssertionError(f"worker exited early with status {await proc.wait()}")
    return line.decode().strip()


async def start_together(module: str, *argv: Sequence[str]) -> list[asyncio.subprocess.Process]:
    """Start workers, wait until each has opened the store, then release them at once."""
    procs = [await start_worker(module, a) for a in argv]
    for proc in procs:
        assert await read_line(proc) == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
    return procs


async def _together(*argv: Sequence[str]) -> list[str]:
    """Run workers of this module together; their answers."""
    procs = await start_together("bastion.testing._ownership_conformance", *argv)
    answers = [await read_line(p) for p in procs]
    assert [await p.wait() for p in procs] == [0] * len(procs)
    return answers


class ProcessOwnershipConformance:
    """Processes sharing a backend: one chain per session, one owner per lease."""

    async def test_processes_appending_to_one_session_keep_one_chain(self, store_url: str) -> None:
        """Three processes append to one session at once: every entry once, one chain."""
        await _together(*(["chain", store_url, "shared", f"p{i}", "20"] for i in range(3)))
        async with open_store(store_url) as stores:
            entries = await stores.sessions.entries("shared")
        assert len(entries) == 60
        assert_one_chain(entries)
        for i in range(3):
            mine = [e.payload["n"] for e in entries if e.payload["writer"] == f"p{i}"]
            assert mine == list(range(20))

    async def test_processes_racing_for_leases_get_one_owner_each(self, store_url: str) -> None:
        """Two processes grab the same 30 leases at once: each key has exactly one owner."""
        answers = await _together(*(["grab", store_url, f"p{i}", "30"] for i in range(2)))
        won = [set(json.loads(a)) for a in answers]
        assert won[0] | won[1] == {f"key-{k}" for k in range(30)}
        assert not won[0] & won[1]
        async with open_store(store_url) as stores:
            for i, keys in enumerate(won):
                for key in keys:
                    lease = await stores.leases.get(key)
                    assert lease is not None
                    assert lease.owner == f"p{i}"


async def _main(mode: str, url: str, *rest: str) -> None:
    async with open_store(url) as stores:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        if mode == "chain":
            session_id, writer, count = rest
            head: str | None = None
            conflicts = 0
            for n in range(int(count)):
                payload: dict[str, object] = {"writer": writer, "n": n}
                entry, lost = await append_after_head(stores.sessions, session_id, head, payload)
                head, conflicts = entry.entry_id, conflicts + lost
            print(conflicts, flush=True)
        elif mode == "grab":
            owner, count = rest
            won: list[str] = []
            for k in range(int(count)):
                try:
                    await stores.leases.acquire(f"key-{k}", owner, ttl=60, now=T0)
                except LeaseHeld:
                    continue
                won.append(f"key-{k}")
            print(json.dumps(won), flush=True)


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:]))
