"""A worker process for the crash tests: ``python _worker.py ADDRESS WORKDIR KIND BLOCK``.

Runs the ``charger`` agent (its tool of side-effect class KIND; its first tool call or model
call never returns, as BLOCK says) until it is killed.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast

from temporalio.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.distributed._agents import crash_agent

if TYPE_CHECKING:
    from bastion.tools import SideEffectClass


async def main(address: str, workdir: Path, kind: SideEffectClass, block: str) -> None:
    client = await Client.connect(address)
    worker = crash_agent(workdir, kind, block=block).worker(
        client, sticky_queue_schedule_to_start_timeout=timedelta(seconds=1)
    )
    print("WORKER_READY", flush=True)
    await worker.run()


if __name__ == "__main__":
    kind = cast("SideEffectClass", sys.argv[3])
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), kind, sys.argv[4]))
