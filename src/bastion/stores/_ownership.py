"""Ownership in a store shared by live processes: leases, and the errors of losing a race.

A *lease* names the one owner of a run or of a session's turn; the owner renews it (a
heartbeat) while it works and releases it when it stops. A lease not renewed in time has
expired: its owner is taken to be dead and anyone may take it over. Times are the callers'
clocks (``Clock.now()``), so tests drive expiry with a virtual clock.

Session appends are compare-and-set on the session's head (:class:`SessionConflict` for the
loser). Imported by every backend (``_leases.py`` holds their lease stores), by the agent
and by sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from bastion.core import UserError

from ._types import StoreError

__all__ = [
    "Lease",
    "LeaseHeld",
    "LeaseLost",
    "LeaseStore",
    "RunBusy",
    "SessionConflict",
    "check_lease",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Lease:
    """Who owns ``key`` until when.

    Attributes:
        key: What is owned (``run:<id>``, ``session:<id>``).
        owner: The holder's id (host, process id and a random part).
        acquired_at: When the holder took it (the holder's clock, epoch seconds).
        renewed_at: Its last heartbeat.
        expires_at: When it lapses unless renewed.
    """

    key: str
    owner: str
    acquired_at: float
    renewed_at: float
    expires_at: float

    def live(self, now: float) -> bool:
        """Whether the lease still holds at ``now``."""
        return now < self.expires_at

    def describe(self, now: float) -> str:
        """The holder and the lease's age, for error messages."""
        return (
            f"owner {self.owner!r} (held for {max(0.0, now - self.acquired_at):.1f} s, last "
            f"heartbeat {max(0.0, now - self.renewed_at):.1f} s ago, expires in "
            f"{max(0.0, self.expires_at - now):.1f} s)"
        )


class LeaseHeld(StoreError):
    """Another owner holds a live lease on the key.

    Attributes:
        lease: The live lease, as the store held it.
        now: The time it was refused at (the caller's clock).
    """

    def __init__(self, lease: Lease, now: float, message: str | None = None) -> None:
        self.lease = lease
        self.now = now
        super().__init__(
            message
            or f"{lease.key!r} is owned by {lease.describe(now)}; wait for it to end or for "
            "its lease to expire."
        )


class RunBusy(LeaseHeld):
    """A run cannot be resumed: a live process owns it (its lease is renewed)."""

    def __init__(self, run_id: str, lease: Lease, now: float) -> None:
        self.run_id = run_id
        super().__init__(
            lease,
            now,
            f"Run {run_id!r} is running elsewhere: {lease.key!r} is owned by "
            f"{lease.describe(now)}. Nothing was changed. Wait for that process to finish or "
            "suspend the run, or resume it once the lease has expired (its owner stopped "
            "renewing it, for example after a crash).",
        )


class LeaseLost(StoreError):
    """A heartbeat found the lease gone: it expired and another owner took it over."""

    def __init__(self, key: str, owner: str, holder: Lease | None) -> None:
        self.key = key
        self.owner = owner
        self.holder = holder
        taken = f"is now owned by {holder.owner!r}" if holder is not None else "was released"
        super().__init__(
            f"Lease on {key!r} of owner {owner!r} expired and {taken}; this process stops "
            "writing to it."
        )


class SessionConflict(StoreError):
    """A conditional session append lost: the session's head moved since the writer read it.

    Attributes:
        session_id: The session.
        expected_head: The head the writer appended after (``None``: an empty session).
        actual_head: The session's head when the append was refused.
    """

    def __init__(self, session_id: str, *, expected_head: str | None, actual_head: str | None):
        self.session_id = session_id
        self.expected_head = expected_head
        self.actual_head = actual_head
        super().__init__(
            f"Session {session_id!r} ends at entry {actual_head!r}, but this writer appended "
            f"after {expected_head!r}: another writer appended first and nothing was written. "
            "Read the entries after your head and append after the new one."
        )


@runtime_checkable
class LeaseStore(Protocol):
    """Leases with heartbeats: one live owner per key across every process of the store."""

    async def acquire(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Take ``key`` for ``ttl`` seconds: free, expired, or already ``owner``'s (renewed).

        Raises:
            LeaseHeld: Another owner's lease is live at ``now``; nothing was changed.
            UserError: An empty key or owner, or a ``ttl`` that is not positive.
        """
        ...

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Extend ``owner``'s lease to ``now + ttl`` (a heartbeat).

        Raises:
            LeaseLost: ``owner`` no longer holds the key (taken over after it expired).
        """
        ...

    async def release(self, key: str, owner: str) -> bool:
        """Drop ``owner``'s lease; False when it held none (nothing is changed then)."""
        ...

    async def get(self, key: str) -> Lease | None:
        """Return the lease on ``key`` (live or expired), or ``None``."""
        ...


def check_lease(key: str, owner: str, ttl: float) -> None:
    """Validate a lease request before any side effect."""
    for value, what in ((key, "lease key"), (owner, "lease owner")):
        if not isinstance(value, str) or not value:
            raise UserError(f"The {what} must be a non-empty string, got {value!r}.")
    if not ttl > 0:
        raise UserError(f"A lease's ttl must be a positive number of seconds, got {ttl!r}.")
