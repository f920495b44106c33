"""Who owns a run: the lease a run holds in its store while a process works on it.

``Agent._journal`` gives a run outside sessions a :class:`~bastion.stores.LeaseKeeper` on
``run:<run_id>``; the journal takes it before its first write and releases it when the run
ends or suspends (``_journal.py``). A session's run is owned through its session's turn
lease (``session:<id>``, taken by ``bastion.sessions``), which a resume by run id checks
too (:func:`check_session_owner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion import stores as store_package

if TYPE_CHECKING:  # the lease machinery loads with the first run that has a store
    from bastion.core import Clock
    from bastion.stores import LeaseKeeper, Stores

    from ._state import RunState

__all__ = ["check_session_owner", "run_keeper"]


def run_keeper(stores: Stores, run_id: str, clock: Clock) -> LeaseKeeper:
    """A keeper of the run's own lease, with a fresh owner id."""
    return store_package.LeaseKeeper(
        stores.leases,
        store_package.run_lease_key(run_id),
        clock,
        ttl=stores.lease_ttl,
        owner=store_package.new_owner(),
    )


async def check_session_owner(stores: Stores, state: RunState, clock: Clock) -> None:
    """Refuse to resume a session's run while a live process runs that session's turn.

    Raises:
        RunBusy: The session's turn lease is live.
    """
    if state.status not in ("running", "awaiting_approval") or state.session_id is None:
        return
    lease = await stores.leases.get(store_package.session_lease_key(state.session_id))
    now = clock.now()
    if lease is not None and lease.live(now):
        raise store_package.RunBusy(state.run_id, lease, now)
