"""What a suite run produces: per-framework figures (in seconds and MB) and run facts."""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from ._harness import Stat

__all__ = ["Concurrency", "FrameworkResult", "ImportResult", "Results", "machine_facts"]


@dataclass(slots=True)
class Concurrency:
    """S4 figures for one ``n``: wall time per gather, RSS after warm-up and at peak."""

    n: int
    wall: Stat
    base_rss_mb: float
    peak_rss_mb: float

    @property
    def per_run(self) -> float:
        """Median seconds of wall time per run."""
        return self.wall.median / self.n


@dataclass(slots=True)
class FrameworkResult:
    """Everything measured for one framework; ``error`` set if it failed (then nothing counts)."""

    name: str
    version: str
    is_peer: bool
    error: str | None = None
    s4_error: str | None = None
    s1_sync: Stat | None = None
    s1_async: Stat | None = None
    s2: Stat | None = None
    s3: Stat | None = None
    s4: dict[int, Concurrency] = field(default_factory=dict[int, Concurrency])

    def s4_ratio(self, small: int, large: int) -> float | None:
        """Per-run cost at ``large`` concurrent runs over per-run cost at ``small``."""
        if small in self.s4 and large in self.s4:
            return self.s4[large].per_run / self.s4[small].per_run
        return None


@dataclass(slots=True)
class ImportResult:
    """S5 for one statement."""

    label: str
    framework: str | None
    seconds: Stat | None = None
    error: str | None = None


@dataclass(slots=True)
class Results:
    """One suite run."""

    quick: bool
    frameworks: dict[str, FrameworkResult] = field(default_factory=dict[str, FrameworkResult])
    imports: list[ImportResult] = field(default_factory=list[ImportResult])
    duration: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict[str, Any])

    def get(self, name: str) -> FrameworkResult | None:
        """The result of ``name`` if it was measured without error."""
        found = self.frameworks.get(name)
        return found if found is not None and found.error is None else None

    @property
    def peers(self) -> list[FrameworkResult]:
        """Peers measured without error."""
        return [r for r in self.frameworks.values() if r.is_peer and r.error is None]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, Any]:
    """CPU, cores, memory, OS and Python of this machine."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
    }
