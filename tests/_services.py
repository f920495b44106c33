"""The PostgreSQL and Redis servers of the suite, and each pytest-xdist worker's own part.

The servers are named by ``BASTION_TEST_POSTGRES_DSN`` and ``BASTION_TEST_REDIS_URL``
(defaults: the local ones). Under ``pytest -n N`` every worker gets its own database
(``<db>_<worker>_<run>``, created when the worker starts and dropped when it ends) and its
own Redis database number; :func:`claim_for_worker` points the two variables at them in the
worker's environment, so every reader (these functions, ``bastion.testing.isolated_store``,
the worker and CLI processes the tests start) sees the worker's part. Within a worker each
test still gets its own schema or key prefix.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "POSTGRES_ENV",
    "REDIS_ENV",
    "claim_for_worker",
    "postgres_dsn",
    "redis_url",
    "release_worker",
    "worker_database",
]

POSTGRES_ENV = "BASTION_TEST_POSTGRES_DSN"
REDIS_ENV = "BASTION_TEST_REDIS_URL"
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_DEFAULT = "redis://127.0.0.1:6379/0"
REDIS_DATABASES = 16  # Redis's default `databases`

_WORKER = re.compile(r"gw(\d+)")


def postgres_dsn() -> str:
    """The PostgreSQL DSN of the tests (this worker's database under xdist)."""
    return os.environ.get(POSTGRES_ENV, POSTGRES_DEFAULT)


def redis_url() -> str:
    """The Redis URL of the tests (this worker's database number under xdist)."""
    return os.environ.get(REDIS_ENV, REDIS_DEFAULT)


def worker_database(dsn: str, worker: str, run: str) -> str:
    """``dsn`` with its database renamed for one worker of one run."""
    parts = urlsplit(dsn)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"{POSTGRES_ENV} must be a postgresql:// URL, not {dsn!r}")
    database = parts.path.lstrip("/") or "postgres"
    return urlunsplit(parts._replace(path=f"/{database}_{worker}_{run}"))


def _redis_for(url: str, index: int) -> str:
    parts = urlsplit(url)
    base = int(parts.path.lstrip("/") or 0)
    number = (base + 1 + index) % REDIS_DATABASES
    return urlunsplit(parts._replace(path=f"/{number}"))


def claim_for_worker(worker: str, run: str) -> None:
    """Create the worker's PostgreSQL database and point both variables at its part.

    A server that cannot be reached is not an error here: the variables still move, and the
    tests that need the server fail on it, as they do without xdist.
    """
    match = _WORKER.fullmatch(worker)
    if match is None:
        raise ValueError(f"not an xdist worker id: {worker!r}")
    base = postgres_dsn()
    mine = worker_database(base, worker, run)
    os.environ[POSTGRES_ENV] = mine
    os.environ[REDIS_ENV] = _redis_for(redis_url(), int(match.group(1)))
    _postgres_admin(base, f'CREATE DATABASE "{_name(mine)}"')


def release_worker(admin_dsn: str) -> None:
    """Drop the worker's database (its connections too), if it was made."""
    _postgres_admin(admin_dsn, f'DROP DATABASE IF EXISTS "{_name(postgres_dsn())}" WITH (FORCE)')


def _name(dsn: str) -> str:
    return urlsplit(dsn).path.lstrip("/")


def _postgres_admin(dsn: str, statement: str) -> None:
    import psycopg

    try:
        conn = psycopg.connect(dsn.partition("?")[0], autocommit=True, connect_timeout=5)
    except psycopg.OperationalError:
        return  # unreachable: the tests that need it fail on it
    with conn:
        conn.execute(statement.encode())
