"""PostgreSQL schema and its migrations, applied by ``PostgresStores.open``.

Migrations run under a transaction-scoped advisory lock, so processes opening the same schema
at once apply each step exactly once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, LiteralString

from ._types import StoreError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MIGRATIONS", "migrate"]

# Append only: each item upgrades the schema by one version. Never edit a released step.
MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id text PRIMARY KEY, agent text NOT NULL, status text NOT NULL,
            last_seq bigint NOT NULL, created_at double precision NOT NULL,
            updated_at double precision NOT NULL)""",
        "CREATE INDEX runs_by_created ON runs (created_at DESC, run_id DESC)",
        """CREATE TABLE journal (
            run_id text NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
            schema_version integer NOT NULL, payload text NOT NULL,
            recorded_at double precision NOT NULL, PRIMARY KEY (run_id, seq))""",
        """CREATE TABLE sessions (
            session_id text PRIMARY KEY, entry_count bigint NOT NULL, state text,
            created_at double precision NOT NULL, updated_at double precision NOT NULL)""",
        """CREATE TABLE session_entries (
            session_id text NOT NULL, entry_id text NOT NULL, parent_id text,
            kind text NOT NULL, payload text NOT NULL, position bigint NOT NULL,
            created_at double precision NOT NULL,
            PRIMARY KEY (session_id, entry_id), UNIQUE (session_id, position))""",
        """CREATE TABLE artifacts (
            position bigserial PRIMARY KEY, artifact_id text NOT NULL UNIQUE,
            run_id text NOT NULL, role text NOT NULL, seq bigint NOT NULL,
            content text NOT NULL, sensitivity text NOT NULL, tags text NOT NULL,
            created_at double precision NOT NULL)""",
        "CREATE INDEX artifacts_by_run ON artifacts (run_id, position)",
        """CREATE TABLE counters (
            key text NOT NULL, window_start bigint NOT NULL, value double precision NOT NULL,
            PRIMARY KEY (key, window_start))""",
    ),
    (
        """CREATE TABLE leases (
            key text PRIMARY KEY, owner text NOT NULL, acquired_at double precision NOT NULL,
            renewed_at double precision NOT NULL, expires_at double precision NOT NULL)""",
        # The session's last entry, compared and set by every append (one row lock).
        "ALTER TABLE sessions ADD COLUMN head text",
        """UPDATE sessions s SET head = (SELECT e.entry_id FROM session_entries e
            WHERE e.session_id = s.session_id ORDER BY e.position DESC LIMIT 1)""",
    ),
)


async def migrate(conn: AsyncConnection[tuple[Any, ...]], schema: str) -> None:
    """Create ``schema`` and bring its tables to the newest version."""
    from psycopg import sql

    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"bastion:{schema}",))
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        await conn.execute("CREATE TABLE IF NOT EXISTS bastion_schema (version integer NOT NULL)")
        cur = await conn.execute("SELECT MAX(version) FROM bastion_schema")
        row = await cur.fetchone()
        current = int(row[0]) if row is not None and row[0] is not None else 0
        if current > len(MIGRATIONS):
            raise StoreError(
                f"PostgreSQL schema {schema!r} is at version {current}, newer than this Bastion "
                f"({len(MIGRATIONS)}); upgrade Bastion."
            )
        for version, statements in enumerate(MIGRATIONS[current:], start=current + 1):
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO bastion_schema (version) VALUES (%s)", (version,))
