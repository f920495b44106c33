"""``python -m benchmarks``: run the suite, print the report, write results/latest.json."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._registry import FRAMEWORKS, prepare_environment
from ._report import markdown, update_readme, write_json
from ._suite import SCENARIOS, Settings, parse_list, run_suite

HERE = Path(__file__).resolve().parent
NAMES = tuple(f.name for f in FRAMEWORKS)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; exit status 1 if any framework failed verification."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few repetitions (about 1 minute)")
    parser.add_argument(
        "--frameworks", default=",".join(NAMES), help=f"comma-separated subset of {','.join(NAMES)}"
    )
    parser.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help="comma-separated subset of s1,...,s5"
    )
    parser.add_argument(
        "--update-readme", action="store_true", help="paste the report into benchmarks/README.md"
    )
    parser.add_argument("--json", type=Path, default=HERE / "results" / "latest.json")
    args = parser.parse_args(argv)

    prepare_environment()
    settings = Settings(
        frameworks=parse_list(args.frameworks, NAMES),
        scenarios=frozenset(parse_list(args.scenarios, SCENARIOS)),
        quick=args.quick,
    )
    results = run_suite(settings)
    report = markdown(results)
    write_json(results, args.json)
    if args.update_readme:
        update_readme(HERE / "README.md", report)
    print(report)
    print(f"wrote {args.json}", file=sys.stderr)
    failed = any(r.error or r.s4_error for r in results.frameworks.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
