"""A process spending against governance limits kept in a shared store (run by the tests).

``calls URL LIMIT N``: make up to N calls against a ``calls`` limit of LIMIT per day and
print how many were admitted. ``cost URL MAX PER_CALL N``: make up to N calls costing
PER_CALL each against a daily cost budget of MAX; print what this process spent.
``rounds URL LIMIT N``: begin up to N tool-call rounds against a ``rounds`` limit of LIMIT
per day and print how many were admitted.
``raise URL LIMIT N NEW``: make up to N calls against a mutable ``calls`` limit of LIMIT per
day; when it is reached a human raises it to NEW (or, with NEW ``0``, nobody is there to
decide); print how many were admitted.
Prints ``ready`` once the store is open and starts on ``go``.
"""

from __future__ import annotations

import asyncio
import sys

from bastion.core import Usage
from bastion.governance import (
    Budget,
    Denied,
    DenyDecision,
    Governor,
    Interrupt,
    InterruptContext,
    InterruptDecision,
    InterruptRequired,
    Limit,
    MutateDecision,
    PolicyExceeded,
)
from bastion.stores import StoreCounters, Stores, open_store


async def _main(mode: str, url: str, limit: str, *rest: str) -> None:
    async with open_store(url) as stores:
        if mode == "raise":
            governor = _raising(stores, float(limit), float(rest[1]))
            per_call, count = 0.0, int(rest[0])
        elif mode in {"calls", "rounds"}:
            governor = Governor(
                oracles={"llm": [Limit(type=mode, max=float(limit), window="day")]},
                store=StoreCounters(stores.counters),
            )
            per_call, count = 0.0, int(rest[0])
        else:
            governor = Governor(
                budget=Budget(cost_usd=float(limit), window="day"),
                store=StoreCounters(stores.counters),
            )
            per_call, count = float(rest[0]), int(rest[1])
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)

        async def call() -> Usage:
            await asyncio.sleep(0)  # the call is in flight: the other process may check now
            return Usage(prompt_tokens=1, completion_tokens=1, cost_usd=per_call)

        admitted, spent = 0, 0.0
        for _ in range(count):
            try:
                if mode == "rounds":
                    await governor.begin_round("llm")
                else:
                    await governor.exec("llm", call)
            except (PolicyExceeded, InterruptRequired, Denied):
                continue
            admitted += 1
            spent += per_call
        print(repr(spent) if mode == "cost" else admitted, flush=True)


def _raising(stores: Stores, limit: float, new: float) -> Governor:
    """A governor whose daily calls limit ``ops`` may raise; raises it to ``new`` if > 0."""

    def decide(interrupt: Interrupt, ctx: InterruptContext) -> InterruptDecision:
        if new > 0:
            return MutateDecision(oracle="llm", limit_type="calls", max=new, approver=OPS)
        return DenyDecision(reason="nobody may raise it here")

    return Governor(
        oracles={"llm": [Limit(type="calls", max=limit, window="day", mutable={OPS: True})]},
        store=StoreCounters(stores.counters),
        handle_interrupt=decide,
    )


OPS = "human:ops"


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:]))
