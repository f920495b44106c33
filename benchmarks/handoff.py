"""Handoffs: what one transfer to another agent costs, beside openai-agents and pydantic-ai.

Run as ``python -m benchmarks.handoff``. A chain of ``K + 1`` agents ``a0 → a1 → … → aK``:
each agent's zero-latency scripted model hands the conversation to the next one, and the
last answers ``done``. The same chain with ``K = 0`` (one agent answering) is the base;
the overhead per transfer is ``(time(K) - time(0)) / K``. It covers everything a transfer
makes the framework do: one model step, the transfer tool call, the switch of agent.

* Bastion: ``Agent(handoffs=[next])`` (``transfer_to_<name>``, default input filter, the
  ``agent.handoff`` event), on ``bastion.testing.FunctionModel``;
* openai-agents: ``Agent(handoffs=[next])``, the SDK's ``transfer_to_<name>`` tool, on a
  fake ``Model`` (tracing disabled), ``Runner.run``;
* pydantic-ai has no handoffs; its documented pattern is *agent delegation*: a tool that
  awaits the next agent's ``run`` (on ``FunctionModel``). A delegating agent's model is
  called twice (the call, then the answer from the tool result), as pydantic-ai does it.

Every model function yields to the loop once per request. Interleaved over 7 rounds;
every run's output is checked. Prints µs per run and per transfer (median).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

K = 4
ANSWER = "done"

Runner = Callable[[], Awaitable[str]]


# -- Bastion -------------------------------------------------------------------------------


def bastion_chain(k: int) -> Runner:
    from bastion import Agent
    from bastion.core import ModelRequest
    from bastion.testing import Call, FunctionModel, Turn

    def model(target: str | None) -> FunctionModel:
        async def respond(request: ModelRequest) -> Turn | str:
            await asyncio.sleep(0)
            if target is None:
                return ANSWER
            return Turn(tool_calls=[Call(f"transfer_to_{target}", {}, id="h")])

        return FunctionModel(respond, name="bench", yield_to_loop=False, record_requests=False)

    agent: Agent[Any, str] | None = None
    for i in reversed(range(k + 1)):
        handoffs = [agent] if agent is not None else []
        agent = Agent(f"a{i}", model=model(f"a{i + 1}" if i < k else None), handoffs=handoffs)
    assert agent is not None
    first = agent

    async def run() -> str:
        return str((await first.run("go")).output)

    return run


# -- openai-agents ---------------------------------------------------------------------------


def openai_agents_chain(k: int) -> Runner:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.items import ModelResponse, TResponseInputItem
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class Fake(Model):
        def __init__(self, target: str | None) -> None:
            self.target = target

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            await asyncio.sleep(0)
            output: list[Any]
            if self.target is None:
                text = ResponseOutputText(type="output_text", text=ANSWER, annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="m", type="message", role="assistant", status="completed", content=[text]
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        id=f"fc_{self.target}",
                        call_id=f"h_{self.target}",
                        name=f"transfer_to_{self.target}",
                        arguments="{}",
                    )
                ]
            return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(
                "This scripted benchmark model answers whole turns; it does not stream."
            )

    agent: Agent[Any] | None = None
    for i in reversed(range(k + 1)):
        agent = Agent(
            name=f"a{i}",
            model=Fake(f"a{i + 1}" if i < k else None),
            handoffs=[agent] if agent is not None else [],
        )
    assert agent is not None
    first = agent
    del TResponseInputItem

    async def run() -> str:
        return str((await Runner.run(first, "go")).final_output)

    return run


# -- pydantic-ai (delegation) ----------------------------------------------------------------


def pydantic_ai_chain(k: int) -> Runner:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(delegates: bool) -> FunctionModel:
        async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            await asyncio.sleep(0)
            returned = [
                part
                for message in messages
                if isinstance(message, ModelRequest)
                for part in message.parts
                if isinstance(part, ToolReturnPart)
            ]
            if not delegates:
                return ModelResponse(parts=[TextPart(ANSWER)])
            if returned:
                return ModelResponse(parts=[TextPart(str(returned[-1].content))])
            return ModelResponse(parts=[ToolCallPart("delegate", "{}", tool_call_id="h")])

        return FunctionModel(respond)

    def delegate_to(target: Agent[None, str]) -> Tool[Any]:
        async def delegate() -> str:
            """Hand the task to the next agent."""
            return (await target.run("go")).output

        return Tool(delegate)

    agent: Agent[None, str] | None = None
    for _ in range(k + 1):
        tools: Sequence[Tool[Any]] = [delegate_to(agent)] if agent is not None else []
        agent = Agent(model(agent is not None), tools=tools)
    assert agent is not None
    first = agent

    async def run() -> str:
        return (await first.run("go")).output

    return run


CHAINS: dict[str, Callable[[int], Runner]] = {
    "bastion": bastion_chain,
    "openai-agents": openai_agents_chain,
    "pydantic-ai (delegation)": pydantic_ai_chain,
}


async def _time(run: Runner, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        if await run() != ANSWER:
            raise AssertionError("a chain did not end with the last agent's answer")
    return (time.perf_counter() - start) / n * 1e6


async def measure(runs: int = 700) -> dict[str, tuple[float, float]]:
    """Median µs per run of the K-chain, and per transfer, for each framework."""
    timed = {(name, k): make(k) for name, make in CHAINS.items() for k in (0, K)}
    for run in timed.values():  # warm up (and check)
        await _time(run, 50)
    times: dict[tuple[str, int], list[float]] = {key: [] for key in timed}
    for _ in range(7):
        for key, run in timed.items():
            times[key].append(await _time(run, runs // 7))
    out: dict[str, tuple[float, float]] = {}
    for name in CHAINS:
        chain = statistics.median(times[name, K])
        base = statistics.median(times[name, 0])
        out[name] = (chain, (chain - base) / K)
    return out


async def main() -> None:
    figures = await measure()
    best_peer = min(v[1] for n, v in figures.items() if n != "bastion")
    print(f"| framework | µs per run ({K} transfers) | µs per transfer | vs Bastion |")
    print("|---|---:|---:|---:|")
    ours = figures["bastion"][1]
    for name, (chain, per) in figures.items():
        print(f"| {name} | {chain:,.0f} | {per:,.0f} | {per / ours:.1f}x |")
    print(f"\nfastest peer / Bastion per transfer: {best_peer / ours:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
