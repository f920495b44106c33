"""``LeaseKeeper``: holds one lease for a run or a session's turn, with a heartbeat.

Used by the agent (a run's lease) and by sessions (a turn's lease). The heartbeat renews the
lease every third of its time to live. The lease's times come from the caller's
:class:`~bastion.core.Clock` (a test expires a lease by moving a virtual clock), while the
heartbeat's period is event-loop time, as the journal's commit timer is: a heartbeat must
not move a virtual clock that auto-advances on every sleep.
"""

from __future__ import annotations

import asyncio
import os
import socket

from bastion.core import Clock, new_id

from ._ownership import Lease, LeaseHeld, LeaseLost, LeaseStore

__all__ = ["DEFAULT_LEASE_TTL", "LeaseKeeper", "new_owner", "run_lease_key", "session_lease_key"]

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lives without a heartbeat: how long a crashed owner blocks a takeover."""


def run_lease_key(run_id: str) -> str:
    """The lease a run outside sessions holds while a process works on it."""
    return f"run:{run_id}"


def session_lease_key(session_id: str) -> str:
    """The lease a session's turn holds (its run included) while a process runs it."""
    return f"session:{session_id}"


def new_owner() -> str:
    """A fresh owner id: host, process id and a random part (one per run or session)."""
    return f"{socket.gethostname()}:pid{os.getpid()}:{new_id('owner')}"


class LeaseKeeper:
    """Acquires one lease, renews it in the background, releases it.

    The heartbeat is a timer, not a task: a holder done within a third of the time to live
    (most turns and runs) never makes a store call for it. A renew in flight is let finish
    when the keeper stops, so no store call (a pooled connection mid-query) is cut in half.

    Attributes:
        key: What is owned.
        owner: This holder's id.
        held: Whether this keeper holds the lease (as far as it knows).
        lost: Set when a heartbeat found the lease taken over, or when the store failed
            every heartbeat until the lease's time ran out (it stops then: another process
            may take the run over).
        renew_error: The last heartbeat's store failure, while the lease is still in time
            (the next heartbeat tries again).
    """

    __slots__ = (
        "_beat",
        "_clock",
        "_expires",
        "_leases",
        "_stopped",
        "_timer",
        "_ttl",
        "held",
        "key",
        "lost",
        "owner",
        "renew_error",
    )

    def __init__(
        self, leases: LeaseStore, key: str, clock: Clock, *, ttl: float, owner: str
    ) -> None:
        self._leases = leases
        self._clock = clock
        self._ttl = ttl
        self.key = key
        self.owner = owner
        self.held = False
        self.lost: LeaseLost | None = None
        self.renew_error: Exception | None = None
        self._expires = 0.0  # when the lease runs out unless renewed (the clock's time)
        self._beat: asyncio.Task[None] | None = None  # a renew in flight
        self._timer: asyncio.TimerHandle | None = None  # the next renew
        self._stopped = True

    async def acquire(self) -> Lease:
        """Take the lease and start the heartbeat.

        Raises:
            LeaseHeld: Another owner's lease is live.
        """
        lease = await self._leases.acquire(
            self.key, self.owner, ttl=self._ttl, now=self._clock.now()
        )
        self.held = True
        self.lost = None
        self.renew_error = None
        self._expires = self._clock.now() + self._ttl
        self._stopped = False
        if self._timer is None and self._beat is None:
            self._schedule()
        return lease

    async def wait(self, poll: float | None = None) -> Lease:
        """Take the lease, waiting while another owner holds it (until it ends or expires)."""
        period = poll if poll is not None else min(0.25, self._ttl / 4)
        while True:
            try:
                return await self.acquire()
            except LeaseHeld:
                await asyncio.sleep(period)

    def _schedule(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._ttl / 3, self._due)

    def _due(self) -> None:
        self._timer = None
        if not self._stopped:
            self._beat = asyncio.get_running_loop().create_task(
                self._renew(), name=f"bastion-lease-{self.key}"
            )

    async def _renew(self) -> None:
        now = self._clock.now()
        try:
            await self._leases.renew(self.key, self.owner, ttl=self._ttl, now=now)
        except LeaseLost as exc:
            self._lose(exc)
        except Exception as exc:  # any driver's failure: kept, and the next heartbeat retries
            self.renew_error = exc
            if self._clock.now() >= self._expires:  # out of time: another may own it now
                self._lose(LeaseLost(self.key, self.owner, None))
        else:
            self.renew_error = None
            self._expires = now + self._ttl
        finally:
            self._beat = None
        if not self._stopped:
            self._schedule()

    def _lose(self, exc: LeaseLost) -> None:
        self.lost = exc
        self.held = False
        self._stopped = True

    def stop(self) -> None:
        """Stop the heartbeat (the lease then expires unless released)."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def release(self) -> None:
        """Stop the heartbeat and drop the lease (a no-op when not held)."""
        self.stop()
        beat = self._beat
        if beat is not None:
            await asyncio.shield(beat)  # a renew in flight finishes before the release
        if self.held:
            self.held = False
            await self._leases.release(self.key, self.owner)
