"""Crash in an evaluator-optimizer loop: SIGKILL while iteration 2 is being generated.

Iteration 1 is journaled; the loop run again in a new process (same ``run_id``, SQLite)
takes it from the journal, generates iterations 2 and 3 only, and selects as an
uninterrupted loop would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from bastion.stores import open_store

WORKER = Path(__file__).with_name("_evaluator_worker.py")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def _spawn(store: str, workdir: Path, mode: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        store,
        str(workdir),
        mode,
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_sqlite(tmp_path: Path) -> None:
    # covers G-81 (every iteration journaled; a crash mid-loop resumes without redoing)
    store = f"sqlite:///{tmp_path}/bastion.db"
    process = await _spawn(store, tmp_path, "start")
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert line.decode().strip() == "generating 2"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        _, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, err.decode()
    async with open_store(store) as stores:
        kinds = [e.kind for e in await stores.journal.read("loop-crash")]
    assert kinds == ["run_started", "tool_result"]

    process = await _spawn(store, tmp_path, "resume")
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert result == {
        "output": "draft 4 after feedback 2",
        "iterations": [
            [1, "draft 1 after None", True],
            [2, "draft 3 after feedback 1", False],
            [3, "draft 4 after feedback 2", False],
        ],
    }
    # Generated: 1 and the killed 2 in the first process; 2 and 3 again in the second.
    assert (tmp_path / "generated").read_text().split() == ["1", "2", "3", "4"]
