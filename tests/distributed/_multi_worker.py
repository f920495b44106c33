"""A worker process for the fan-out crash test: ``python _multi_worker.py ADDRESS WORKDIR``.

Serves the ``crash_lead`` fan-out host and its three children until it is killed.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.distributed._multi_agents import crash_fan_out


async def main(address: str, workdir: Path) -> None:
    client = await Client.connect(address)
    worker = crash_fan_out(workdir).worker(
        client, sticky_queue_schedule_to_start_timeout=timedelta(seconds=1)
    )
    print("WORKER_READY", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
