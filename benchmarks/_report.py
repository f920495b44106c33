"""Turning :class:`~benchmarks._results.Results` into tables, target verdicts and JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._harness import Stat
from ._registry import FRAMEWORKS, installed_version, version_of
from ._results import FrameworkResult, Results
from ._script import CONCURRENCY, LONGEST_TOOL, STREAM_DELTAS

__all__ = ["Target", "markdown", "targets", "to_json", "update_readme", "write_json"]

SMALL, LARGE = CONCURRENCY
US, MS = 1e6, 1e3
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
DEPENDENCIES = ("pydantic", "langchain-core", "langgraph-prebuilt", "openai", "anyio")
X, DASH = "\N{MULTIPLICATION SIGN}", "\N{EN DASH}"


def _num(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _stat(stat: Stat | None, unit: float) -> str:
    if stat is None:
        return "-"
    s = stat.scaled(unit)
    return f"{_num(s.median)} ({_num(s.lo)}{DASH}{_num(s.hi)})"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}{X}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _over(stat: Stat | None, base: Stat | None) -> float | None:
    if stat is None or base is None:
        return None
    return stat.median / base.median


def _s3_overhead(result: FrameworkResult, floor: FrameworkResult | None) -> float | None:
    """Microseconds per delta above the floor."""
    if result.s3 is None or floor is None or floor.s3 is None:
        return None
    return (result.s3.median - floor.s3.median) / STREAM_DELTAS * US


def _rows(results: Results) -> list[FrameworkResult]:
    return list(results.frameworks.values())


def _failed(results: Results) -> str:
    lines = [f"- **{r.name} failed**: {r.error}" for r in _rows(results) if r.error]
    lines += [f"- **{r.name} S4 failed**: {r.s4_error}" for r in _rows(results) if r.s4_error]
    return "\n".join(lines)


def _s1(results: Results) -> str:
    floor = results.get("floor")
    rows = [
        [
            r.name,
            _stat(r.s1_sync, US),
            _stat(r.s1_async, US),
            _ratio(_over(r.s1_sync, floor and floor.s1_sync)),
            _ratio(_over(r.s1_async, floor and floor.s1_async)),
        ]
        for r in _rows(results)
        if r.s1_sync is not None
    ]
    header = [
        "framework",
        "sync tool µs/run",
        "async tool µs/run",
        f"{X} floor sync",
        f"{X} floor async",
    ]
    return _table(header, rows)


def _s2(results: Results) -> str:
    rows = [
        [r.name, _stat(r.s2, MS), _ratio(r.s2.median / LONGEST_TOOL)]
        for r in _rows(results)
        if r.s2 is not None
    ]
    return _table(["framework", "wall ms", f"{X} longest tool (10 ms)"], rows)


def _s3(results: Results) -> str:
    floor = results.get("floor")
    rows = [
        [
            r.name,
            _stat(r.s3.scaled(1 / STREAM_DELTAS), US),
            _stat(r.s3, MS),
            "-" if (o := _s3_overhead(r, floor)) is None else _num(o),
        ]
        for r in _rows(results)
        if r.s3 is not None
    ]
    header = ["framework", "µs/delta", "ms to last delta", "overhead µs/delta vs floor"]
    return _table(header, rows)


def _s4(results: Results) -> str:
    rows: list[list[str]] = []
    for r in _rows(results):
        small, large = r.s4.get(SMALL), r.s4.get(LARGE)
        if small is None or large is None:
            continue
        rows.append(
            [
                r.name,
                _stat(large.wall, MS),
                _num(small.per_run * US),
                _num(large.per_run * US),
                _ratio(r.s4_ratio(SMALL, LARGE)),
                _num(large.base_rss_mb),
                _num(large.peak_rss_mb),
            ]
        )
    header = [
        "framework",
        f"wall ms, {LARGE} runs",
        f"µs/run @{SMALL}",
        f"µs/run @{LARGE}",
        f"cost @{LARGE} / @{SMALL}",
        "RSS after warm-up MB",
        f"peak RSS MB @{LARGE}",
    ]
    return _table(header, rows)


def _s5(results: Results) -> str:
    rows = [
        [
            f"`{i.label}`",
            i.framework or "(reference)",
            _stat(i.seconds, MS) if i.error is None else i.error,
        ]
        for i in results.imports
    ]
    return _table(["statement", "framework", "ms"], rows)


@dataclass(frozen=True, slots=True)
class Target:
    """One target of Bastion's and whether this run met it (``None``: not measured)."""

    scenario: str
    goal: str
    measured: str
    met: bool | None

    @property
    def verdict(self) -> str:
        """``met``, ``missed`` or ``not measured``."""
        return {True: "met", False: "**missed**", None: "not measured"}[self.met]


