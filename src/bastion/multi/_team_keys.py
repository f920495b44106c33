"""A team run's journal: its member calls' keys and durable child runs (``Team`` uses it).

A team run with a store is a composite run (``_composite``, kind ``team``) under the team's
run id. Each member call has a key: ``route`` (the router's choice), ``round<N>:<member>``
(a member's answer in round ``N``; a routed member's answer is round 0, a broadcast is
round 1) and ``synthesis``. :func:`run_member` takes a call's outcome from the journal when
an earlier attempt finished it; otherwise it runs the call as a durable child run (its id
derived from the team's run id, the member's position and the key, through
:func:`~bastion.multi._child.child_run_id`), so a call that was in flight continues from
its own journal, and journals the outcome when it ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ._child import child_run_id
from ._composite import CompositeLog
from ._fanout_records import from_record, to_part
from ._multi_child import ChildHandle, run_child

if TYPE_CHECKING:
    from bastion.agent._config import RunConfig
    from bastion.stores import Stores

    from ._fanout_types import ChildResult, FanOutChild
    from ._team import Team

__all__ = ["ROUTER", "SYNTHESIS", "member_key", "open_team_log", "run_member", "team_call_run_id"]

ROUTER = "route"
SYNTHESIS = "synthesis"


def member_key(round_number: int, member: str) -> str:
    """The key of ``member``'s answer in round ``round_number`` (0: the routed member)."""
    return f"round{round_number}:{member}"


def team_call_run_id(team_run_id: str, index: int, key: str) -> str:
    """The run id of the member call ``key`` (the member at ``index``) of a team run."""
    return child_run_id(team_run_id, index, key)


async def open_team_log(team: Team, stores: Stores, run_id: str) -> CompositeLog:
    """Open (or read back) the journal of the team's run ``run_id`` in ``stores``."""
    return await CompositeLog.open(
        stores,
        run_id,
        name=team.name,
        kind="team",
        metadata={"mode": team.mode, "members": [m.name for m in team.members]},
    )


async def run_member(  # noqa: PLR0917 - one member call's parts
    child: FanOutChild,
    index: int,
    key: str,
    log: CompositeLog | None,
    handles: list[ChildHandle],
    host: RunConfig,
    metadata: Mapping[str, object],
) -> ChildResult:
    """The outcome of member call ``key``: journaled earlier, or run (and journaled) now."""
    part = log.done.get(key) if log is not None else None
    if part is not None:
        return from_record(child, index, part)
    handle = ChildHandle()
    handles.append(handle)
    run_id = None if log is None else team_call_run_id(str(log.run_id), index, key)
    try:
        outcome = await run_child(
            child, index, handle, None, host, host.clock, metadata, run_id=run_id
        )
    finally:
        handles.remove(handle)
    busy = outcome.error is not None and outcome.error.code == "run_busy"
    if log is not None and not handle.cancelled and not busy:
        # A call whose run is live elsewhere is not journaled: a later re-run continues it.
        await log.record(replace(to_part(outcome), key=key), model="team")
    return outcome
