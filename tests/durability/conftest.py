"""The ``store_url`` fixture of the ownership tests: an isolated store of each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.testing import isolated_store


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An isolated store of each backend shared by the test and its workers."""
    async with isolated_store(request.param, tmp_path) as url:
        yield url
