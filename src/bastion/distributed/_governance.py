"""Governance in an agent workflow: a governor per run, counting in a store all workers share.

The agent's policies and limits judge every model call and tool call inside the workflow,
as in a local run; pure policies decide there (they must be deterministic). What the limits
count (spend, calls, rounds, raised maxima) lives in a counter store every worker opens
(PostgreSQL, Redis or SQLite): the workflow reads and writes it through one *local activity*
per operation (:class:`ActivityCounters`), never itself, so its history records each answer
and a replay decides as the first execution did. ``calls`` limits are counted with the
store's atomic check-and-add when a call is admitted: workers sharing a limit together admit
at most its max. A raised limit is written beside the counters, so every worker sees it.

A counter operation whose answer was lost is attempted again; an add that had landed then
counts twice. Such errors count too much, never too little: the budget is never overspent.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic import TypeAdapter
from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from bastion.agent._governance import AgentGovernance
from bastion.core import UserError
from bastion.governance import CounterRow
from bastion.stores import StoreCounters, Stores, open_store

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Collection, Sequence

    from bastion.agent import Agent, RunConfig
    from bastion.stores import StoreCounters, Stores

__all__ = ["ActivityCounters", "counter_stores", "counters_activity", "governed"]

_TIMEOUT = timedelta(seconds=30)
_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=5)


def counter_stores(agent: Agent[object, object], counters: str | Stores | None) -> Stores | None:
    """The store the workers count the agent's limits in; ``None`` without governance.

    ``counters`` wins; else the agent's own store. A store that is not shared by processes
    (``memory://``) would give each worker its own budget, so it is refused.

    Raises:
        UserError: Governance without a counter store, a bad URL, or an in-memory store.
    """
    if agent.config.governance is None:
        if counters is not None:
            raise UserError(
                f"TemporalAgent(counters=...) counts governance limits, but agent "
                f"{agent.name!r} has no policies or budget."
            )
        return None
    if agent.config.governance.governor.handle_interrupt is not None:
        raise UserError(
            f"Agent {agent.name!r} has an interrupt handler (governance.handle_interrupt): "
            "on Temporal an interrupt parks the workflow instead; decide it with "
            "TemporalAgent.raise_budget or TemporalAgent.resolve."
        )
    if isinstance(counters, str):
        stores = open_store(counters)
    elif isinstance(counters, Stores) or counters is None:
        stores = counters if counters is not None else agent.config.store
    else:
        raise UserError(
            f"TemporalAgent(counters=...) takes a store URL or a Stores, got {counters!r}."
        )
    if stores is None:
        raise UserError(
            f"Agent {agent.name!r} has governance: give TemporalAgent(counters='postgresql://"
            "...') (or a redis:// or sqlite:/// URL), or the agent a store, so every worker "
            "counts against the same limits."
        )
    if stores.url.startswith("memory:"):
        raise UserError(
            f"TemporalAgent counters {stores.url!r} live in one process: each worker would "
            "count its own budget. Use a postgresql://, redis:// or sqlite:/// store."
        )
    return stores


def counters_activity(name: str, stores: Stores) -> Callable[[str, str], Awaitable[str]]:
    """The local activity that runs one counter operation on the worker's open store."""
    opened: list[StoreCounters] = []

    @activity.defn(name=name)
    async def count(operation: str, arguments: str) -> str:
        if not opened:
            await stores.open()  # idempotent: concurrent first calls open one pool
            if not opened:
                opened.append(StoreCounters(stores.counters))
        return await _apply(opened[0], operation, pydantic_core.from_json(arguments))

    return count


_ROWS: TypeAdapter[list[CounterRow]] = TypeAdapter(list[CounterRow])


async def _apply(store: StoreCounters, operation: str, args: dict[str, Any]) -> str:
    """Run ``operation`` on ``store``; its answer as JSON."""
    key, now, seconds = args.get("key", ""), args.get("now", 0.0), args.get("seconds")
    answer: object
    if operation == "get":
        answer = await store.get(key, now=now, seconds=seconds)
    elif operation == "add":
        answer = await store.add(key, args["amount"], now=now, seconds=seconds)
    elif operation == "try_add":
        answer = await store.try_add(
            key, args["amount"], now=now, seconds=seconds, maximum=args["maximum"]
        )
    elif operation == "window_start":
        answer = await store.window_start(key, now=now, seconds=seconds)
    elif operation == "raised_max":
        answer = await store.raised_max(key, now=now, seconds=seconds)
    elif operation == "raise_max":
        answer = await store.raise_max(key, args["maximum"], now=now, seconds=seconds)
    elif operation == "discard":
        answer = await store.discard(args["keys"])
    elif operation == "dump":
        return _ROWS.dump_json(await store.dump(now=now)).decode()
    elif operation == "load":
        answer = await store.load(_ROWS.validate_python(args["rows"]))
    else:
        raise UserError(f"Unknown counter operation {operation!r}.")
    return pydantic_core.to_json(answer).decode()


class ActivityCounters:
    """Counters a workflow reads and writes through the counters local activity.

    It has the methods of :class:`~bastion.stores.StoreCounters` (atomic check-and-add,
    shared raises), so the governor counts ``calls`` when it admits them.
    """

    __slots__ = ("_activity",)

    def __init__(self, activity_name: str) -> None:
        self._activity = activity_name

    async def _call(self, operation: str, **arguments: Any) -> Any:
        text = await workflow.execute_local_activity(
            self._activity,
            args=[operation, pydantic_core.to_json(arguments).decode()],
            result_type=str,
            start_to_close_timeout=_TIMEOUT,
            retry_policy=_RETRY,
            summary=operation,
        )
        return pydantic_core.from_json(text)

    async def get(self, key: str, *, now: float, seconds: float | None) -> float:
        """The sum for ``key`` in the window holding ``now``."""
        return float(await self._call("get", key=key, now=now, seconds=seconds))

    async def add(self, key: str, amount: float, *, now: float, seconds: float | None) -> float:
        """Add ``amount`` atomically; the new sum."""
        return float(await self._call("add", key=key, amount=amount, now=now, seconds=seconds))

    async def try_add(
        self, key: str, amount: float, *, now: float, seconds: float | None, maximum: float
    ) -> tuple[bool, float]:
        """Add ``amount`` only if the sum stays ``<= maximum``; (added, sum)."""
        added, total = await self._call(
            "try_add", key=key, amount=amount, now=now, seconds=seconds, maximum=maximum
        )
        return bool(added), float(total)

    async def window_start(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """When the window holding ``now`` started, if it holds anything."""
        start = await self._call("window_start", key=key, now=now, seconds=seconds)
        return None if start is None else float(start)

    async def raised_max(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """The max a worker raised the limit to in the window holding ``now``, if any."""
        raised = await self._call("raised_max", key=key, now=now, seconds=seconds)
        return None if raised is None else float(raised)

    async def raise_max(
        self, key: str, maximum: float, *, now: float, seconds: float | None
    ) -> float:
        """Raise the limit's shared max to at least ``maximum``; the max in force."""
        return float(
            await self._call("raise_max", key=key, maximum=maximum, now=now, seconds=seconds)
        )

    async def discard(self, keys: Collection[str]) -> None:
        """Forget the counters of a finished scope (nothing to do without any)."""
        if keys:
            await self._call("discard", keys=sorted(keys))

    async def dump(self, *, now: float) -> list[CounterRow]:
        """The counters this worker's store has seen."""
        return _ROWS.validate_python(await self._call("dump", now=now))

    async def load(self, rows: Sequence[CounterRow]) -> None:
        """Replace the given counters with the rows."""
        await self._call("load", rows=_ROWS.dump_python(list(rows), mode="json"))


def governed(config: RunConfig, counters: str) -> RunConfig:
    """``config`` with a governor of this run: the agent's limits, counted by ``counters``.

    The governor is the run's own (its clock is the workflow's, its interrupts and decisions
    are this run's): a replay rebuilds it from the history as it was.
    """
    governance = config.governance
    if governance is None:
        return config
    governor = governance.governor.fork(store=ActivityCounters(counters), clock=config.clock)
    own = AgentGovernance(governor, governance.node, events=governance.events)
    return replace(config, governance=own)