def _s1_targets(bastion: FrameworkResult | None, results: Results) -> list[Target]:
    floor = results.get("floor")
    out: list[Target] = []
    for variant in ("sync", "async"):
        mine = getattr(bastion, f"s1_{variant}", None) if bastion else None
        base = getattr(floor, f"s1_{variant}", None) if floor else None
        over = _over(mine, base)
        out.append(
            Target(
                f"S1 {variant} tool",
                f"≤ 2{X} the floor",
                _ratio(over),
                None if over is None else over <= 2,
            )
        )
        peer_stats = [
            (p.name, s) for p in results.peers if (s := getattr(p, f"s1_{variant}")) is not None
        ]
        if mine is None or not peer_stats:
            out.append(
                Target(f"S1 {variant} tool", f"≥ 5{X} faster than the fastest peer", "-", None)
            )
            continue
        fastest_name, fastest = min(peer_stats, key=lambda item: item[1].median)
        speedup = fastest.median / mine.median
        out.append(
            Target(
                f"S1 {variant} tool",
                f"≥ 5{X} faster than the fastest peer",
                f"{speedup:.1f}{X} faster than {fastest_name}",
                speedup >= 5,
            )
        )
    return out


def targets(results: Results) -> list[Target]:
    """Bastion's targets, each with the figure measured and a verdict."""
    bastion = results.get("bastion")
    floor = results.get("floor")
    out = _s1_targets(bastion, results)
    s2 = bastion.s2.median / LONGEST_TOOL if bastion and bastion.s2 else None
    out.append(
        Target(
            "S2 parallel",
            f"≤ 1.15{X} the longest tool",
            _ratio(s2),
            None if s2 is None else s2 <= 1.15,
        )
    )
    s3 = _s3_overhead(bastion, floor) if bastion else None
    out.append(
        Target(
            "S3 streaming",
            "overhead ≤ 10 µs/delta over the floor",
            "-" if s3 is None else f"{s3:.2f} µs/delta",
            None if s3 is None else s3 <= 10,
        )
    )
    s4 = bastion.s4_ratio(SMALL, LARGE) if bastion else None
    out.append(
        Target(
            "S4 concurrency",
            f"per-run cost @{LARGE} ≤ 1.2{X} @{SMALL}",
            _ratio(s4),
            None if s4 is None else s4 <= 1.2,
        )
    )
    for imported in results.imports:
        # The target is `import bastion`; the other Bastion row (building a tool pulls in
        # pydantic) is a reference, shown in the S5 table next to what pydantic alone costs.
        if imported.framework == "bastion" and imported.label == "import bastion":
            ms = imported.seconds.median * MS if imported.seconds else None
            out.append(
                Target(
                    f"S5 `{imported.label}`",
                    "≤ 150 ms",
                    "-" if ms is None else f"{ms:.0f} ms",
                    None if ms is None else ms <= 150,
                )
            )
    return out


def _targets_table(results: Results) -> str:
    rows = [[t.scenario, t.goal, t.measured, t.verdict] for t in targets(results)]
    return _table(["scenario", "target", "measured", "verdict"], rows)


