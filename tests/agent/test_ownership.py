"""A run's lease: renewed while the run works, released at its end, lost to a takeover.

Lease times are the agent's virtual clock; the heartbeat's period is event-loop time, so the
store's ``lease_ttl`` is small here and the tests wait for the heartbeat's store calls
(events), never for time to pass.
"""

from __future__ import annotations

import asyncio

import pytest

from bastion import Agent, tool
from bastion.stores import (
    Lease,
    LeaseKeeper,
    LeaseLost,
    LeaseStore,
    RunBusy,
    Stores,
    open_store,
    run_lease_key,
)
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import Tool


class _Watched:
    """A lease store that signals each heartbeat's outcome."""

    def __init__(self, inner: LeaseStore) -> None:
        self.inner = inner
        self.renewed = asyncio.Event()
        self.lost = asyncio.Event()

    async def acquire(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        return await self.inner.acquire(key, owner, ttl=ttl, now=now)

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        try:
            lease = await self.inner.renew(key, owner, ttl=ttl, now=now)
        except LeaseLost:
            self.lost.set()
            raise
        self.renewed.set()
        return lease

    async def release(self, key: str, owner: str) -> bool:
        return await self.inner.release(key, owner)

    async def get(self, key: str) -> Lease | None:
        return await self.inner.get(key)


class _Blocking:
    """A side-effecting tool that waits for the test."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.go = asyncio.Event()
        self.ran = 0

    def tools(self) -> list[Tool]:
        @tool(side_effect_class="external_stateful")
        async def pay(to: str) -> str:
            """Pay someone."""
            self.entered.set()
            await self.go.wait()
            self.ran += 1
            return f"paid {to}"

        return [pay]


async def _setup() -> tuple[Stores, _Watched, VirtualClock, _Blocking, Agent[None, str]]:
    stores = open_store("memory://")
    stores.lease_ttl = 0.06  # heartbeat every 20 ms of event-loop time
    watched = _Watched(stores.leases)
    stores.leases = watched
    clock = VirtualClock()
    blocking = _Blocking()
    model = ScriptedModel([Turn(tool_calls=[Call("pay", {"to": "bob"}, id="c1")]), "Paid."])
    agent = Agent("payer", model=model, tools=blocking.tools(), store=stores, clock=clock)
    return stores, watched, clock, blocking, agent


async def test_a_running_run_renews_its_lease_refuses_a_resume_and_releases_at_the_end() -> None:
    stores, watched, clock, blocking, agent = await _setup()
    stream = agent.stream("pay bob")
    running = asyncio.create_task(stream.drain())
    await blocking.entered.wait()
    key = run_lease_key(stream.run_id)
    clock.advance(5.0)  # virtual time passes; the heartbeat stamps it
    watched.renewed.clear()
    await asyncio.wait_for(watched.renewed.wait(), 10)
    lease = await stores.leases.get(key)
    assert lease is not None
    assert lease.renewed_at >= lease.acquired_at + 5.0
    assert lease.live(clock.now())
    other = Agent("payer", model=ScriptedModel([]), store=stores, clock=clock)
    with pytest.raises(RunBusy) as busy:
        await other.resume(stream.run_id)
    assert busy.value.lease.owner == lease.owner
    assert "held for 5.0 s" in str(busy.value)
    blocking.go.set()
    result = await running
    assert (result.status, result.output, blocking.ran) == ("completed", "Paid.", 1)
    assert await stores.leases.get(key) is None  # released when the run ended


async def test_a_run_whose_task_is_cancelled_drops_its_lease_and_is_resumed_at_once() -> None:
    stores, _, clock, blocking, agent = await _setup()
    stream = agent.stream("pay bob")
    running = asyncio.create_task(stream.drain())  # as under a timeout or a closing app
    await blocking.entered.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    record = await stores.journal.get_run(stream.run_id)
    assert record is not None
    assert record.status == "running"  # as after a crash: its journal says what started
    assert await stores.leases.get(run_lease_key(stream.run_id)) is None  # no 60 ms wait
    other = Agent("payer", model=ScriptedModel(["Paid."]), store=stores, clock=clock)
    result = await other.resume(stream.run_id)
    # the payment may have been made: the ledger holds it for a person, as after a crash
    assert result.status == "awaiting_approval"
    [pending] = result.pending_approvals
    assert pending.tool_call_id == "c1"
    assert blocking.ran == 0


async def test_an_owner_whose_lease_was_taken_over_stops_writing_and_fails_as_conflict() -> None:
    stores, watched, clock, blocking, agent = await _setup()
    stream = agent.stream("pay bob")
    running = asyncio.create_task(stream.drain())
    await blocking.entered.wait()
    key = run_lease_key(stream.run_id)
    clock.advance(60.0)  # the owner looks dead: its lease expired (a frozen process)
    taken = await stores.leases.acquire(key, "rescuer", ttl=600, now=clock.now())
    assert taken.owner == "rescuer"
    await asyncio.wait_for(watched.lost.wait(), 10)  # the owner's next heartbeat learns it
    blocking.go.set()
    result = await running
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "conflict"
    assert "expired and is now owned by 'rescuer'" in result.error.message
    kinds = [e.kind for e in await stores.journal.read(stream.run_id)]
    assert kinds[-1] == "tool_call_started"  # nothing written after the takeover
    lease = await stores.leases.get(key)
    assert lease is not None
    assert lease.owner == "rescuer"  # the loser did not release the taker's lease


class _Unreachable(_Watched):
    """A lease store whose heartbeats fail as a dropped connection would."""

    def __init__(self, inner: LeaseStore) -> None:
        super().__init__(inner)
        self.failed = asyncio.Event()

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        self.failed.set()
        raise ConnectionError("connection refused")


async def test_a_refused_heartbeat_is_kept_and_past_the_lease_time_the_lease_is_lost() -> None:
    stores = open_store("memory://")
    unreachable = _Unreachable(stores.leases)
    clock = VirtualClock(auto_advance=False)
    keeper = LeaseKeeper(unreachable, "run:r1", clock, ttl=0.06, owner="me")
    await keeper.acquire()
    await unreachable.failed.wait()  # handled in the same loop step as the failed call
    # Still in time: the failure is kept, the next heartbeat tries again.
    assert isinstance(keeper.renew_error, ConnectionError)
    assert (keeper.lost, keeper.held) == (None, True)
    clock.advance(0.07)  # the lease's time is up while the store stays unreachable
    unreachable.failed.clear()
    await unreachable.failed.wait()  # the keeper handles the failure in the same loop step
    assert isinstance(keeper.lost, LeaseLost)
    assert keeper.held is False
    await keeper.release()
