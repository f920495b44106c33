"""``open_store(url)``: pick a backend from a store URL or ``BASTION_STORE``.

Nothing connects here: the returned :class:`Stores` opens on ``async with`` / ``open()``. A bad
URL raises ``UserError`` at once, before any side effect.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from bastion.core import UserError

from ._memory import MemoryStores
from ._postgres import POOL_SIZE as PG_POOL_SIZE
from ._postgres import PostgresStores
from ._protocols import Stores
from ._redis import POOL_SIZE as REDIS_POOL_SIZE
from ._redis import RedisStores
from ._sqlite import SqliteStores

__all__ = ["DEFAULT_STORE_URL", "STORE_ENV", "open_store"]

STORE_ENV = "BASTION_STORE"
DEFAULT_STORE_URL = "sqlite:///.bastion/bastion.db"
_SCHEMES = "'memory://', 'sqlite:///path', 'postgresql://…' or 'redis://…'"


def open_store(url: str | None = None) -> Stores:
    """Return the (unopened) stores a URL names; open them with ``async with``.

    Args:
        url: ``memory://``; ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``;
            ``postgresql://user@host:5432/db?schema=bastion`` (``postgres://`` too);
            ``redis://host:6379/0?prefix=bastion:`` (``rediss://`` too). ``None`` reads
            ``BASTION_STORE``, and without it uses ``sqlite:///.bastion/bastion.db`` (a file
            under the current directory). PostgreSQL and Redis also take
            ``max_connections=N``: the most connections one opened store holds (default 10
            and 50); callers beyond them wait their turn.

    Raises:
        UserError: The URL has no supported scheme, lacks a path, or has a bad option.
    """
    url = url or os.environ.get(STORE_ENV) or DEFAULT_STORE_URL
    scheme = url.partition("://")[0].lower()
    if scheme == "memory":
        return MemoryStores()
    if scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.lower().startswith("sqlite:///") else ""
        if not path:
            raise UserError(
                f"SQLite store URL {url!r} has no file path; write 'sqlite:///relative.db' or "
                "'sqlite:////absolute/path.db'."
            )
        return SqliteStores(path)
    if scheme in {"postgresql", "postgres"}:
        dsn, options, shown = _take_options(url, "schema", "max_connections")
        return PostgresStores(
            dsn,
            schema=options.get("schema", "bastion"),
            display_url=shown,
            max_size=_pool_size(options, shown, PG_POOL_SIZE),
        )
    if scheme in {"redis", "rediss"}:
        client_url, options, shown = _take_options(url, "prefix", "max_connections")
        return RedisStores(
            client_url,
            prefix=options.get("prefix", "bastion:"),
            display_url=shown,
            max_connections=_pool_size(options, shown, REDIS_POOL_SIZE),
        )
    raise UserError(f"Unsupported store URL {url!r}; use {_SCHEMES}.")


def _pool_size(options: dict[str, str], shown: str, default: int) -> int:
    value = options.get("max_connections")
    if value is None:
        return default
    if not value.isdigit() or int(value) < 1:
        raise UserError(
            f"max_connections in store URL {shown!r} must be a whole number of at least 1, "
            f"got {value!r}."
        )
    return int(value)


def _take_options(url: str, *names: str) -> tuple[str, dict[str, str], str]:
    """Split our own query options off ``url``; also return the URL without its password."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in names}
    rest = urlencode([(k, v) for k, v in query if k not in names])
    driver_url = urlunsplit(parts._replace(query=rest))
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    shown = urlunsplit(parts._replace(netloc=netloc))
    return driver_url, ours, shown
