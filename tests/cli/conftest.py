import sys

import pytest


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader puts directories on ``sys.path`` as the CLI should; undo that per test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
