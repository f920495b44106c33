"""Fan-out: what running N children concurrently costs per child (issue 17).

Run as ``python -m benchmarks.fanout``. Every child is a one-step agent on a zero-latency
scripted model (it yields to the loop once, as I/O would, and answers ``done``); all the
time measured is framework time. Per child, median of 7 interleaved rounds:

* ``bastion fan_out``: ``fan_out(lead, children, max_concurrent_children=N)`` with the
  default ``concat`` merge (events, outcomes, usage roll-up, merge);
* ``bastion gather``: ``asyncio.gather`` of the children's ``run()``, no fan-out (the
  floor of the fan-out: its own cost is the difference);
* ``openai-agents gather``: ``asyncio.gather`` of ``Runner.run`` (the SDK's way to run
  agents in parallel), on a ``Model`` subclass like the SDK's test ``FakeModel``;
* ``pydantic-ai gather``: ``asyncio.gather`` of ``agent.run`` (what a delegating tool
  does for several sub-agents), on ``pydantic_ai.models.function.FunctionModel``.

Garbage is collected before each sample (the peers leave much of it behind, and its
collection would otherwise land on the next case). Also printed: the whole fan-out of 100
concurrent children (target: under 100 ms of framework time), and the ratio to the fastest
peer (target: at least 5x less per child).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents import Agent as OpenAIAgent
from agents import Runner, set_tracing_disabled
from agents.items import ModelResponse as OpenAIResponse
from agents.models.interface import Model as OpenAIModel
from agents.usage import Usage as OpenAIUsage
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.function import FunctionModel as PydanticFunctionModel

from bastion import Agent
from bastion.core import ModelRequest
from bastion.multi import fan_out
from bastion.testing import FunctionModel

from ._peers_openai_agents import _message  # pyright: ignore[reportPrivateUsage]

N = 100
ROUNDS = 7
ANSWER = "done"


def _bastion_child(i: int) -> Agent[Any, str]:
    async def answer(request: ModelRequest) -> str:
        await asyncio.sleep(0)
        return ANSWER

    model = FunctionModel(answer, name="bench-child", yield_to_loop=False, record_requests=False)
    return Agent(f"child{i}", model=model, instructions="be brief")


class _OpenAIModel(OpenAIModel):
    async def get_response(self, *args: Any, **kwargs: Any) -> OpenAIResponse:
        await asyncio.sleep(0)
        return OpenAIResponse(
            output=[_message(ANSWER)], usage=OpenAIUsage(requests=1), response_id=None
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("This scripted benchmark model answers whole turns; it does not stream.")


async def _pydantic_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await asyncio.sleep(0)
    return ModelResponse(parts=[TextPart(ANSWER)])


def cases(n: int = N) -> dict[str, Callable[[], Awaitable[None]]]:
    """The timed fan-outs of ``n`` children, by row label; each checks its outputs."""
    set_tracing_disabled(True)
    lead = Agent("lead", model=FunctionModel(lambda request: "unused"))
    kids = [_bastion_child(i) for i in range(n)]
    children = [(k, "go") for k in kids]
    openai_agents = [
        OpenAIAgent(name=f"child{i}", instructions="be brief", model=_OpenAIModel())
        for i in range(n)
    ]
    pydantic_agents = [
        PydanticAgent(
            PydanticFunctionModel(_pydantic_answer), name=f"child{i}", instructions="be brief"
        )
        for i in range(n)
    ]
    expected = "\n\n".join([ANSWER] * n)

    async def bastion_fan_out() -> None:
        result = await fan_out(lead, children, max_concurrent_children=n)
        _check(result.output == expected, "bastion fan_out")

    async def gather() -> None:
        results = await asyncio.gather(*(k.run("go") for k in kids))
        _check([r.output for r in results] == [ANSWER] * n, "bastion gather")

    async def openai_gather() -> None:
        results = await asyncio.gather(*(Runner.run(a, "go") for a in openai_agents))
        _check([r.final_output for r in results] == [ANSWER] * n, "openai-agents")

    async def pydantic_gather() -> None:
        results = await asyncio.gather(*(a.run("go") for a in pydantic_agents))
        _check([r.output for r in results] == [ANSWER] * n, "pydantic-ai")

    return {
        "bastion fan_out": bastion_fan_out,
        "bastion gather": gather,
        "openai-agents gather": openai_gather,
        "pydantic-ai gather": pydantic_gather,
    }


def _check(ok: bool, label: str) -> None:
    if not ok:
        raise AssertionError(f"{label}: wrong outputs")


async def _time(step: Callable[[], Awaitable[None]], repeat: int) -> float:
    # The peers leave much garbage: collect it first, or its collection lands on whichever
    # case runs next.
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeat):
        await step()
    return (time.perf_counter() - start) / repeat


async def measure(n: int = N, repeat: int = 5) -> dict[str, float]:
    """Median seconds per fan-out of ``n`` children, interleaved over 7 rounds."""
    timed = cases(n)
    for step in timed.values():  # warm up (and check)
        await _time(step, 2)
    samples: dict[str, list[float]] = {label: [] for label in timed}
    for _ in range(ROUNDS):
        for label, step in timed.items():
            samples[label].append(await _time(step, repeat))
    return {label: statistics.median(values) for label, values in samples.items()}


def report(figures: dict[str, float], n: int) -> Sequence[str]:
    """The table and the two targets, as printed lines."""
    fastest_peer = min(v for k, v in figures.items() if not k.startswith("bastion"))
    ours = figures["bastion fan_out"]
    lines = [
        f"| {n} children | ms per fan-out | µs per child | vs fastest peer |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {label} | {value * 1e3:.2f} | {value / n * 1e6:.0f} | {fastest_peer / value:.1f}x |"
        for label, value in figures.items()
    ]
    own = (ours - figures["bastion gather"]) / n * 1e6
    lines.append("")
    lines.append(f"fan-out's own cost over a plain gather: {own:.1f} µs per child")
    lines.append(
        f"{n} concurrent children: {ours * 1e3:.1f} ms of framework time (target < 100 ms); "
        f"{fastest_peer / ours:.1f}x less than the fastest peer (target >= 5x)"
    )
    return lines


async def main() -> None:
    figures = await measure()
    print("\n".join(report(figures, N)))


if __name__ == "__main__":
    asyncio.run(main())
