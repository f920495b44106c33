"""S5, import time: each statement timed inside a fresh interpreter.

The child measures ``time.perf_counter()`` around the statement only, so interpreter
start-up (the same for all) is excluded. One untimed round first warms the bytecode
cache; the rounds after it are interleaved across the statements.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._harness import Stat
from ._results import ImportResult

__all__ = ["IMPORTS", "ImportCase", "time_imports"]

_BASTION_TOOL = """\
from bastion import Agent, tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b
tool(add, side_effect_class="pure")"""
_PYDANTIC_MODEL = """\
import asyncio, pydantic
pydantic.create_model("add_args", a=(int, ...), b=(int, ...))"""


@dataclass(frozen=True, slots=True)
class ImportCase:
    """A statement to time and the framework it belongs to (``None``: a reference row)."""

    label: str
    framework: str | None
    statement: str


IMPORTS: tuple[ImportCase, ...] = (
    ImportCase("import bastion", "bastion", "import bastion"),
    ImportCase("from bastion import Agent, tool + one tool", "bastion", _BASTION_TOOL),
    ImportCase("import asyncio", "floor", "import asyncio"),
    ImportCase("import asyncio, pydantic", None, "import asyncio, pydantic"),
    ImportCase("import asyncio, pydantic + one pydantic model", None, _PYDANTIC_MODEL),
    ImportCase("import pydantic_ai", "pydantic-ai", "import pydantic_ai"),
    ImportCase("import agents", "openai-agents", "import agents"),
    ImportCase("import langgraph.prebuilt", "langgraph", "import langgraph.prebuilt"),
    ImportCase("import langchain.agents", "langchain", "import langchain.agents"),
)


def _once(statement: str) -> float:
    code = f"import time\n_t0 = time.perf_counter()\n{statement}\nprint(time.perf_counter() - _t0)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"{statement.splitlines()[0]!r} failed: {tail}")
    return float(done.stdout.strip().splitlines()[-1])


def time_imports(
    cases: Sequence[ImportCase], reps: Callable[[ImportCase], int]
) -> list[ImportResult]:
    """Time every case ``reps(case)`` times, interleaved round by round across the cases.

    Interleaving spreads load changes on a shared machine over all statements alike.
    """
    results = [ImportResult(case.label, case.framework) for case in cases]
    samples: list[list[float]] = [[] for _ in cases]
    for round_ in range(max(reps(case) for case in cases) + 1):
        for case, result, taken in zip(cases, results, samples, strict=True):
            if result.error is not None or round_ > reps(case):
                continue
            try:
                seconds = _once(case.statement)
            except RuntimeError as exc:
                result.error = str(exc)
                continue
            if round_ > 0:  # round 0 warms the bytecode cache
                taken.append(seconds)
    for result, taken in zip(results, samples, strict=True):
        if result.error is None:
            result.seconds = Stat.of(taken)
    return results
