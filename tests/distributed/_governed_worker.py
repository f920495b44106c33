"""A worker process of the ``metered`` agent: ``python _governed_worker.py ADDRESS COUNTERS``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.distributed._governed import metered


async def main(address: str, counters: str) -> None:
    client = await Client.connect(address)
    worker = metered(counters).worker(client, max_concurrent_workflow_tasks=50)
    print("WORKER_READY", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
