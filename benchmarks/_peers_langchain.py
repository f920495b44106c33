"""LangGraph and langchain ``create_agent``, on one fake ``BaseChatModel``.

Both compile to a LangGraph graph, so they share the fake model and the drivers: runs use
``graph.ainvoke``; the streaming scenario consumes ``graph.astream(stream_mode=...)`` with
the ``"messages"`` mode (token chunks) and the ``"values"`` mode (the final state).

* ``langgraph``: the hand-built ``StateGraph`` of the LangGraph docs (a model node, a
  ``ToolNode``, ``tools_condition``); ``langgraph.prebuilt.create_react_agent`` is
  deprecated in favour of langchain's ``create_agent``, measured separately.
* ``langchain``: ``langchain.agents.create_agent``.

The fake implements ``_agenerate`` (one loop yield per request) and ``_astream`` (plus one
per delta); ``bind_tools`` returns the model itself. LangSmith tracing is off (env unset).
"""

from __future__ import annotations

import asyncio
import inspect
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar, cast

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph.state import CompiledStateGraph

from ._adapter import Adapter, StreamOutcome
from ._script import (
    INSTRUCTIONS,
    PROMPT,
    SCENARIO,
    TOOLS,
    WORKLOADS,
    Reply,
    Scenario,
    Seen,
    ToolSpec,
    Workload,
    reply,
)

__all__ = ["LangChainAdapter", "LangGraphAdapter"]

Graph = CompiledStateGraph[Any, Any, Any, Any]


def _seen(messages: Sequence[BaseMessage]) -> list[Seen]:
    return [
        Seen(str(m.content), is_error=m.status == "error")
        for m in messages
        if isinstance(m, ToolMessage)
    ]


def _ai_message(answer: Reply) -> AIMessage:
    if not answer.calls:
        return AIMessage(content=answer.text)
    return AIMessage(
        content="",
        tool_calls=[
            {"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"} for c in answer.calls
        ],
    )


class FakeChatModel(BaseChatModel):
    """A chat model answering from the shared script (the benchmark drives it async)."""

    scenario: Scenario

    @property
    def _llm_type(self) -> str:
        return "bench-fake"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = reply(self.scenario, _seen(messages))
        return ChatResult(generations=[ChatGeneration(message=_ai_message(answer))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(0)
        answer = reply(self.scenario, _seen(messages))
        return ChatResult(generations=[ChatGeneration(message=_ai_message(answer))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        await asyncio.sleep(0)
        for delta in reply(self.scenario, _seen(messages)).deltas:
            await asyncio.sleep(0)
            yield ChatGenerationChunk(message=AIMessageChunk(content=delta))


def _tool(spec: ToolSpec) -> StructuredTool:
    if inspect.iscoroutinefunction(spec.function):
        return StructuredTool.from_function(
            coroutine=spec.function, name=spec.name, description=spec.description
        )
    return StructuredTool.from_function(
        func=spec.function, name=spec.name, description=spec.description
    )


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else message.text


class _GraphAdapter(Adapter):
    """Drives any compiled LangGraph graph whose state has ``messages``."""

    @abstractmethod
    def _build(self, model: FakeChatModel, tools: list[BaseTool]) -> Graph:
        """Compile the agent graph for ``model`` and ``tools``."""

    def setup(self) -> None:
        self._graphs = {
            w: self._build(FakeChatModel(scenario=SCENARIO[w]), [_tool(s) for s in TOOLS[w]])
            for w in WORKLOADS
        }
        self._streaming = self._build(FakeChatModel(scenario="stream"), [])

    async def run(self, workload: Workload) -> str:
        graph = self._graphs[workload]
        state: dict[str, Any] = await graph.ainvoke(  # pyright: ignore[reportUnknownMemberType]
            {"messages": [("user", PROMPT)]}
        )
        return _text(state["messages"][-1])

    async def stream(self) -> StreamOutcome:
        outcome = StreamOutcome()
        parts = cast(
            "AsyncIterator[tuple[str, Any]]",
            self._streaming.astream(  # pyright: ignore[reportUnknownMemberType]
                {"messages": [("user", PROMPT)]}, stream_mode=["messages", "values"]
            ),
        )
        async for mode, payload in parts:
            if mode == "messages":
                chunk = payload[0]
                if isinstance(chunk, AIMessageChunk) and chunk.content:
                    outcome.saw_delta()
            else:
                outcome.text = _text(payload["messages"][-1])
        return outcome


class LangGraphAdapter(_GraphAdapter):
    """A hand-built LangGraph ``StateGraph``: model node, ``ToolNode``, ``tools_condition``."""

    name: ClassVar[str] = "langgraph"

    def _build(self, model: FakeChatModel, tools: list[BaseTool]) -> Graph:
        from langgraph.graph import END, START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        bound = model.bind_tools(tools)

        async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
            answer = await bound.ainvoke([SystemMessage(INSTRUCTIONS), *state["messages"]])
            return {"messages": [answer]}

        # LangGraph's builder signatures mention unparametrised generics (CachePolicy, ...).
        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)  # pyright: ignore[reportUnknownMemberType]
        graph.add_edge(START, "model")
        if tools:
            graph.add_node("tools", ToolNode(tools))  # pyright: ignore[reportUnknownMemberType]
            graph.add_conditional_edges("model", tools_condition)
            graph.add_edge("tools", "model")
        else:
            graph.add_edge("model", END)
        return graph.compile()  # pyright: ignore[reportUnknownMemberType]


class LangChainAdapter(_GraphAdapter):
    """langchain 1.x ``create_agent``."""

    name: ClassVar[str] = "langchain"

    def _build(self, model: FakeChatModel, tools: list[BaseTool]) -> Graph:
        from langchain.agents import (
            create_agent,  # pyright: ignore[reportUnknownVariableType]
        )

        return create_agent(model, tools, system_prompt=INSTRUCTIONS)
