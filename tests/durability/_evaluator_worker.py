"""A worker for the evaluator-optimizer crash test.

Usage: ``python _evaluator_worker.py STORE_URL WORKDIR start|resume``. Three iterations at
most; every evaluation fails. In ``start`` the generator blocks in iteration 2 (after
iteration 1 is journaled): it prints ``generating 2`` and waits to be killed. ``resume``
runs the same loop (same ``run_id``). Each generator call appends its iteration number to
``WORKDIR/generated``; the result (JSON) goes to stdout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from bastion.multi import Evaluation, evaluator_optimizer
from bastion.stores import open_store


async def main(store: str, workdir: Path, mode: str) -> None:
    count = (
        len((workdir / "generated").read_text().split()) if (workdir / "generated").exists() else 0
    )
    number = count

    async def generate(task: str, feedback: str | None) -> str:
        nonlocal number
        number += 1
        with (workdir / "generated").open("a") as f:
            f.write(f"{number}\n")
        if mode == "start" and number == 2:
            print("generating 2", flush=True)  # the test kills us here
            await asyncio.Event().wait()
        return f"draft {number} after {feedback}"

    def evaluate(candidate: str, n: int) -> Evaluation:
        return Evaluation(passed=False, score=float(n), feedback=f"feedback {n}")

    async with open_store(store) as stores:
        result = await evaluator_optimizer(
            generator=generate,
            evaluator=evaluate,
            task="Write it.",
            max_iterations=3,
            select="best_score",
            store=stores,
            run_id="loop-crash",
        )
    summary = {
        "output": result.output,
        "iterations": [[i.number, i.candidate, i.restored] for i in result.iterations],
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
