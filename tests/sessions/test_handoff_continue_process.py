"""Across processes: a session whose turn handed off continues with the target.

Process 1 runs turn 1 of a session on a SQLite file (triage hands off to billing) and
exits. Process 2 (new agents) reopens the session with ``resume_session`` and sends the
next message: its only model request goes to billing's model, with billing's instructions
and tools; triage's model is not called.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("_handoff_worker.py")


async def _run(store: str, session_id: str, mode: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        store,
        session_id,
        mode,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


async def test_next_process_continues_with_the_handoff_target(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    first = await _run(store, "session-handoff", "first")
    assert first["active_agent"] == "billing"
    assert [r["system"] for r in first["triage"]] == ["You route."]
    assert [r["system"] for r in first["billing"]] == ["You are billing."]

    second = await _run(store, "session-handoff", "next")
    assert second["triage"] == []  # the new process never asked the first agent
    assert second["billing"] == [
        {
            "system": "You are billing.",
            "tools": ["refund", "transfer_to_triage"],
            "last": "Refund A1.",
        }
    ]
    assert second["active_agent"] == "billing"
