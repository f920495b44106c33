"""The harness's rounds bar: shown on a terminal while samplers run, absent when piped."""

from __future__ import annotations

import io
import re

from rich.console import Console

from benchmarks._harness import Budget, Sampler, sample_interleaved

_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


async def _sample(terminal: bool) -> tuple[list[str], str]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100, color_system=None)
    seen: list[str] = []

    def sampler(name: str) -> Sampler:
        async def once() -> float:
            lines = _CODES.sub("\n", out.getvalue()).splitlines()
            seen.append(f"{name}: {next((x for x in reversed(lines) if x.strip()), '')}")
            return 0.001

        return once

    budget = Budget(min_reps=2, max_reps=2, seconds=60)
    sampled = await sample_interleaved(
        {"alpha": sampler("alpha"), "beta": sampler("beta")}, budget, 2, 0, console
    )
    assert set(sampled.stats) == {"alpha", "beta"}
    return seen, out.getvalue()


async def test_a_terminal_shows_the_round_and_the_sampler_running() -> None:
    seen, _ = await _sample(terminal=True)
    bars = [re.findall(r"^(\w+): round (\d)/2 · (\w+)\W+(\d)/4", line) for line in seen]
    assert bars == [  # one sample per sampler and round (the budget's share)
        [("alpha", "1", "alpha", "0")], [("beta", "1", "beta", "1")],
        [("alpha", "2", "alpha", "2")], [("beta", "2", "beta", "3")],
    ]  # fmt: skip


async def test_piped_nothing_is_drawn() -> None:
    seen, written = await _sample(terminal=False)
    assert written == ""
    assert all(line.endswith(": ") for line in seen)
