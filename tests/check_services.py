"""Say clearly whether the servers the test suite needs are reachable (``make test`` runs it).

The suite tests the PostgreSQL and Redis stores against real servers; a missing one fails
those tests rather than skipping them. This check runs first and names what is missing and
how to point the suite at it, instead of letting hundreds of tests fail one by one.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from tests._services import POSTGRES_ENV, REDIS_ENV, postgres_dsn, redis_url

POSTGRES = postgres_dsn()
REDIS = redis_url()


async def _postgres() -> str | None:
    import psycopg

    try:
        conn = await psycopg.AsyncConnection.connect(POSTGRES, connect_timeout=3)
    except Exception as exc:  # any reason: it is reported as it is
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    await conn.close()
    return None


async def _redis() -> str | None:
    from redis.asyncio import Redis

    client: Any = Redis.from_url(REDIS, socket_connect_timeout=3)  # pyright: ignore[reportUnknownMemberType]
    try:
        await client.ping()
    except Exception as exc:  # any reason: it is reported as it is
        return f"{type(exc).__name__}: {exc}"
    finally:
        await client.aclose()
    return None


async def _main() -> int:
    problems = {
        f"PostgreSQL at {POSTGRES} (set {POSTGRES_ENV})": await _postgres(),
        f"Redis at {REDIS} (set {REDIS_ENV})": await _redis(),
    }
    missing = {what: why for what, why in problems.items() if why is not None}
    if not missing:
        print("services: PostgreSQL and Redis are reachable")
        return 0
    for what, why in missing.items():
        print(f"services: cannot reach {what}: {why}", file=sys.stderr)
    print(
        "The test suite needs both servers (the stores are tested against real ones). Start "
        "them, e.g. 'apt-get install postgresql redis-server' and create the database "
        "('createdb test'), or point the variables above at running servers.",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(_main()))
