"""The benchmark adapters stay honest: one checked pass per framework (no timing).

Each pass runs every workload and checks outputs and tool-body counts, proves that invalid
arguments are rejected before the tool body runs, and streams once. This keeps the
benchmarks from rotting as Bastion's API (or a peer's) moves.
"""

from __future__ import annotations

import pytest

from benchmarks._harness import verify
from benchmarks._registry import _TRACING_OFF, FRAMEWORKS, load


@pytest.mark.parametrize("name", [f.name for f in FRAMEWORKS])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # peers' own deprecations
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
async def test_every_framework_passes_the_checked_pass(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in _TRACING_OFF.items():  # no peer may try to export traces
        monkeypatch.setenv(variable, value)
    adapter = load(name)
    adapter.setup()
    await verify(adapter)
