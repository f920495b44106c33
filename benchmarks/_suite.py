"""The suite: every framework through S1-S3 in this process, S4 and S5 in fresh ones."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import s4
from ._adapter import Adapter
from ._harness import Budget, Sampler, Stat, run_sampler, sample_interleaved, stream_sampler, verify
from ._imports import IMPORTS, time_imports
from ._registry import by_name, load, version_of
from ._results import Concurrency, FrameworkResult, Results, machine_facts
from ._script import CONCURRENCY

__all__ = ["SCENARIOS", "Settings", "parse_list", "run_suite"]

SCENARIOS = ("s1", "s2", "s3", "s4", "s5")


@dataclass(frozen=True, slots=True)
class Settings:
    """What to run and how many repetitions."""

    frameworks: tuple[str, ...]
    scenarios: frozenset[str]
    quick: bool = False

    def budget(self, scenario: str) -> Budget:
        """Repetitions per framework for an in-process scenario (S1: per tool variant)."""
        quick = {"s1": Budget(6, 100, 0.3), "s2": Budget(6, 20, 0.2), "s3": Budget(6, 50, 0.3)}
        full = {"s1": Budget(20, 500, 1.5), "s2": Budget(20, 100, 1.0), "s3": Budget(10, 200, 1.5)}
        return (quick if self.quick else full)[scenario]

    @property
    def rounds(self) -> int:
        """Interleaved rounds per in-process measurement."""
        return 2 if self.quick else 5

    @property
    def s4_seconds(self) -> float:
        """Time budget for repeated gathers in each S4 process (at least one gather)."""
        return 0.0 if self.quick else 3.0

    def s4_wanted(self, framework: str) -> bool:
        """Whether to run S4 for ``framework`` (``--quick`` skips the peers: minutes each)."""
        return not (self.quick and by_name(framework).is_peer)

    def s5_reps(self, framework: str | None) -> int:
        """Fresh interpreters per import statement (peers take seconds each: fewer)."""
        if self.quick or (framework is not None and by_name(framework).is_peer):
            return 5
        return 9


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class _Cell:
    """One in-process measurement: the result field it fills and how to take a sample."""

    scenario: str
    field: str
    sampler: Callable[[Adapter], Sampler]


_CELLS = (
    _Cell("s1", "s1_sync", lambda a: run_sampler(a, "loop_sync")),
    _Cell("s1", "s1_async", lambda a: run_sampler(a, "loop_async")),
    _Cell("s2", "s2", lambda a: run_sampler(a, "parallel")),
    _Cell("s3", "s3", stream_sampler),
)


async def _setup(results: Results, settings: Settings) -> dict[str, Adapter]:
    """Load, build and verify every framework; failures are recorded, not raised."""
    adapters: dict[str, Adapter] = {}
    for name in settings.frameworks:
        framework = by_name(name)
        result = FrameworkResult(name, version_of(framework), framework.is_peer)
        results.frameworks[name] = result
        _say(f"{name} {result.version}: building and verifying")
        try:
            adapter = load(name)
            adapter.setup()
            await verify(adapter)
        except Exception as exc:  # report and go on with the other frameworks
            result.error = f"{type(exc).__name__}: {exc}"
            _say(f"  FAILED {result.error}")
            continue
        adapters[name] = adapter
    return adapters


async def _all_in_process(results: Results, settings: Settings) -> None:
    adapters = await _setup(results, settings)
    for cell in _CELLS:
        if cell.scenario not in settings.scenarios or not adapters:
            continue
        _say(f"{cell.field}: {settings.rounds} interleaved rounds")
        sampled = await sample_interleaved(
            {n: cell.sampler(a) for n, a in adapters.items()},
            settings.budget(cell.scenario),
            settings.rounds,
        )
        for name, stat in sampled.stats.items():
            setattr(results.frameworks[name], cell.field, stat)
            _say(f"  {name}: {stat.median * 1e6:,.0f} µs (n={stat.n})")
        for name, error in sampled.errors.items():
            results.frameworks[name].error = error
            adapters.pop(name)
            _say(f"  {name} FAILED {error}")


def _concurrency(results: Results, settings: Settings) -> None:
    for result in results.frameworks.values():
        if result.error is not None or not settings.s4_wanted(result.name):
            continue
        for n in CONCURRENCY:
            _say(f"{result.name}: S4 x{n} in a fresh process")
            try:
                figures = s4.measure(result.name, n, settings.s4_seconds)
            except RuntimeError as exc:
                result.s4_error = str(exc)
                _say(f"  FAILED {result.s4_error}")
                break
            result.s4[n] = Concurrency(
                n, Stat.of(figures["walls"]), figures["base_rss_mb"], figures["peak_rss_mb"]
            )


def _imports(results: Results, settings: Settings) -> None:
    cases = [c for c in IMPORTS if c.framework is None or c.framework in settings.frameworks]
    _say(f"S5: {len(cases)} import statements, interleaved rounds")
    results.imports = time_imports(cases, lambda case: settings.s5_reps(case.framework))


def run_suite(settings: Settings) -> Results:
    """Run the selected scenarios for the selected frameworks."""
    started = time.perf_counter()
    results = Results(quick=settings.quick, machine=machine_facts())
    asyncio.run(_all_in_process(results, settings))
    if "s4" in settings.scenarios:
        _concurrency(results, settings)
    if "s5" in settings.scenarios:
        _imports(results, settings)
    results.duration = time.perf_counter() - started
    return results


def parse_list(value: str, known: Sequence[str]) -> tuple[str, ...]:
    """Split a comma-separated list, keeping ``known`` order; reject unknown names."""
    wanted = [v.strip() for v in value.split(",") if v.strip()]
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise SystemExit(f"unknown: {', '.join(unknown)}; choose from {', '.join(known)}")
    return tuple(k for k in known if k in wanted)
