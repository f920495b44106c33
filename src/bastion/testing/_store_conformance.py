"""One conformance suite for every store backend (STYLE 22), plus its worker processes.

A backend's test module subclasses :class:`StoreConformance` (and
:class:`ProcessStoreConformance` when several processes share the backend) as ``Test…`` and
provides a ``store_url`` fixture naming an isolated, empty store. Running this module as
``python -m bastion.testing._store_conformance <mode> …`` is the worker the process tests
start: ``writer``, ``flood`` and ``spend``.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

import pytest

from bastion.core import RunStatus, UserError
from bastion.stores import (
    JournalConflict,
    NewEntry,
    Stores,
    branch,
    open_store,
    prune_runs,
    prune_sessions,
)

from ._ownership_conformance import (
    OwnershipConformance,
    ProcessOwnershipConformance,
    read_line,
    start_together,
    start_worker,
)

__all__ = ["ProcessStoreConformance", "StoreConformance"]

MB = 1024 * 1024


def _entry(writer: str, n: int) -> NewEntry:
    return NewEntry(kind="tool_result", payload={"writer": writer, "n": n})


async def _append_until(stores: Stores, run_id: str, writer: str, count: int) -> list[int]:
    """Append ``count`` entries, re-reading after each conflict; return the seqs won."""
    won: list[int] = []
    seen = await stores.journal.last_seq(run_id)
    while len(won) < count:
        try:
            [stored] = await stores.journal.append(
                run_id, [_entry(writer, len(won))], expected_seq=seen, agent="a"
            )
        except JournalConflict as conflict:
            seen = conflict.actual_seq
            continue
        won.append(stored.seq)
        seen = stored.seq
    return won


class StoreConformance(OwnershipConformance):
    """Behaviour every :class:`~bastion.stores.Stores` backend must show, in one process.

    Subclasses provide a ``store_url`` fixture. ``independent_handles = False`` (the in-memory
    backend) makes the second handle the same object instead of a second connection.
    """

    independent_handles: ClassVar[bool] = True

    @pytest.fixture
    async def stores(self, store_url: str) -> AsyncIterator[Stores]:
        """The stores under test, open."""
        async with open_store(store_url) as stores:
            yield stores

    @pytest.fixture
    async def other(self, store_url: str, stores: Stores) -> AsyncIterator[Stores]:
        """A second handle on the same store (its own connection), as another writer has."""
        if not self.independent_handles:
            yield stores
            return
        async with open_store(store_url) as other:
            yield other

    # -- journal -------------------------------------------------------------------------

    async def test_large_payload_round_trip(self, stores: Stores) -> None:
        """A 5 MB payload with non-ASCII text and nested values reads back equal."""
        blob = "é" + "x" * (5 * MB) + "\u2603"
        payload = {"blob": blob, "nested": {"list": [1, 2.5, None, True, "z"]}}
        stored = await stores.journal.append(
            "run-big", [NewEntry(kind="model_response", payload=payload)], expected_seq=0
        )
        assert stored[0].seq == 1
        [entry] = await stores.journal.read("run-big")
        assert entry.payload == payload
        assert (entry.seq, entry.kind, entry.schema_version) == (1, "model_response", 1)

    async def test_quotes_backslashes_and_delimiters_in_a_batch_round_trip(
        self, stores: Stores
    ) -> None:
        """A batch of payloads full of what array and JSON encodings escape reads back equal."""
        tricky = [
            'say "hi"',
            'back\\slash \\" mixed',
            "{braces, commas}",
            "NULL",
            "",
            "line\nbreak\ttab",
            "\u00e9\u2603 \U0001f600",
            "'single' and `tick`",
        ]
        entries = [
            NewEntry(kind="tool_result", payload={"text": t, "i": i}) for i, t in enumerate(tricky)
        ]
        await stores.journal.append("run-tricky", entries, expected_seq=0)
        read = await stores.journal.read("run-tricky")
        assert [e.payload for e in read] == [{"text": t, "i": i} for i, t in enumerate(tricky)]

    async def test_ordering_metadata_and_after_seq(self, stores: Stores) -> None:
        """Entries keep their order, seqs, kinds and versions; run metadata follows."""
        kinds = ("run_started", "model_response", "tool_call_started")
        first = await stores.journal.append(
            "r1",
            [NewEntry(kind=k, payload={"i": i}) for i, k in enumerate(kinds)],
            expected_seq=0,
            agent="planner",
        )
        assert [e.seq for e in first] == [1, 2, 3]
        await stores.journal.append(
            "r1",
            [
                NewEntry(kind="tool_result", payload={"i": 3}, schema_version=2),
                NewEntry(kind="run_ended", payload={"i": 4}),
            ],
            expected_seq=3,
            status="completed",
        )
        entries = await stores.journal.read("r1")
        assert [(e.seq, e.kind, e.payload) for e in entries] == [
            (1, "run_started", {"i": 0}),
            (2, "model_response", {"i": 1}),
            (3, "tool_call_started", {"i": 2}),
            (4, "tool_result", {"i": 3}),
            (5, "run_ended", {"i": 4}),
        ]
        assert entries[3].schema_version == 2
        assert [e.seq for e in await stores.journal.read("r1", after_seq=3)] == [4, 5]
        assert await stores.journal.read("r1", after_seq=5) == []
        # Past any stored seq (even past a 64-bit column) is simply nothing newer.
        assert await stores.journal.read("r1", after_seq=2**64) == []
        assert await stores.journal.last_seq("r1") == 5
        run = await stores.journal.get_run("r1")
        assert run is not None
        assert (run.run_id, run.agent, run.status, run.last_seq) == (
            "r1",
            "planner",
            "completed",
            5,
        )
        assert run.created_at <= run.updated_at
        assert await stores.journal.get_run("nope") is None
        assert await stores.journal.read("nope") == []
        assert await stores.journal.last_seq("nope") == 0

    async def test_conflict_leaves_no_torn_state(self, stores: Stores, other: Stores) -> None:
        """A stale writer gets JournalConflict with a clear message; nothing of it is written."""
        await stores.journal.append("r", [_entry("a", 0)], expected_seq=0, agent="x")
        with pytest.raises(JournalConflict) as info:
            await other.journal.append("r", [_entry("b", 0), _entry("b", 1)], expected_seq=0)
        assert (info.value.expected_seq, info.value.actual_seq) == (0, 1)
        assert str(info.value).startswith(
            "Journal of run 'r' is at seq 1, but this writer expected 0: another writer "
            "appended first and nothing was written."
        )
        with pytest.raises(JournalConflict):
            await other.journal.append("r", [_entry("b", 0)], expected_seq=2)
        with pytest.raises(JournalConflict):
            await other.journal.append("fresh", [_entry("b", 0)], expected_seq=3)
        assert [e.payload for e in await stores.journal.read("r")] == [{"writer": "a", "n": 0}]
        assert await stores.journal.get_run("fresh") is None

    async def test_concurrent_tasks_one_winner_per_seq(self, stores: Stores, other: Stores) -> None:
        """Many concurrent writers: one winner per seq, no gaps, no duplicates."""
        handles = [stores, other]
        results = await asyncio.gather(
            *(
                handles[i % 2].journal.append("race", [_entry(f"w{i}", 0)], expected_seq=0)
                for i in range(10)
            ),
            return_exceptions=True,
        )
        winners = [r for r in results if isinstance(r, list)]
        assert len(winners) == 1
        assert all(isinstance(r, JournalConflict) for r in results if not isinstance(r, list))
        # Eight writers racing for 40 seqs: each wins exactly its 5, without gaps or dupes.
        won = await asyncio.gather(
            *(_append_until(handles[i % 2], "race", f"v{i}", 5) for i in range(8))
        )
        seqs = sorted(s for w in won for s in w)
        assert seqs == list(range(2, 42))
        entries = await stores.journal.read("race")
        assert [e.seq for e in entries] == list(range(1, 42))
        for i, mine in enumerate(won):
            assert [entries[s - 1].payload for s in mine] == [
                {"writer": f"v{i}", "n": n} for n in range(5)
            ]

    async def test_list_runs_filters_and_paging(self, stores: Stores) -> None:
        """list_runs pages newest first and filters by status and agent."""
        for i in range(7):
            await stores.journal.append(
                f"run-{i}",
                [_entry("w", 0)],
                expected_seq=0,
                agent="alpha" if i % 2 else "beta",
                status="completed" if i < 3 else None,
            )
        everything = await stores.journal.list_runs(limit=100)
        assert everything.next_offset is None
        assert sorted(r.run_id for r in everything.runs) == [f"run-{i}" for i in range(7)]
        keys = [(r.created_at, r.run_id) for r in everything.runs]
        assert keys == sorted(keys, reverse=True)
        paged: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await stores.journal.list_runs(limit=3, offset=offset)
            assert len(page.runs) <= 3
            paged += [r.run_id for r in page.runs]
            offset = page.next_offset
        assert paged == [r.run_id for r in everything.runs]
        completed = await stores.journal.list_runs(status="completed")
        assert sorted(r.run_id for r in completed.runs) == ["run-0", "run-1", "run-2"]
        alpha = await stores.journal.list_runs(agent="alpha")
        assert sorted(r.run_id for r in alpha.runs) == ["run-1", "run-3", "run-5"]
        both = await stores.journal.list_runs(agent="alpha", status="running", limit=1)
        assert both.next_offset == 1
        rest = await stores.journal.list_runs(agent="alpha", status="running", offset=1)
        assert sorted(r.run_id for r in both.runs + rest.runs) == ["run-3", "run-5"]
        # A status change moves the run between the status filters.
        await stores.journal.append("run-3", [_entry("w", 1)], expected_seq=1, status="failed")
        failed = await stores.journal.list_runs(status="failed")
        assert [r.run_id for r in failed.runs] == ["run-3"]
        running = await stores.journal.list_runs(status="running")
        assert sorted(r.run_id for r in running.runs) == ["run-4", "run-5", "run-6"]
        for bad_limit, bad_offset in ((0, 0), (1, -1), (2**64, 0), (1, 2**64)):
            with pytest.raises(UserError, match="Need 1 <= limit"):
                await stores.journal.list_runs(limit=bad_limit, offset=bad_offset)

    async def test_bad_appends_are_user_errors_and_write_nothing(self, stores: Stores) -> None:
        """Bad kinds, statuses and payloads raise UserError before any write."""
        with pytest.raises(UserError, match="not JSON-serialisable"):
            await stores.journal.append(
                "r",
                [_entry("a", 0), NewEntry(kind="tool_result", payload={"x": {1, 2}})],
                expected_seq=0,
            )
        with pytest.raises(UserError, match="Unknown journal entry kind 'nope'"):
            await stores.journal.append("r", [NewEntry(kind="nope", payload={})], expected_seq=0)  # pyright: ignore[reportArgumentType]
        with pytest.raises(UserError, match="at least one entry"):
            await stores.journal.append("r", [], expected_seq=0)
        with pytest.raises(UserError, match="Unknown run status 'done'"):
            await stores.journal.append("r", [_entry("a", 0)], expected_seq=0, status="done")  # pyright: ignore[reportArgumentType]
        assert await stores.journal.get_run("r") is None
        assert (await stores.journal.list_runs()).runs == []

    # -- sessions ------------------------------------------------------------------------

    async def test_session_entries_with_parent_ids(self, stores: Stores) -> None:
        """Session entries link by parent id; unknown parents and reused ids are refused."""
        s = stores.sessions
        root = await s.append("s1", kind="message", payload={"text": "hi"})
        a = await s.append("s1", kind="message", payload={"text": "a"}, parent_id=root.entry_id)
        b = await s.append(
            "s1", kind="message", payload={"text": "b"}, parent_id=root.entry_id, entry_id="e-b"
        )
        c = await s.append("s1", kind="tool", payload={"n": 1}, parent_id="e-b")
        assert (root.parent_id, a.parent_id, b.entry_id, c.parent_id) == (
            None,
            root.entry_id,
            "e-b",
            "e-b",
        )
        entries = await s.entries("s1")
        assert [(e.entry_id, e.position, e.payload) for e in entries] == [
            (root.entry_id, 1, {"text": "hi"}),
            (a.entry_id, 2, {"text": "a"}),
            ("e-b", 3, {"text": "b"}),
            (c.entry_id, 4, {"n": 1}),
        ]
        assert [e.entry_id for e in branch(entries, c.entry_id)] == [
            root.entry_id,
            "e-b",
            c.entry_id,
        ]
        assert [e.entry_id for e in branch(entries, a.entry_id)] == [root.entry_id, a.entry_id]
        with pytest.raises(UserError, match="Session 's1' has no entry 'ghost'"):
            await s.append("s1", kind="message", payload={}, parent_id="ghost")
        with pytest.raises(UserError, match="Session 's2' has no entry 'e-b'"):
            await s.append("s2", kind="message", payload={}, parent_id="e-b")
        with pytest.raises(UserError, match="already has an entry 'e-b'"):
            await s.append("s1", kind="message", payload={}, entry_id="e-b")
        assert len(await s.entries("s1")) == 4
        assert await s.entries("s2") == []

    async def test_session_state_and_listing(self, stores: Stores) -> None:
        """Session state is replaced by put_state; sessions list with paging."""
        s = stores.sessions
        assert await s.get_state("s1") is None
        await s.put_state("s1", {"mode": "steer", "todo": [1, 2]})
        await s.put_state("s1", {"mode": "queue"})
        assert await s.get_state("s1") == {"mode": "queue"}
        await s.append("s2", kind="message", payload={})
        await s.append("s2", kind="message", payload={})
        infos = await s.list_sessions()
        assert sorted((i.session_id, i.entry_count) for i in infos) == [("s1", 0), ("s2", 2)]
        assert len(await s.list_sessions(limit=1)) == 1
        assert len(await s.list_sessions(limit=1, offset=1)) == 1
        assert await s.list_sessions(offset=2) == []

    async def test_prune_runs_by_count_age_and_agent(self, stores: Stores) -> None:
        """Pruning deletes finished runs past the count or age; running ones stay."""
        j = stores.journal
        runs: list[tuple[str, str, RunStatus]] = [
            ("r1", "a", "completed"),
            ("r2", "a", "failed"),
            ("r3", "a", "completed"),
            ("r4", "a", "running"),
            ("r5", "b", "completed"),
        ]
        for run_id, agent, status in runs:
            await j.append(run_id, [_entry(run_id, 1)], expected_seq=0, agent=agent, status=status)
        pruned = await prune_runs(j, keep_last=2, agent="a")
        assert (pruned.deleted, pruned.examined) == (2, 4)
        assert [await j.get_run(r) for r in ("r1", "r2")] == [None, None]
        assert await j.read("r1") == []
        assert await j.last_seq("r2") == 0
        last = await j.get_run("r5")
        assert last is not None
        pruned = await prune_runs(j, before=last.updated_at)  # r3 is older; r4 is running
        assert pruned.deleted == 1
        page = await j.list_runs()
        assert sorted(r.run_id for r in page.runs) == ["r4", "r5"]
        assert (await prune_runs(j, keep_last=0)).deleted == 1  # r5; r4 may still continue
        with pytest.raises(UserError, match=r"before=.*keep_last="):
            await prune_runs(j)

    async def test_prune_sessions_by_count_and_filter(self, stores: Stores) -> None:
        """Pruning sessions deletes their entries and state; a filter scopes it."""
        s = stores.sessions
        for sid in ("t1-a", "t2-a", "t1-b", "t1-c"):
            await s.append(sid, kind="message", payload={"text": sid})
            await s.put_state(sid, {"n": sid})
        pruned = await prune_sessions(s, keep_last=1, where=lambda i: i.session_id[:3] == "t1-")
        assert (pruned.deleted, pruned.examined) == (2, 4)
        for sid in ("t1-a", "t1-b"):
            assert await s.entries(sid) == []
            assert await s.get_state(sid) is None
        assert sorted(i.session_id for i in await s.list_sessions()) == ["t1-c", "t2-a"]
        assert await s.delete_sessions(["t2-a", "ghost"]) == 1
        assert [i.session_id for i in await s.list_sessions()] == ["t1-c"]
        again = await s.append("t2-a", kind="message", payload={})
        assert again.position == 1  # a deleted session starts afresh

    async def test_concurrent_appends_to_one_session_get_dense_positions(
        self, stores: Stores, other: Stores
    ) -> None:
        """Appends racing on one session all land, at positions 1..n, each exactly once."""
        handles = [stores, other]
        root = await stores.sessions.append("s", kind="message", payload={"n": 0})
        written = await asyncio.gather(
            *(
                handles[i % 2].sessions.append(
                    "s", kind="message", payload={"n": i}, parent_id=root.entry_id
                )
                for i in range(1, 40)
            )
        )
        assert sorted(e.position for e in written) == list(range(2, 41))
        entries = await stores.sessions.entries("s")
        assert [e.position for e in entries] == list(range(1, 41))
        assert sorted(e.payload["n"] for e in entries) == list(range(40))  # pyright: ignore[reportArgumentType]
        assert {e.entry_id: e.position for e in entries} == {
            e.entry_id: e.position for e in [root, *written]
        }
        [info] = await stores.sessions.list_sessions()
        assert info.entry_count == 40

    # -- many callers on one store (agents and sessions sharing it) ------------------------

    async def test_concurrent_first_opens_all_see_an_open_store(self, store_url: str) -> None:
        """Many first opens at once (agents sharing a store) all go on with it open.

        The store opens once (one pool, one client, one worker thread) and closes cleanly.
        """
        shared = open_store(store_url)

        async def open_and_write(i: int) -> int:
            await shared.open()
            entry = await shared.sessions.append(f"s{i}", kind="message", payload={"i": i})
            return entry.position

        try:
            assert await asyncio.gather(*(open_and_write(i) for i in range(50))) == [1] * 50
        finally:
            await shared.close()
        if self.independent_handles:  # a second memory:// handle is another, empty store
            async with open_store(store_url) as stores:
                assert len(await stores.sessions.list_sessions(limit=100)) == 50

    async def test_hundreds_of_concurrent_callers_share_the_connections(
        self, stores: Stores
    ) -> None:
        """300 callers at once (more than any pool holds) wait their turn; none fails."""

        async def caller(i: int) -> None:
            await stores.journal.append(f"r{i}", [_entry("w", i)], expected_seq=0, agent="a")
            await stores.sessions.append(f"s{i}", kind="message", payload={"i": i})
            await stores.sessions.put_state(f"s{i}", {"i": i})

        await asyncio.gather(*(caller(i) for i in range(300)))
        page = await stores.journal.list_runs(limit=1000)
        assert len(page.runs) == 300
        assert len(await stores.sessions.list_sessions(limit=1000)) == 300
        assert await stores.sessions.get_state("s299") == {"i": 299}

    # -- artifacts -----------------------------------------------------------------------

    async def test_artifacts_since_seq_role_and_max(self, stores: Stores) -> None:
        """Artifacts filter by run, role and since_seq and keep the newest max_artifacts."""
        art = stores.artifacts
        for seq in (1, 2, 3, 4):
            await art.write("r1", f"note {seq}", role="planner" if seq % 2 else "critic", seq=seq)
        secret = await art.write(
            "r2", "other run", role="planner", seq=9, sensitivity="secret", tags=("a", "b")
        )
        assert [a.content for a in await art.read(run_id="r1")] == [
            f"note {i}" for i in range(1, 5)
        ]
        assert [a.seq for a in await art.read(run_id="r1", since_seq=2)] == [3, 4]
        assert [a.seq for a in await art.read(run_id="r1", role="planner")] == [1, 3]
        assert [a.seq for a in await art.read(run_id="r1", max_artifacts=2)] == [3, 4]
        assert await art.read(run_id="r1", max_artifacts=0) == []
        assert await art.read(run_id="r1", since_seq=2**64) == []
        assert len(await art.read(run_id="r1", max_artifacts=2**64)) == 4
        assert [a.run_id for a in await art.read(role="planner")] == ["r1", "r1", "r2"]
        [stored] = await art.read(run_id="r2")
        assert stored == secret
        assert (stored.sensitivity, stored.tags, stored.content) == (
            "secret",
            ("a", "b"),
            "other run",
        )
        with pytest.raises(UserError, match="Unknown sensitivity 'top'"):
            await art.write("r1", "x", role="planner", seq=5, sensitivity="top")  # pyright: ignore[reportArgumentType]
        assert len(await art.read()) == 5

    # -- counters ------------------------------------------------------------------------

    async def test_counters_add_get_reset_windows(self, stores: Stores) -> None:
        """Counters add per window, try_add refuses past the maximum, reset clears."""
        c = stores.counters
        assert await c.get("cost") == 0.0
        assert await c.add("cost", 1.25) == 1.25
        assert await c.add("cost", 0.5) == 1.75
        assert await c.add("cost", 2.0, window_start=86_400) == 2.0
        refused = await c.try_add("cost", 0.5, maximum=2.0)
        assert (refused.accepted, refused.value) == (False, 1.75)
        accepted = await c.try_add("cost", 0.25, maximum=2.0)
        assert (accepted.accepted, accepted.value) == (True, 2.0)
        fresh = await c.try_add("calls", 3, maximum=2)
        assert (fresh.accepted, fresh.value) == (False, 0.0)
        assert await c.get("calls") == 0.0
        await c.reset("cost", window_start=0)
        assert (await c.get("cost"), await c.get("cost", window_start=86_400)) == (0.0, 2.0)
        await c.add("cost", 1)
        await c.reset("cost")
        assert (await c.get("cost"), await c.get("cost", window_start=86_400)) == (0.0, 0.0)

    async def test_concurrent_try_add_never_exceeds_max(
        self, stores: Stores, other: Stores
    ) -> None:
        """Concurrent try_add calls accept exactly up to the maximum."""
        handles = [stores, other]
        results = await asyncio.gather(
            *(handles[i % 2].counters.try_add("budget", 1.0, maximum=37) for i in range(60))
        )
        assert sum(r.accepted for r in results) == 37
        assert sorted(r.value for r in results if r.accepted) == [float(v) for v in range(1, 38)]
        assert await stores.counters.get("budget") == 37.0


async def _worker(args: Sequence[str]) -> asyncio.subprocess.Process:
    return await start_worker("bastion.testing._store_conformance", args)


async def _start_together(*argv: Sequence[str]) -> list[asyncio.subprocess.Process]:
    return await start_together("bastion.testing._store_conformance", *argv)


class ProcessStoreConformance(ProcessOwnershipConformance):
    """Behaviour of backends shared by several processes: real OS processes race and die."""

    async def test_two_processes_one_winner_per_seq(self, store_url: str) -> None:
        """Two processes racing on one run each win distinct seqs, without gaps."""
        procs = await _start_together(
            *(["writer", store_url, "shared", f"p{i}", "25"] for i in range(2))
        )
        won: list[list[int]] = [json.loads(await read_line(p)) for p in procs]
        assert [await p.wait() for p in procs] == [0, 0]
        assert sorted(won[0] + won[1]) == list(range(1, 51))
        async with open_store(store_url) as stores:
            entries = await stores.journal.read("shared")
        assert [e.seq for e in entries] == list(range(1, 51))
        for i, mine in enumerate(won):
            assert [entries[s - 1].payload for s in mine] == [
                {"writer": f"p{i}", "n": n} for n in range(25)
            ]

    async def test_process_killed_mid_write_leaves_store_consistent(self, store_url: str) -> None:
        """A writer SIGKILLed mid-append leaves whole entries only, and the run goes on."""
        proc = await _worker(["flood", store_url, "killed"])
        seen = [int(await read_line(proc)) for _ in range(4)]
        assert seen == [1, 2, 3, 4]
        proc.send_signal(signal.SIGKILL)
        assert await proc.wait() == -signal.SIGKILL
        async with open_store(store_url) as stores:
            entries = await stores.journal.read("killed")
            last = await stores.journal.last_seq("killed")
            assert last >= 4
            assert [e.seq for e in entries] == list(range(1, last + 1))
            for e in entries:
                assert e.payload == {"i": e.seq, "blob": _flood_blob(e.seq)}
            await stores.journal.append("killed", [_entry("after", 0)], expected_seq=last)
            assert await stores.journal.last_seq("killed") == last + 1

    async def test_two_processes_cannot_overspend_a_budget(self, store_url: str) -> None:
        """Two processes spending one budget with try_add stop exactly at its maximum."""
        procs = await _start_together(
            *(["spend", store_url, "daily", "40", "50"] for _ in range(2))
        )
        accepted = [int(await read_line(p)) for p in procs]
        assert [await p.wait() for p in procs] == [0, 0]
        assert sum(accepted) == 50
        async with open_store(store_url) as stores:
            assert await stores.counters.get("daily") == 50.0


def _flood_blob(i: int) -> str:
    return f"{i}:" + "y" * 200_000


async def _main(mode: str, url: str, *rest: str) -> None:
    async with open_store(url) as stores:
        if mode == "flood":  # append until killed, reporting each committed seq
            seq = 0
            while True:
                payload = {"i": seq + 1, "blob": _flood_blob(seq + 1)}
                entry = NewEntry(kind="tool_result", payload=payload)
                await stores.journal.append(rest[0], [entry], expected_seq=seq)
                seq += 1
                print(seq, flush=True)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        if mode == "writer":
            run_id, writer, count = rest
            print(json.dumps(await _append_until(stores, run_id, writer, int(count))), flush=True)
        elif mode == "spend":
            key, attempts, maximum = rest
            results = [
                await stores.counters.try_add(key, 1.0, maximum=float(maximum))
                for _ in range(int(attempts))
            ]
            print(sum(r.accepted for r in results), flush=True)


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:]))
