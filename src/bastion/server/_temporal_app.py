"""``create_app(temporal=...)``: the Temporal side of the app, imported only when asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bastion.core import UserError

if TYPE_CHECKING:
    from fastapi import APIRouter

    from bastion.agent import Agent
    from bastion.stores import Stores

    from ._temporal import TemporalRuns

__all__ = ["temporal_router", "temporal_runs"]


def temporal_runs(
    agents: Mapping[str, Agent[Any, Any]],
    stores: Stores,
    target: object,
    poll: float,
    stopping: asyncio.Event,
) -> TemporalRuns | None:
    """The served agents' runs on Temporal, if ``target`` names a server (else ``None``).

    ``temporalio`` is imported only then.
    """
    if target is None:
        return None
    try:
        from temporalio.client import Client

        from ._temporal import TemporalRuns
    except ImportError as error:  # the extra is not installed
        raise UserError(
            f"temporal= needs the extra: pip install 'bastion[temporal]' ({error})."
        ) from None
    if not isinstance(target, str | Client) or not target:
        raise UserError(f"temporal must be an address 'host:port' or a Client, got {target!r}.")
    if not agents:
        raise UserError("temporal= serves agents: give create_app at least one Agent.")
    return TemporalRuns(agents, stores, target, poll=poll, stopping=stopping)


def temporal_router() -> APIRouter:
    """The routes of Temporal runs (registered before the local ones, which they shadow)."""
    from ._temporal_routes import temporal_router

    return temporal_router
