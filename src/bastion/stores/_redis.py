"""Redis backend (``redis://…``): redis.asyncio with Lua scripts for every multi-key write.

Key layout under a prefix (``?prefix=…`` in the URL, default ``bastion:``): per run a hash
(metadata) and a list (entries; index + 1 is the seq), sorted sets indexing runs by creation
time (all, per status, per agent); per session a hash, an entries list and an id → position
hash; artifact lists (all, per run); one hash per counter key with a field per window.
redis is imported lazily: ``pip install 'bastion[redis]'``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from bastion.core import RunStatus, UserError

from . import _redis_lua as lua
from ._checks import (
    check_append,
    check_key,
    check_max_artifacts,
    check_page,
    check_runs_query,
    check_session_entry,
    last_n,
    new_artifact,
    seq_bound,
)
from ._leases import RedisLeaseStore
from ._ownership import SessionConflict
from ._protocols import Stores
from ._types import (
    Artifact,
    CorruptRecord,
    CounterResult,
    JournalConflict,
    JournalEntry,
    JsonObject,
    NewEntry,
    RunPage,
    RunRecord,
    Sensitivity,
    SessionEntry,
    SessionInfo,
    StoreError,
    decode_object,
    encode_object,
    from_timestamp,
    stored_entry,
)

__all__ = ["POOL_SIZE", "POOL_TIMEOUT", "RedisStores"]

POOL_SIZE = 50
"""Connections per opened store, unless the URL sets ``max_connections``."""
POOL_TIMEOUT = 30.0
"""Seconds a command waits for a free connection before ``ConnectionError``."""


def _split(raw: bytes) -> tuple[list[Any], str]:
    header, _, payload = raw.partition(b"\n")
    try:
        fields = json.loads(header)
        text = payload.decode()
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError: a damaged item
        raise CorruptRecord(f"A stored item has a damaged header or payload ({exc}).") from exc
    if not isinstance(fields, list) or len(fields) < 3:  # pyright: ignore[reportUnknownArgumentType]
        raise CorruptRecord(f"A stored item has a damaged header {header[:80]!r}.")
    return fields, text  # pyright: ignore[reportUnknownVariableType]


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _Base:
    def __init__(self, owner: RedisStores) -> None:
        self._owner = owner
        self._p = owner.prefix

    @property
    def _r(self) -> Any:
        return self._owner.client

    async def _eval(self, script: str, keys: list[str], args: list[str | bytes]) -> list[Any]:
        return cast("list[Any]", await self._owner.script(script)(keys=keys, args=args))


class RedisJournalStore(_Base):
    """Run journals: a metadata hash and an entry list per run, sorted-set indexes."""

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        """Append entries after ``expected_seq``; see :class:`JournalStore`."""
        checked = check_append(run_id, entries, expected_seq, status)
        now = time.time()
        items: list[str | bytes] = [
            json.dumps([e.kind, e.schema_version, now]).encode() + b"\n" + e.text.encode()
            for e in checked
        ]
        ok, last = await self._eval(
            lua.APPEND,
            [f"{self._p}run:{run_id}", f"{self._p}journal:{run_id}"],
            [str(expected_seq), repr(now), agent, status or "", self._p, run_id, *items],
        )
        if not ok:
            raise JournalConflict(run_id, expected_seq=expected_seq, actual_seq=int(last))
        return [stored_entry(e.seq, e.kind, e.schema_version, e.text, now) for e in checked]

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        """Return entries after ``after_seq``."""
        start = max(seq_bound(after_seq), 0)
        raw = cast("list[bytes]", await self._r.lrange(f"{self._p}journal:{run_id}", start, -1))
        out: list[JournalEntry] = []
        for seq, item in enumerate(raw, start=start + 1):
            (kind, version, at), payload = _split(item)
            out.append(stored_entry(seq, kind, version, payload, at))
        return out

    async def last_seq(self, run_id: str) -> int:
        """Return the last seq (0 if none)."""
        raw = await self._r.hget(f"{self._p}run:{run_id}", "last_seq")
        return int(cast("bytes", raw)) if raw is not None else 0

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete these runs' keys and index entries; return how many existed."""
        return await _delete_keyed(self, run_ids, lua.DELETE_RUN, self._run_keys)

    def _run_keys(self, run_id: str) -> list[str]:
        return [f"{self._p}run:{run_id}", f"{self._p}journal:{run_id}"]

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run's metadata."""
        raw = await self._r.hgetall(f"{self._p}run:{run_id}")
        return _record(run_id, cast("dict[bytes, bytes]", raw))

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RunPage:
        """Return runs newest first."""
        check_runs_query(status, limit, offset)
        if status is not None:
            index = f"{self._p}runs:status:{status}"
        elif agent is not None:
            index = f"{self._p}runs:agent:{agent}"
        else:
            index = f"{self._p}runs"
        if status is None or agent is None:
            ids = cast("list[bytes]", await self._r.zrevrange(index, offset, offset + limit))
            runs = [r for r in await self._records(ids) if r is not None]
            more = len(ids) > limit
            return RunPage(runs=runs[:limit], next_offset=offset + limit if more else None)
        # Status and agent together: walk the status index and filter on the agent.
        matched: list[RunRecord] = []
        start = 0
        while len(matched) <= offset + limit:
            ids = cast("list[bytes]", await self._r.zrevrange(index, start, start + 199))
            if not ids:
                break
            matched.extend(
                r for r in await self._records(ids) if r is not None and r.agent == agent
            )
            start += 200
        more = len(matched) > offset + limit
        return RunPage(
            runs=matched[offset : offset + limit], next_offset=offset + limit if more else None
        )

    async def _records(self, ids: list[bytes]) -> list[RunRecord | None]:
        async with self._r.pipeline(transaction=False) as pipe:
            for rid in ids:
                pipe.hgetall(f"{self._p}run:{_s(rid)}")
            rows = cast("list[dict[bytes, bytes]]", await pipe.execute())
        return [_record(_s(rid), row) for rid, row in zip(ids, rows, strict=True)]


