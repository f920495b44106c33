"""One conformance suite for every :class:`~bastion.core.Model` (STYLE 22).

A model's test module subclasses :class:`ModelConformance` as ``Test…`` and implements two
methods: :meth:`~ModelConformance.make_model` returns a model that answers its calls with
the given :data:`SCENARIOS`, in order (an HTTP adapter over ``httpx.MockTransport`` serving
the vendor's bodies for them, a scripted model, …), and :meth:`~ModelConformance.sent`
returns what that model last sent, as text (the request body on the wire). The suite then
checks what the agent loop relies on: the chunk contract, streaming and non-streaming
answers alike, tool-call assembly, the reasoning round trip, usage, and errors mapped to
the taxonomy.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

import pytest

from bastion.core import (
    AssistantMessage,
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    ContextLengthExceeded,
    FinishChunk,
    MalformedResponse,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Overloaded,
    RateLimited,
    ReasoningPart,
    ResponseAssembler,
    StreamChunk,
    SystemMessage,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolDefinition,
    UserMessage,
)

__all__ = ["SCENARIOS", "ModelConformance", "Scenario", "ScenarioSpec"]

Scenario: TypeAlias = Literal[
    "text",
    "tool_call",
    "parallel_tool_calls",
    "reasoning",
    "no_usage",
    "rate_limited",
    "overloaded",
    "bad_request",
    "authentication",
    "context_length",
    "broken_stream",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioSpec:
    """What a model must answer for one scenario (what your fixture must make it send).

    Attributes:
        description: The vendor behaviour to reproduce.
        text: The answer text.
        tool_calls: ``(name, arguments)`` of the tool calls, in order.
        reasoning: The reasoning text, before the answer.
        error: The error class the call must raise (mapped from the vendor's failure).
    """

    description: str
    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    reasoning: str = ""
    error: type[ModelError] | tuple[type[ModelError], ...] | None = None


SCENARIOS: dict[Scenario, ScenarioSpec] = {
    "text": ScenarioSpec(
        description="Answer 'Hello! How can I help?', reporting usage (input and output > 0).",
        text="Hello! How can I help?",
    ),
    "tool_call": ScenarioSpec(
        description="Call get_weather with {'location': 'Paris'}; no text.",
        tool_calls=(("get_weather", {"location": "Paris"}),),
    ),
    "parallel_tool_calls": ScenarioSpec(
        description="Call get_weather for Paris, then for Lyon, in one answer.",
        tool_calls=(("get_weather", {"location": "Paris"}), ("get_weather", {"location": "Lyon"})),
    ),
    "reasoning": ScenarioSpec(
        description=(
            "Reason 'Two plus two is four.' with an opaque signature (or other opaque "
            "reasoning data the vendor needs back), then answer '4'."
        ),
        text="4",
        reasoning="Two plus two is four.",
    ),
    "no_usage": ScenarioSpec(
        description="Answer 'ok' with no usage at all in the response.", text="ok"
    ),
    "rate_limited": ScenarioSpec(
        description="Refuse with the vendor's rate-limit error and a retry-after of 7 s.",
        error=RateLimited,
    ),
    "overloaded": ScenarioSpec(
        description="Fail with the vendor's capacity error (HTTP 503 / 529).", error=Overloaded
    ),
    "bad_request": ScenarioSpec(
        description="Reject the request as invalid (HTTP 400, not about length).",
        error=BadRequest,
    ),
    "authentication": ScenarioSpec(
        description="Reject the API key (HTTP 401).", error=AuthenticationFailed
    ),
    "context_length": ScenarioSpec(
        description="Reject the request as longer than the context window.",
        error=ContextLengthExceeded,
    ),
    "broken_stream": ScenarioSpec(
        description="Start answering, then the connection (or the stream) ends mid-answer.",
        error=(ConnectionFailed, MalformedResponse),
    ),
}
"""The scenarios of the suite and what each must produce."""

WEATHER = ToolDefinition(
    name="get_weather",
    description="The weather at a place.",
    parameters={
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
)

_ERRORS: list[Scenario] = [name for name, spec in SCENARIOS.items() if spec.error is not None]
_ANSWERS: list[Scenario] = ["text", "tool_call", "parallel_tool_calls"]


def _request(stream: bool | None, *history: Any) -> ModelRequest:
    messages: list[Any] = [SystemMessage(content="Be brief."), *history]
    if not history:
        messages.append(UserMessage(content="Hello"))
    return ModelRequest(messages=messages, tools=[WEATHER], settings=ModelSettings(stream=stream))


async def _collect(model: Model, request: ModelRequest) -> tuple[list[StreamChunk], ModelResponse]:
    chunks = [chunk async for chunk in model.stream(request)]
    assembler = ResponseAssembler(model.key)
    for chunk in chunks:
        assembler.add(chunk)
    return chunks, assembler.response()


class ModelConformance(ABC):
    """Behaviour every model class must show; subclass as ``Test…``.

    Implement :meth:`make_model` and :meth:`sent`; the tests run with pytest-asyncio
    (``asyncio_mode = "auto"``). A model without reasoning sets ``supports_reasoning =
    False``: it is then checked to accept a history holding another model's reasoning.

    Example::

        class TestMyModel(ModelConformance):
            def make_model(self, *scenarios):
                return MyModel(http_client=mock_client_serving(scenarios))

            def sent(self, model):
                return model.last_body
    """

    supports_reasoning: ClassVar[bool] = True

    @abstractmethod
    def make_model(self, *scenarios: Scenario) -> Model:
        """A model whose calls answer ``scenarios`` in order (see :data:`SCENARIOS`)."""

    @abstractmethod
    def sent(self, model: Model) -> str:
        """What ``model`` sent for its last call, as text (e.g. the JSON request body)."""

    # -- the chunk contract --------------------------------------------------------------

    @pytest.mark.parametrize("stream", [None, False], ids=["streamed", "whole"])
    @pytest.mark.parametrize("scenario", _ANSWERS)
    async def test_the_stream_ends_with_one_finish_chunk(
        self, scenario: Scenario, stream: bool | None
    ) -> None:
        """Every answer ends with exactly one finish chunk; tool chunks are well ordered."""
        chunks, _ = await _collect(self.make_model(scenario), _request(stream))
        finishes = [c for c in chunks if isinstance(c, FinishChunk)]
        assert len(finishes) == 1, f"expected one FinishChunk, got {len(finishes)}"
        assert chunks[-1] is finishes[0], "the FinishChunk must be the last chunk"
        started: set[str] = set()
        ended: set[str] = set()
        for chunk in chunks:
            if isinstance(chunk, ToolCallStartChunk):
                assert chunk.id, "a tool call needs a non-empty id"
                assert chunk.id not in started, f"tool call id {chunk.id!r} reused"
                started.add(chunk.id)
            elif isinstance(chunk, (ToolCallDeltaChunk, ToolCallEndChunk)):
                assert chunk.id in started, f"{chunk.type} before the start of {chunk.id!r}"
                assert chunk.id not in ended, f"{chunk.type} after the end of {chunk.id!r}"
                if isinstance(chunk, ToolCallEndChunk):
                    ended.add(chunk.id)
        assert started == ended, f"tool calls never ended: {sorted(started - ended)}"

    @pytest.mark.parametrize("stream", [None, False], ids=["streamed", "whole"])
    @pytest.mark.parametrize("scenario", _ANSWERS)
    async def test_the_answer_assembles_as_specified(
        self, scenario: Scenario, stream: bool | None
    ) -> None:
        """Text, tool calls (names, JSON arguments, unique ids) and finish reason."""
        spec = SCENARIOS[scenario]
        _, response = await _collect(self.make_model(scenario), _request(stream))
        message = response.message
        assert message.text == spec.text
        calls = [(c.name, json.loads(c.arguments)) for c in message.tool_calls]
        assert calls == list(spec.tool_calls)
        assert len({c.id for c in message.tool_calls}) == len(message.tool_calls)
        assert response.finish_reason == ("tool_calls" if spec.tool_calls else "stop")
        assert not response.incomplete_tool_calls

    @pytest.mark.parametrize("scenario", [*_ANSWERS, "reasoning"])
    async def test_streamed_and_whole_answers_are_the_same(self, scenario: Scenario) -> None:
        """``ModelSettings(stream=False)`` changes how the answer travels, not what it is."""
        if scenario == "reasoning" and not self.supports_reasoning:
            scenario = "text"
        _, streamed = await _collect(self.make_model(scenario), _request(None))
        _, whole = await _collect(self.make_model(scenario), _request(False))
        assert _shape(whole.message) == _shape(streamed.message)
        assert whole.finish_reason == streamed.finish_reason
        assert whole.usage.total_tokens == streamed.usage.total_tokens

    # -- reasoning -----------------------------------------------------------------------

    @pytest.mark.parametrize("stream", [None, False], ids=["streamed", "whole"])
    async def test_reasoning_arrives_as_a_part_with_its_opaque_data(
        self, stream: bool | None
    ) -> None:
        """Reasoning is a part of its own, before the answer, with what the vendor needs back."""
        if not self.supports_reasoning:
            _, response = await _collect(self.make_model("text"), _request(stream))
            assert not any(isinstance(p, ReasoningPart) for p in response.message.parts)
            return
        _, response = await _collect(self.make_model("reasoning"), _request(stream))
        parts = response.message.parts
        assert [p.type for p in parts] == ["reasoning", "text"]
        reasoning = parts[0]
        assert isinstance(reasoning, ReasoningPart)
        assert reasoning.text == SCENARIOS["reasoning"].reasoning
        assert reasoning.signature or reasoning.provider_details, "no opaque reasoning data"
        assert response.message.text == SCENARIOS["reasoning"].text

    async def test_reasoning_round_trips_byte_exact(self) -> None:
        """Reasoning sent back in the history goes on the wire as it came.

        A model without reasoning must accept a history holding another model's reasoning.
        """
        first_scenario: Scenario = "reasoning" if self.supports_reasoning else "text"
        model = self.make_model(first_scenario, "text")
        _, first = await _collect(model, _request(None))
        message = first.message
        if not self.supports_reasoning:  # another model's reasoning in the history
            foreign = ReasoningPart(text="Earlier thought.", signature="sig-from-elsewhere")
            message = AssistantMessage(parts=[foreign, *message.parts])
        reasoning = next(p for p in message.parts if isinstance(p, ReasoningPart))
        history = [UserMessage(content="Hello"), message, UserMessage(content="Thanks")]
        _, second = await _collect(model, _request(None, *history))
        assert second.message.text == SCENARIOS["text"].text
        if not self.supports_reasoning:
            return
        sent = self.sent(model)
        for value in _opaque_strings(reasoning):
            assert value in sent or json.dumps(value)[1:-1] in sent, (
                f"the opaque reasoning value {value[:40]!r} was not sent back"
            )

    # -- usage ---------------------------------------------------------------------------

    async def test_usage_is_reported(self) -> None:
        """Input and output tokens of one call, counted once."""
        _, response = await _collect(self.make_model("text"), _request(None))
        usage = response.usage
        assert usage.prompt_tokens > 0
        assert usage.completion_tokens > 0
        assert usage.requests == 1
        assert usage.unreported_requests == 0
        assert usage.cached_read_tokens + usage.cache_write_tokens <= usage.prompt_tokens

    async def test_missing_usage_reads_as_not_reported(self) -> None:
        """No usage from the server is "not reported", not zero tokens for free."""
        response = await self.make_model("no_usage").request(_request(None))
        assert response.message.text == SCENARIOS["no_usage"].text
        assert (response.usage.requests, response.usage.unreported_requests) == (1, 1)
        assert not response.usage.cost_usd

    # -- errors --------------------------------------------------------------------------

    @pytest.mark.parametrize("stream", [None, False], ids=["streamed", "whole"])
    @pytest.mark.parametrize("scenario", _ERRORS)
    async def test_failures_map_to_the_error_taxonomy(
        self, scenario: Scenario, stream: bool | None
    ) -> None:
        """Failures are :class:`ModelError` subclasses that retry and fallback can read."""
        expected = SCENARIOS[scenario].error
        assert expected is not None
        with pytest.raises(ModelError) as info:
            await _collect(self.make_model(scenario), _request(stream))
        error = info.value
        assert isinstance(error, expected), f"{scenario}: got {type(error).__name__}: {error}"
        if scenario == "rate_limited":
            assert error.retryable
            assert error.retry_after == 7.0
        if scenario in ("bad_request", "authentication", "context_length"):
            assert not error.retryable, f"{scenario} must not be retried"


def _shape(message: AssistantMessage) -> list[tuple[str, str]]:
    """The parts and calls of a message, without ids (they may differ per call)."""
    shape = [(part.type, getattr(part, "text", "")) for part in message.parts]
    shape += [(call.name, call.arguments) for call in message.tool_calls]
    return shape


def _opaque_strings(part: ReasoningPart) -> Sequence[str]:
    values: list[str] = [part.signature] if part.signature else []
    details = part.provider_details or {}
    values += [v for v in details.values() if isinstance(v, str) and len(v) >= 8]
    return values
