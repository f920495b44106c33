"""A session's worker killed with SIGKILL mid-turn: another worker finishes the turn.

Real worker processes on a real dev server (the ``charger`` agent of ``_agents.py``; its model
calls and ``charge`` runs are counted in files).
"""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from bastion.core import AssistantMessage, ToolMessage, UserMessage

from ._agents import crash_agent
from .test_worker_crash import _count, _kill_at, _worker


async def test_a_session_turn_cut_by_a_killed_worker_ends_on_the_next_without_a_repeated_model_call(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    remote_agent = crash_agent(tmp_path, "read_only")
    async with _worker(address, tmp_path, "read_only") as first:
        session = await remote_agent.session(client, "crash-session")
        await session.send("Charge 5")
        await _kill_at(first, "CHARGE_STARTED")  # worker 1 is inside the turn's tool call
    assert _count(tmp_path / "model_calls") == 1
    async with _worker(address, tmp_path, "read_only"):
        view = await session.settle()
        # the first model call was read back from the history, not sent again
        assert _count(tmp_path / "model_calls") == 2
        assert _count(tmp_path / "charges") == 2  # a read-only call runs again
        await session.send("And now?")  # the session goes on, on the new worker
        after = await session.close()
    assert (view.status, view.turns, view.text) == ("idle", 1, "charge result: charged 5")
    assert [type(m) for m in view.messages] == [
        UserMessage,
        AssistantMessage,
        ToolMessage,
        AssistantMessage,
    ]
    assert after.messages[: len(view.messages)] == view.messages
    assert (after.status, after.turns, after.usage.requests) == ("closed", 2, 3)
    assert _count(tmp_path / "model_calls") == 3
