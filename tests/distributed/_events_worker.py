"""A worker that publishes events: ``python _events_worker.py ADDRESS WORKDIR STORE_URL``.

Runs the ``charger`` agent of ``_agents.py`` (its first model call never returns) with its
events published to STORE_URL, until it is killed.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bastion.distributed import TemporalAgent
from tests.distributed._agents import CRASH_QUEUE, crash_agent


def publishing_agent(workdir: Path, store: str) -> TemporalAgent[str]:
    """The crash agent, blocked in its first model call, publishing its events to ``store``."""
    agent = crash_agent(workdir, block="model").agent
    return TemporalAgent(agent, task_queue=CRASH_QUEUE, heartbeat_timeout=1.0, events=store)


async def main(address: str, workdir: Path, store: str) -> None:
    client = await Client.connect(address)
    worker = publishing_agent(workdir, store).worker(
        client, sticky_queue_schedule_to_start_timeout=timedelta(seconds=1)
    )
    print("WORKER_READY", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
