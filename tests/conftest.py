"""Suite-wide options: the live provider tier is opt-in (``pytest --live``); under
pytest-xdist each worker gets its own PostgreSQL database and Redis database number."""

from __future__ import annotations

import pytest

from tests._services import claim_for_worker, postgres_dsn, release_worker

_ADMIN_DSN = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--live",
        action="store_true",
        default=False,
        help="also run tests marked `live` against real model servers (BASTION_LIVE_* vars)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Deselected, not skipped: a normal run reports nothing about servers it never needed.
    if config.getoption("--live"):
        return
    live = [item for item in items if item.get_closest_marker("live") is not None]
    if live:
        config.hook.pytest_deselected(items=live)
        items[:] = [item for item in items if item.get_closest_marker("live") is None]


def pytest_configure(config: pytest.Config) -> None:
    # Runs in each xdist worker before it collects, so module-level reads see its part.
    workerinput: dict[str, str] | None = getattr(config, "workerinput", None)
    if workerinput is None:
        return
    config.stash[_ADMIN_DSN] = postgres_dsn()
    claim_for_worker(workerinput["workerid"], workerinput["testrunuid"][:8])


def pytest_unconfigure(config: pytest.Config) -> None:
    if _ADMIN_DSN in config.stash:
        release_worker(config.stash[_ADMIN_DSN])
