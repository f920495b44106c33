"""Run takeover: a server process goes on with the runs a dead one left ``running``.

Every process serving on one store scans it every ``interval`` seconds for runs of the agents
it serves that are ``running`` while their run lease (``run:<id>``, renewed by its owner's
heartbeat) has expired: their process died. It resumes each from its journal, as
``bastion runs resume`` would: recorded model answers and tool results are replayed, never
repeated. Two survivors racing for one run are settled by the store's atomic lease acquire:
the loser gets ``RunBusy`` and leaves the run alone. A run with no run lease (a session's
turn, owned through its session) is never taken over here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from bastion.stores import LeaseStore, RunBusy, run_lease_key

from ._records import load_run

if TYPE_CHECKING:
    from ._manager import RunManager

__all__ = ["orphans", "take_over", "watch"]

_PAGE = 100
_log = logging.getLogger("bastion.server")


async def orphans(manager: RunManager) -> list[str]:
    """The ids of served runs left ``running`` by a process whose lease has expired."""
    journal, leases = manager.stores.journal, manager.stores.leases
    found: list[str] = []
    for name, agent in manager.agents.items():
        now = agent.config.clock.now()
        offset = 0
        while True:
            page = await journal.list_runs(status="running", agent=name, limit=_PAGE, offset=offset)
            found.extend(
                [
                    record.run_id
                    for record in page.runs
                    if record.run_id not in manager.live
                    and await _lapsed(leases, record.run_id, now)
                ]
            )
            if len(page.runs) < _PAGE:
                break
            offset += _PAGE
    return found


async def _lapsed(leases: LeaseStore, run_id: str, now: float) -> bool:
    lease = await leases.get(run_lease_key(run_id))
    return lease is not None and not lease.live(now)


async def take_over(manager: RunManager, run_id: str) -> bool:
    """Resume one orphaned run here; False when another process took it first."""
    facts = await load_run(manager.stores.journal, run_id)
    if facts is None or run_id in manager.live or manager.draining:
        return False
    agent = manager.agent(facts.record.agent)
    try:
        await manager.launch(agent.resume_stream(run_id), agent.name, facts.state.tenant_id)
    except RunBusy:
        return False
    _log.info("run %s: taken over from a process that stopped renewing its lease", run_id)
    return True


async def watch(manager: RunManager, interval: float, stopping: asyncio.Event) -> None:
    """Take orphaned runs over every ``interval`` seconds until ``stopping`` is set.

    A store that fails a scan is logged and tried again at the next one.
    """
    while not stopping.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), timeout=interval)
        if stopping.is_set() or manager.draining:
            return
        try:
            for run_id in await orphans(manager):
                await take_over(manager, run_id)
        except Exception as exc:  # the next scan tries again; the runs stay in the store
            _log.warning("scanning for runs to take over failed: %r", exc)
