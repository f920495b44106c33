"""Runtime test fixtures: a work dir, and a host directory beside it that must stay untouched."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "hello.txt").write_text("hello\n")
    return path


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    """A host directory outside the work dir holding a secret; asserted unchanged after."""
    path = tmp_path / "host"
    path.mkdir()
    (path / "secret.txt").write_text("TOP-SECRET\n")
    before = _snapshot(path)
    yield path
    assert _snapshot(path) == before, "the host directory outside the work dir changed"


def _snapshot(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(folder, name)
            digest = "dir" if full.is_dir() else hashlib.sha256(full.read_bytes()).hexdigest()
            found[str(full.relative_to(root))] = digest
    return found