def _versions(results: Results) -> str:
    m = results.machine
    facts = (
        f"{m.get('cores')} cores ({m.get('cpu')}), {m.get('memory_gb')} GB, {m.get('os')}, "
        f"{m.get('implementation')} {m.get('python')}"
    )
    versions = ", ".join(f"{f.name} {version_of(f)}" for f in FRAMEWORKS if f.distribution)
    beneath = ", ".join(f"{d} {installed_version(d)}" for d in DEPENDENCIES)
    mode = "quick pass" if results.quick else "full pass"
    return (
        f"Machine: {facts}.  \nVersions: {versions}; beneath them {beneath}.  \n"
        f"Run: {mode}, {results.duration:.0f} s."
    )


def markdown(results: Results) -> str:
    """The whole report as Markdown: facts, one table per scenario, the targets."""
    sections = [
        _versions(results),
        _failed(results).rstrip(),
        "**Targets**\n\n" + _targets_table(results),
        "**S1 tool loop** (3 tool calls + answer; latency per run)\n\n" + _s1(results),
        "**S2 parallel** (8 tools of 10 ms in one step)\n\n" + _s2(results),
        f"**S3 streaming** ({STREAM_DELTAS} deltas; start of run to the consumer's last delta)\n\n"
        + _s3(results),
        f"**S4 concurrency** ({SMALL} and {LARGE} concurrent S1 runs, async tool, "
        "fresh process each)\n\n" + _s4(results),
        "**S5 import time** (fresh interpreter each)\n\n" + _s5(results),
    ]
    return "\n\n".join(s for s in sections if s) + "\n"


def _stat_json(stat: Stat | None) -> dict[str, Any] | None:
    return None if stat is None else stat.as_dict()


def to_json(results: Results) -> dict[str, Any]:
    """The results as JSON-ready data; times in seconds, memory in MB."""
    return {
        "quick": results.quick,
        "duration_s": results.duration,
        "machine": results.machine,
        "versions": {f.name: version_of(f) for f in FRAMEWORKS}
        | {d: installed_version(d) for d in DEPENDENCIES},
        "frameworks": {
            r.name: {
                "version": r.version,
                "error": r.error,
                "s4_error": r.s4_error,
                "s1_sync_s": _stat_json(r.s1_sync),
                "s1_async_s": _stat_json(r.s1_async),
                "s2_s": _stat_json(r.s2),
                "s3_to_last_delta_s": _stat_json(r.s3),
                "s4": {
                    str(n): {
                        "wall_s": c.wall.as_dict(),
                        "per_run_s": c.per_run,
                        "base_rss_mb": c.base_rss_mb,
                        "peak_rss_mb": c.peak_rss_mb,
                    }
                    for n, c in r.s4.items()
                },
                "s4_cost_ratio": r.s4_ratio(SMALL, LARGE),
            }
            for r in _rows(results)
        },
        "imports": [
            {
                "statement": i.label,
                "framework": i.framework,
                "s": _stat_json(i.seconds),
                "error": i.error,
            }
            for i in results.imports
        ],
        "targets": [
            {"scenario": t.scenario, "target": t.goal, "measured": t.measured, "met": t.met}
            for t in targets(results)
        ],
    }


def write_json(results: Results, path: Path) -> None:
    """Write :func:`to_json` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(results), indent=2) + "\n")


def update_readme(readme: Path, report: str) -> None:
    """Replace the text between the results markers of ``readme`` with ``report``."""
    text = readme.read_text()
    head, found, rest = text.partition(BEGIN)
    _, found_end, tail = rest.partition(END)
    if not (found and found_end):
        raise SystemExit(f"{readme}: no {BEGIN} ... {END} markers")
    readme.write_text(f"{head}{BEGIN}\n\n{report}\n{END}{tail}")