def _record(run_id: str, raw: dict[bytes, bytes]) -> RunRecord | None:
    if not raw:
        return None
    return RunRecord(
        run_id=run_id,
        agent=raw[b"agent"].decode(),
        status=cast("RunStatus", raw[b"status"].decode()),
        last_seq=int(raw[b"last_seq"]),
        created_at=from_timestamp(float(raw[b"created_at"])),
        updated_at=from_timestamp(float(raw[b"updated_at"])),
    )


async def _delete_keyed(
    store: _Base, ids: Sequence[str], script: str, keys: Callable[[str], list[str]]
) -> int:
    """Run ``script`` (a delete) on each id's keys; the number of ids that existed."""
    deleted = 0
    for item in sorted(set(ids)):
        found = await store._eval(script, keys(item), [store._p, item])  # pyright: ignore[reportPrivateUsage]
        deleted += int(found[0])
    return deleted


class RedisSessionStore(_Base):
    """Session transcripts (entry lists with an id index) and state in the session hash."""

    def _keys(self, session_id: str) -> list[str]:
        p = f"{self._p}session:{session_id}"
        return [p, f"{p}:entries", f"{p}:ids", f"{self._p}sessions"]

    async def append(
        self,
        session_id: str,
        *,
        kind: str,
        payload: Mapping[str, object],
        parent_id: str | None = None,
        entry_id: str | None = None,
        expect_head: bool = False,
    ) -> SessionEntry:
        """Append a transcript entry (compare-and-set on the head with ``expect_head``)."""
        text, entry_id = check_session_entry(session_id, kind, payload, entry_id)
        if parent_id == "":
            raise UserError(_no_parent(session_id, parent_id))
        now = time.time()
        item = json.dumps([entry_id, parent_id, kind, now]).encode() + b"\n" + text.encode()
        reply = await self._eval(
            lua.SESSION_APPEND,
            self._keys(session_id),
            [session_id, entry_id, parent_id or "", repr(now), item, "1" if expect_head else "0"],
        )
        ok, result = reply[0], reply[1]
        if not ok:
            if _s(result) == "parent":
                raise UserError(_no_parent(session_id, parent_id or ""))
            if _s(result) == "head":
                head = _s(reply[2]) or None
                raise SessionConflict(session_id, expected_head=parent_id, actual_head=head)
            raise UserError(
                f"Session {session_id!r} already has an entry {entry_id!r}; entry ids are unique."
            )
        return SessionEntry(
            session_id=session_id,
            entry_id=entry_id,
            parent_id=parent_id,
            kind=kind,
            payload=decode_object(text),
            position=int(result),
            created_at=from_timestamp(now),
        )

    async def entries(self, session_id: str) -> list[SessionEntry]:
        """Return the transcript in insertion order."""
        raw = cast("list[bytes]", await self._r.lrange(self._keys(session_id)[1], 0, -1))
        out: list[SessionEntry] = []
        for position, item in enumerate(raw, start=1):
            (eid, pid, kind, at), payload = _split(item)
            out.append(
                SessionEntry(
                    session_id=session_id,
                    entry_id=eid,
                    parent_id=pid,
                    kind=kind,
                    payload=decode_object(payload),
                    position=position,
                    created_at=from_timestamp(at),
                )
            )
        return out

    async def get_state(self, session_id: str) -> JsonObject | None:
        """Return the state object."""
        raw = await self._r.hget(self._keys(session_id)[0], "state")
        return decode_object(cast("bytes", raw)) if raw is not None else None

    async def put_state(self, session_id: str, state: Mapping[str, object]) -> None:
        """Replace the state object."""
        check_key(session_id, "session_id")
        text = encode_object(state, "Session state")
        keys = self._keys(session_id)
        await self._eval(
            lua.SESSION_STATE, [keys[0], keys[3]], [session_id, repr(time.time()), text]
        )

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions' keys and index entries; return how many existed."""
        return await _delete_keyed(self, session_ids, lua.DELETE_SESSION, self._keys)

    async def list_sessions(self, *, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Return sessions newest first."""
        check_page(limit, offset)
        ids = cast(
            "list[bytes]",
            await self._r.zrevrange(f"{self._p}sessions", offset, offset + limit - 1),
        )
        async with self._r.pipeline(transaction=False) as pipe:
            for sid in ids:
                pipe.hmget(self._keys(_s(sid))[0], ["entry_count", "created_at", "updated_at"])
            rows = cast("list[list[bytes]]", await pipe.execute())
        return [
            SessionInfo(
                session_id=_s(sid),
                entry_count=int(count),
                created_at=from_timestamp(float(created)),
                updated_at=from_timestamp(float(updated)),
            )
            for sid, (count, created, updated) in zip(ids, rows, strict=True)
        ]


def _no_parent(session_id: str, parent_id: str) -> str:
    return (
        f"Session {session_id!r} has no entry {parent_id!r}; parent_id must name an entry of "
        "the same session, or be None for a root."
    )


class RedisArtifactStore(_Base):
    """Progress artifacts: JSON documents in one list for all runs and one per run."""

    async def write(
        self,
        run_id: str,
        content: str,
        *,
        role: str,
        seq: int,
        sensitivity: Sensitivity = "internal",
        tags: Sequence[str] = (),
    ) -> Artifact:
        """Store one artifact (both lists in one MULTI/EXEC)."""
        artifact = new_artifact(run_id, content, role, seq, sensitivity, tags)
        doc = json.dumps(
            [
                artifact.artifact_id,
                run_id,
                role,
                seq,
                content,
                sensitivity,
                list(tags),
                artifact.created_at.timestamp(),
            ],
            ensure_ascii=False,
        )
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.rpush(f"{self._p}artifacts", doc)
            pipe.rpush(f"{self._p}artifacts:run:{run_id}", doc)
            await pipe.execute()
        return artifact

    async def read(
        self,
        *,
        run_id: str | None = None,
        role: str | None = None,
        since_seq: int = 0,
        max_artifacts: int | None = None,
    ) -> list[Artifact]:
        """Return matching artifacts in the order written."""
        check_max_artifacts(max_artifacts)
        key = f"{self._p}artifacts" if run_id is None else f"{self._p}artifacts:run:{run_id}"
        raw = cast("list[bytes]", await self._r.lrange(key, 0, -1))
        found: list[Artifact] = []
        for doc in raw:
            aid, rid, r, s, content, sens, tags, at = json.loads(doc)
            if (role is None or r == role) and s > since_seq:
                found.append(
                    Artifact(
                        artifact_id=aid,
                        run_id=rid,
                        role=r,
                        seq=s,
                        content=content,
                        sensitivity=sens,
                        tags=tuple(tags),
                        created_at=from_timestamp(at),
                    )
                )
        return last_n(found, max_artifacts)


class RedisCounterStore(_Base):
    """Counters: one hash per key, one field per window; adds run as a Lua script."""

    async def get(self, key: str, *, window_start: int = 0) -> float:
        """Return the value."""
        raw = await self._r.hget(f"{self._p}counter:{key}", str(window_start))
        return float(cast("bytes", raw)) if raw is not None else 0.0

    async def add(self, key: str, amount: float, *, window_start: int = 0) -> float:
        """Add unconditionally."""
        return (await self._add(key, amount, None, window_start)).value

    async def try_add(
        self, key: str, amount: float, *, maximum: float, window_start: int = 0
    ) -> CounterResult:
        """Add if the result stays within ``maximum``."""
        return await self._add(key, amount, maximum, window_start)

    async def _add(
        self, key: str, amount: float, maximum: float | None, window_start: int
    ) -> CounterResult:
        check_key(key, "Counter key")
        ok, value = await self._eval(
            lua.COUNTER_ADD,
            [f"{self._p}counter:{key}"],
            [
                str(window_start),
                repr(float(amount)),
                "" if maximum is None else repr(float(maximum)),
            ],
        )
        return CounterResult(accepted=bool(ok), value=float(value))

    async def reset(self, key: str, *, window_start: int | None = None) -> None:
        """Delete one window or all windows of ``key``."""
        if window_start is None:
            await self._r.delete(f"{self._p}counter:{key}")
        else:
            await self._r.hdel(f"{self._p}counter:{key}", str(window_start))


class RedisStores(Stores):
    """The four stores on one Redis server, under a key prefix."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "bastion:",
        display_url: str = "",
        max_connections: int = POOL_SIZE,
    ) -> None:
        self.url = display_url or "redis://"
        self._max_connections = max_connections
        self.prefix = prefix
        self._client_url = url
        self._client: Any = None
        self._scripts: dict[str, Any] = {}
        # Agents sharing an unopened store all open it on their first run: one client.
        self._opening = asyncio.Lock()
        self.journal = RedisJournalStore(self)
        self.sessions = RedisSessionStore(self)
        self.artifacts = RedisArtifactStore(self)
        self.counters = RedisCounterStore(self)
        self.leases = RedisLeaseStore(self)

    @property
    def client(self) -> Any:
        """The open client."""
        if self._client is None:
            raise StoreError(
                f"Redis store {self.url!r} is not open; use `async with open_store(url)` or "
                "`await stores.open()` first."
            )
        return self._client

    def script(self, source: str) -> Any:
        """Return the registered script for ``source`` (EVALSHA, loading it on first use)."""
        registered = self._scripts.get(source)
        if registered is None:
            registered = self._scripts[source] = self.client.register_script(source)
        return registered

    async def open(self) -> None:
        """Connect and check the server answers; idempotent.

        Concurrent callers wait for one opening instead of each creating a client.
        """
        if self._client is not None:
            return
        async with self._opening:
            if self._client is None:
                await self._open()

    async def _open(self) -> None:
        try:
            from redis.asyncio import Redis

            from ._redis_pool import FairConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise UserError("The Redis store needs redis-py: pip install 'bastion[redis]'") from exc
        # Past ``max_connections`` a command waits its turn (up to POOL_TIMEOUT) instead of
        # failing at once with MaxConnectionsError, as it does with redis-py's default pool.
        pool: Any = FairConnectionPool.from_url(  # pyright: ignore[reportUnknownMemberType]
            self._client_url, max_connections=self._max_connections, wait_timeout=POOL_TIMEOUT
        )
        client: Any = Redis.from_pool(pool)
        try:
            await client.ping()
        except Exception as exc:
            await client.aclose()
            raise StoreError(f"Cannot open Redis store {self.url!r}: {exc}") from exc
        self._client = client

    async def close(self) -> None:
        """Close the client's connections; idempotent."""
        client, self._client = self._client, None
        self._scripts.clear()
        self._opening = asyncio.Lock()  # bound to this loop once contended; a reopen may not be
        if client is not None:
            await client.aclose()
