"""Worker processes of the crash tests: run one to its end, or SIGKILL it at a line it prints.

A worker is a script run with this interpreter and this ``sys.path``; ``crash`` sets
``BASTION_CRASH`` (the kill point the worker's own code acts on), which is never inherited.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

__all__ = ["kill_at", "run_json", "run_worker"]

CRASH_ENV = "BASTION_CRASH"


def _env(crash: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop(CRASH_ENV, None)
    if crash is not None:
        env[CRASH_ENV] = crash
    return env


async def _start(
    script: Path, args: tuple[str, ...], crash: str | None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        *args,
        env=_env(crash),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def run_worker(script: Path, *args: str, crash: str | None = None) -> tuple[int, str, str]:
    """Run the worker to its end (or its own crash); its exit code, stdout and stderr."""
    process = await _start(script, args, crash)
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def run_json(script: Path, *args: str) -> Any:
    """Run the worker, which must exit 0; the JSON of the last line it printed."""
    code, out, err = await run_worker(script, *args)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


async def kill_at(script: Path, *args: str, line: str, wait: float = 30) -> None:
    """Start the worker and SIGKILL it once it prints ``line`` (its first line, within
    ``wait`` seconds)."""
    process = await _start(script, args, None)
    assert process.stdout is not None
    try:
        printed = await asyncio.wait_for(process.stdout.readline(), timeout=wait)
        assert printed.decode().strip() == line
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        _, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, err.decode()
