"""Timing and verification, identical for every framework.

Every timed run is checked: its output must equal the expected text (which echoes the
tool results the model saw) and the tool bodies must have run exactly as often as the
script asks. A verification pass before timing also runs the invalid-arguments script and
the streaming script, and doubles as warm-up.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from ._adapter import Adapter
from ._script import (
    CALLS,
    EXPECTED_CALLS,
    EXPECTED_OUTPUT,
    STREAM_DELTAS,
    STREAM_TEXT,
    WORKLOADS,
    Workload,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "Budget",
    "Sampled",
    "Sampler",
    "Stat",
    "VerificationError",
    "check",
    "concurrent_runs",
    "run_sampler",
    "sample_interleaved",
    "stream_sampler",
    "verify",
]


class VerificationError(AssertionError):
    """A framework did not do what the script asked."""


def check(condition: bool, what: str) -> None:
    """Raise :class:`VerificationError` with ``what`` unless ``condition`` holds."""
    if not condition:
        raise VerificationError(what)


@dataclass(frozen=True, slots=True)
class Stat:
    """Median, min and max of ``n`` samples (in the unit of the samples)."""

    median: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stat:
        """Summarise ``samples``."""
        return cls(statistics.median(samples), min(samples), max(samples), len(samples))

    def scaled(self, factor: float) -> Stat:
        """The same figures multiplied by ``factor`` (unit conversion)."""
        return Stat(self.median * factor, self.lo * factor, self.hi * factor, self.n)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Budget:
    """How many repetitions: at least ``min_reps``, then more until ``seconds`` or ``max_reps``."""

    min_reps: int
    max_reps: int
    seconds: float

    def more(self, done: int, elapsed: float) -> bool:
        """Whether to take another sample."""
        return done < self.min_reps or (done < self.max_reps and elapsed < self.seconds)

    def split(self, parts: int) -> Budget:
        """The share of one of ``parts`` rounds."""
        return Budget(-(-self.min_reps // parts), -(-self.max_reps // parts), self.seconds / parts)


async def _run_checked(adapter: Adapter, workload: Workload) -> None:
    before = CALLS.value
    output = await adapter.run(workload)
    check(
        output == EXPECTED_OUTPUT[workload],
        f"{adapter.name} {workload}: output {output!r}, expected {EXPECTED_OUTPUT[workload]!r}",
    )
    ran = CALLS.value - before
    check(
        ran == EXPECTED_CALLS[workload],
        f"{adapter.name} {workload}: tool bodies ran {ran} times, "
        f"expected {EXPECTED_CALLS[workload]}",
    )


async def _stream_checked(adapter: Adapter) -> float:
    """One streamed run; returns seconds from the call to the consumer's last delta."""
    start = time.perf_counter()
    outcome = await adapter.stream()
    check(
        outcome.deltas == STREAM_DELTAS,
        f"{adapter.name} stream: consumer saw {outcome.deltas} deltas, expected {STREAM_DELTAS}",
    )
    check(outcome.text == STREAM_TEXT, f"{adapter.name} stream: final text differs")
    return outcome.last_delta_at - start


async def verify(adapter: Adapter) -> None:
    """One checked pass over every workload, the invalid-arguments one included, and a stream.

    The ``invalid`` workload proves argument validation: its first call carries
    ``{"a": "not a number"}``; the tool body must not run (only one body execution is
    allowed), and the error must reach the model (the output then reads ``error,2``).
    """
    for workload in WORKLOADS:
        await _run_checked(adapter, workload)
    await _stream_checked(adapter)


Sampler: TypeAlias = Callable[[], Awaitable[float]]


def run_sampler(adapter: Adapter, workload: Workload) -> Sampler:
    """Seconds of one checked run of ``workload``."""

    async def once() -> float:
        start = time.perf_counter()
        await _run_checked(adapter, workload)
        return time.perf_counter() - start

    return once


def stream_sampler(adapter: Adapter) -> Sampler:
    """Seconds from starting one checked streamed run to the consumer's last delta."""
    return lambda: _stream_checked(adapter)


@dataclass(slots=True)
class Sampled:
    """What :func:`sample_interleaved` measured, and which samplers failed."""

    stats: dict[str, Stat] = field(default_factory=dict[str, Stat])
    errors: dict[str, str] = field(default_factory=dict[str, str])


async def _batch(once: Sampler, budget: Budget, into: list[float]) -> None:
    gc.collect()
    taken = 0
    start = time.perf_counter()
    while budget.more(taken, time.perf_counter() - start):
        into.append(await once())
        taken += 1


async def sample_interleaved(
    samplers: Mapping[str, Sampler],
    budget: Budget,
    rounds: int,
    warmup: int = 3,
    console: Console | None = None,
) -> Sampled:
    """Time every sampler in ``rounds`` rounds, each taking its share of ``budget`` in turn.

    Interleaving spreads load changes on a shared machine over all frameworks alike, so
    the ratios between them stay fair. A sampler that raises is dropped and reported.
    On a terminal (``console``, default stderr) a bar shows the round and the sampler.
    """
    from ._progress import rounds_bar  # not in the S4 child: its RSS is measured

    share = budget.split(rounds)
    samples: dict[str, list[float]] = {name: [] for name in samplers}
    sampled = Sampled()
    with rounds_bar(rounds, console) as bar:
        for round_ in range(rounds):
            for name, once in samplers.items():
                if name in sampled.errors:
                    continue
                bar.start(round_, name, rounds * len(samplers))
                try:
                    for _ in range(warmup if round_ == 0 else 0):
                        await once()
                    await _batch(once, share, samples[name])
                except Exception as exc:  # report it, keep timing the others
                    sampled.errors[name] = f"{type(exc).__name__}: {exc}"
                bar.done()
    sampled.stats = {n: Stat.of(s) for n, s in samples.items() if n not in sampled.errors}
    return sampled


async def concurrent_runs(adapter: Adapter, workload: Workload, n: int) -> float:
    """Wall time of ``n`` concurrent checked runs of ``workload`` (``asyncio.gather``)."""
    before = CALLS.value
    start = time.perf_counter()
    outputs = await asyncio.gather(*(adapter.run(workload) for _ in range(n)))
    wall = time.perf_counter() - start
    wrong = sum(1 for o in outputs if o != EXPECTED_OUTPUT[workload])
    check(wrong == 0, f"{adapter.name} x{n}: {wrong} runs gave a wrong output")
    ran = CALLS.value - before
    check(
        ran == n * EXPECTED_CALLS[workload],
        f"{adapter.name} x{n}: tool bodies ran {ran} times, "
        f"expected {n * EXPECTED_CALLS[workload]}",
    )
    return wall
