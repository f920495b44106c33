"""Every ```python block of the audited docs pages runs as written, in a fresh interpreter.

A block directly preceded by ``<!-- fragment: <reason> -->`` is not run (the reason must be
given). A block followed by "It prints:" and a fenced block must end its stdout with it; a
block that logs a traceback (a background task that failed) fails even when it exits 0.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"

PAGES: tuple[str, ...] = (
    "graph.md",
    "multi-agent.md",
    "context.md",
    "mcp.md",
    "agent-loop.md",
    "tools.md",
    "sessions.md",
    "governance.md",
    "security.md",
    "providers.md",
    "stores.md",
    "console.md",
    "custom-models.md",
    "durability.md",
    "testing.md",
    "tracing.md",
    "server.md",
    "cli.md",
    "architecture.md",
    "development.md",
)

# Pages whose blocks this test does not run, and why.
LEFT_OUT: dict[str, str] = {
    "scale-out.md": "every block starts a Temporal server: the slow suite runs them "
    "(tests/distributed/test_docs.py, test_session_docs.py, test_multi_agent_crash.py)",
}

_FENCE = re.compile(r"^\s*`{3,}[^`]*$")
_FRAGMENT = re.compile(r"^<!--\s*fragment:(?P<reason>.*?)-->\s*$")


@dataclass(frozen=True, slots=True)
class Block:
    """One ```python block of a page."""

    page: str
    index: int
    line: int
    code: str
    fragment: str | None
    prints: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.index}"


def _fence_end(lines: list[str], start: int) -> int:
    """The index of the fence closing the block opened at ``start``."""
    opening = lines[start].lstrip()
    fence = opening[: len(opening) - len(opening.lstrip("`"))]
    for i in range(start + 1, len(lines)):
        if lines[i].strip() == fence:
            return i
    raise AssertionError(f"unclosed fence at line {start + 1}")


def _prints_after(lines: list[str], end: int) -> str | None:
    """The output shown right after the block ending at ``end`` ("It prints:" + a block)."""
    i = end + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].strip().endswith("It prints:"):
        return None
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not _FENCE.match(lines[i]):
        return None
    close = _fence_end(lines, i)
    return textwrap.dedent("\n".join(lines[i + 1 : close]))


def blocks(page: str) -> list[Block]:
    """The ```python blocks of ``page``, numbered from 1."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        if not _FENCE.match(lines[i]):
            i += 1
            continue
        end = _fence_end(lines, i)
        if lines[i].strip().strip("`").split()[:1] == ["python"]:
            mark = _FRAGMENT.match(lines[i - 1].strip()) if i > 0 else None
            found.append(
                Block(
                    page=page,
                    index=len(found) + 1,
                    line=i + 1,
                    code=textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n",
                    fragment=None if mark is None else mark["reason"].strip(),
                    prints=_prints_after(lines, end),
                )
            )
        i = end + 1
    return found


# The blocks start the venv's console scripts (mcp-server-time, ...) by name.
_ENV = {
    **os.environ,
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
}

ALL = [block for page in PAGES for block in blocks(page)]


@pytest.mark.parametrize("block", ALL, ids=[block.id for block in ALL])
def test_block_runs(block: Block, tmp_path: Path) -> None:
    if block.fragment is not None:
        assert block.fragment, f"{block.id} (line {block.line}) is a fragment without a reason"
        return
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=_ENV,
    )
    assert done.returncode == 0, f"{block.id} (line {block.line}) failed:\n{done.stderr}"
    assert "Traceback" not in done.stderr, f"{block.id} logged an error:\n{done.stderr}"
    if block.prints is not None:
        want = block.prints.strip().splitlines()
        got = done.stdout.strip().splitlines()
        assert got[-len(want) :] == want, f"{block.id} printed:\n{done.stdout}"


def test_every_page_is_audited_or_left_out_with_a_reason() -> None:
    pages = {path.name for path in DOCS.glob("*.md")}
    assert set(PAGES) | set(LEFT_OUT) == pages
    assert not set(PAGES) & set(LEFT_OUT)
    assert all(LEFT_OUT.values())
