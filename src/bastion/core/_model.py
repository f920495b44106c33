"""The model protocol: what the loop sends to a model and the chunks a model streams back.

A model implements one call, :meth:`Model.stream`; :meth:`Model.request` drains it. Provider
adapters (``bastion.providers``) and test doubles (``bastion.testing``) implement it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._errors import UserError
from ._messages import AssistantMessage, AssistantPart, Message, ReasoningPart, TextPart, ToolCall
from ._usage import Usage

__all__ = [
    "FinishChunk",
    "FinishReason",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputMode",
    "OutputSpec",
    "ReasoningChunk",
    "ReasoningConfig",
    "ReasoningEffort",
    "ResponseAssembler",
    "StreamChunk",
    "TextChunk",
    "ToolCallDeltaChunk",
    "ToolCallEndChunk",
    "ToolCallStartChunk",
    "ToolDefinition",
]

FinishReason: TypeAlias = Literal[
    "stop", "length", "tool_calls", "content_filter", "error", "aborted"
]


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolDefinition:
    """A tool as advertised to the model: name, description and JSON Schema of arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False


OutputMode: TypeAlias = Literal["native", "prompted", "tool"]
"""How a structured answer is asked for: the vendor's JSON-schema mode (``native``), JSON
mode with the schema in the prompt (``prompted``), or a final-answer tool (``tool``)."""


@dataclass(kw_only=True, slots=True, frozen=True)
class OutputSpec:
    """A structured-output request, read by the adapter.

    ``mode="native"``: send the schema in the vendor's JSON-schema response mode.
    ``mode="prompted"``: the schema is already in the system prompt; ask only for a JSON
    object (the vendor's JSON mode where it has one, else nothing) and never force a tool.
    (The ``tool`` mode never reaches adapters: it is an ordinary tool of the request.)
    """

    name: str
    json_schema: dict[str, Any]
    strict: bool = True
    mode: Literal["native", "prompted"] = "native"


ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
"""How hard a model should think before it answers; ``none`` turns thinking off."""

REASONING_EFFORTS: tuple[ReasoningEffort, ...] = (
    "none",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "max",
)


@dataclass(kw_only=True, slots=True, frozen=True)
class ReasoningConfig:
    """How much a reasoning model thinks, said once for every protocol.

    ``effort`` is a level (``none`` turns thinking off where a vendor allows it);
    ``budget_tokens`` caps the thinking tokens. Each adapter sends them in its vendor's own
    fields; a setting its protocol cannot express raises :class:`UserError` naming it
    before anything is sent.
    """

    effort: ReasoningEffort | None = None
    budget_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.effort is None and self.budget_tokens is None:
            raise UserError("ReasoningConfig needs an effort, a budget_tokens, or both.")
        if self.effort is not None and self.effort not in REASONING_EFFORTS:
            raise UserError(
                f"ReasoningConfig.effort must be one of {', '.join(REASONING_EFFORTS)}; "
                f"got {self.effort!r}."
            )
        budget = self.budget_tokens
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0  # pyright: ignore[reportUnnecessaryIsInstance]
        ):
            raise UserError(
                f"ReasoningConfig.budget_tokens must be a positive integer, got {budget!r}."
            )


@dataclass(kw_only=True, slots=True, frozen=True)
class ModelSettings:
    """Sampling and call settings; ``None`` leaves the vendor default.

    ``timeout`` bounds connecting and each read, in seconds. ``stream=False`` asks the adapter
    for one whole response instead of a stream (the chunks it yields are the same either way).
    ``reasoning`` sets how much a reasoning model thinks (:class:`ReasoningConfig`).
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None
    tool_choice: Literal["auto", "required", "none"] | str | None = None
    parallel_tool_calls: bool | None = None
    timeout: float | None = None
    stream: bool | None = None
    reasoning: ReasoningConfig | None = None
    extra: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            raise UserError(
                f"ModelSettings.timeout must be a positive number of seconds, got {timeout!r}."
            )
        choice = self.tool_choice
        if choice is not None and (not isinstance(choice, str) or not choice.strip()):
            raise UserError(
                "ModelSettings.tool_choice must be 'auto', 'required', 'none' or a tool name, "
                f"got {choice!r}."
            )


@dataclass(kw_only=True, slots=True)
class ModelRequest:
    """Everything one model call needs."""

    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    output: OutputSpec | None = None
    settings: ModelSettings = field(default_factory=ModelSettings)


@dataclass(kw_only=True, slots=True)
class TextChunk:
    """A piece of answer text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(kw_only=True, slots=True)
class ReasoningChunk:
    """A piece of reasoning; ``signature``/``provider_details`` arrive on any chunk of the block.

    ``redacted`` marks a block the vendor encrypted (no text; its opaque data is in
    ``provider_details``): it always becomes a reasoning part of its own.
    """

    text: str = ""
    signature: str | None = None
    redacted: bool = False
    provider_details: dict[str, Any] | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(kw_only=True, slots=True)
class ToolCallStartChunk:
    """A tool call begins. ``id`` keys the deltas and the end of this call."""

    id: str
    name: str
    type: Literal["tool_call_start"] = "tool_call_start"


@dataclass(kw_only=True, slots=True)
class ToolCallDeltaChunk:
    """A piece of a tool call's JSON arguments."""

    id: str
    arguments_delta: str
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(kw_only=True, slots=True)
class ToolCallEndChunk:
    """A tool call's arguments are complete."""

    id: str
    provider_details: dict[str, Any] | None = None
    type: Literal["tool_call_end"] = "tool_call_end"


@dataclass(kw_only=True, slots=True)
class FinishChunk:
    """The last chunk of a response: why it stopped and what it cost."""

    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    provider_details: dict[str, Any] | None = None
    type: Literal["finish"] = "finish"


StreamChunk: TypeAlias = (
    TextChunk
    | ReasoningChunk
    | ToolCallStartChunk
    | ToolCallDeltaChunk
    | ToolCallEndChunk
    | FinishChunk
)


@dataclass(kw_only=True, slots=True)
class ModelResponse:
    """A complete model answer, assembled from its chunks."""

    message: AssistantMessage
    usage: Usage
    finish_reason: FinishReason
    model: str
    incomplete_tool_calls: list[ToolCall] = field(default_factory=list)


class ResponseAssembler:
    """Folds stream chunks into a :class:`ModelResponse`.

    Consecutive text chunks join into one text part, consecutive reasoning chunks into one
    reasoning part unless they carry different item ids (``provider_details["id"]``: a vendor
    whose reasoning comes in separate items, each sent back on its own); tool calls are
    keyed by id so interleaved calls assemble correctly. Empty deltas are ignored, so how a
    server splits its answer never changes the result.
    """

    __slots__ = (
        "_calls",
        "_ended",
        "_parts",
        "finish_reason",
        "model",
        "provider_details",
        "usage",
    )

    def __init__(self, model: str) -> None:
        self.model = model
        self._parts: list[AssistantPart] = []
        self._calls: dict[str, ToolCall] = {}
        self._ended: set[str] = set()
        self.usage = Usage()
        self.finish_reason: FinishReason | None = None
        self.provider_details: dict[str, Any] | None = None

    def add(self, chunk: StreamChunk) -> None:
        """Fold one chunk in."""
        parts = self._parts
        if chunk.type == "text":
            text = chunk.text
            if not text:  # servers send empty deltas; they must not split or add a part
                return
            last = parts[-1] if parts else None
            if isinstance(last, TextPart):
                last.text += text
            else:
                parts.append(TextPart(text=text))
        elif chunk.type == "reasoning":
            if not (chunk.text or chunk.signature or chunk.redacted or chunk.provider_details):
                return
            last = parts[-1] if parts else None
            details = chunk.provider_details
            if (
                not isinstance(last, ReasoningPart)
                or last.redacted
                or chunk.redacted
                or (last.signature and chunk.text)
                or (details is not None and _other_item(last, details))
            ):
                last = ReasoningPart(redacted=chunk.redacted)
                parts.append(last)
            last.text += chunk.text
            if chunk.signature is not None:
                last.signature = chunk.signature
            if chunk.provider_details:
                last.provider_details = {**(last.provider_details or {}), **chunk.provider_details}
        elif chunk.type == "tool_call_start":
            self._calls[chunk.id] = ToolCall(id=chunk.id, name=chunk.name, arguments="")
        elif chunk.type == "tool_call_delta":
            call = self._calls.get(chunk.id)
            if call is not None:
                call.arguments += chunk.arguments_delta
        elif chunk.type == "tool_call_end":
            call = self._calls.get(chunk.id)
            if call is not None:
                self._ended.add(chunk.id)
                if chunk.provider_details:
                    call.provider_details = chunk.provider_details
        else:
            self.finish_reason = chunk.finish_reason
            self.usage = chunk.usage
            self.provider_details = chunk.provider_details

    def arguments_of(self, call_id: str) -> str:
        """The arguments assembled so far for a tool call."""
        call = self._calls.get(call_id)
        return call.arguments if call is not None else ""

    def response(self) -> ModelResponse:
        """Return the assembled response; unended tool calls are reported as incomplete."""
        calls = self._calls
        if not calls:
            complete: list[ToolCall] = []
            incomplete: list[ToolCall] = []
        elif len(self._ended) == len(calls):
            complete, incomplete = list(calls.values()), []
        else:
            ended = self._ended
            complete = [c for i, c in calls.items() if i in ended]
            incomplete = [c for i, c in calls.items() if i not in ended]
        for call in complete:
            if not call.arguments or call.arguments.isspace():
                call.arguments = "{}"
        finish = self.finish_reason or "stop"
        if complete and finish == "stop":
            finish = "tool_calls"
        usage = self.usage
        if usage.requests == 0:
            # A finish chunk without usage (a server, or a custom model, that reports none)
            # counts as one call whose usage is unknown, not as a free one.
            unreported = 1 if usage.is_empty() else 0
            usage = usage + Usage(requests=1, unreported_requests=unreported)
        return ModelResponse(
            message=AssistantMessage(
                parts=self._parts,
                tool_calls=complete,
                model=self.model,
                provider_details=self.provider_details,
            ),
            usage=usage,
            finish_reason=finish,
            model=self.model,
            incomplete_tool_calls=incomplete,
        )


def _other_item(part: ReasoningPart, details: dict[str, Any]) -> bool:
    """Whether ``details`` name a reasoning item other than the one ``part`` holds."""
    item = details.get("id")
    held = part.provider_details.get("id") if part.provider_details else None
    return item is not None and held is not None and item != held


class Model(ABC):
    """A language model reachable through one wire protocol.

    Subclasses implement :meth:`stream`. ``provider`` and ``name`` form the model's key
    ``"<provider>:<name>"``, used for usage attribution and as the governance oracle key
    ``llm:<provider>:<name>``. ``accepts_sensitivity`` lists the data tiers the provider
    may receive; by default every tier.

    ``stream`` must honour ``request.settings.stream``: when it is ``False``, make one
    non-streaming call and yield the whole answer as chunks (the same kinds, in the same
    order, just fewer of them). Failures are raised as :class:`~bastion.core.ModelError`
    subclasses so retry and fallback can decide on them; ``docs/custom-models.md`` walks
    through writing one, and ``bastion.testing.ModelConformance`` checks it.
    """

    provider: str = "unknown"
    name: str = "unknown"
    accepts_sensitivity: tuple[str, ...] = ("public", "internal", "secret")
    context_window: int | None = None
    """The tokens one request and its answer may hold together, when known."""
    tokenizer: str | None = None
    """The offline encoding that counts this model's tokens (``None``: not public)."""
    output_mode: OutputMode = "native"
    """The structured-output mode that works best with this model (agents may override)."""
    _key_cache: tuple[str, str, str] | None = None

    @property
    def key(self) -> str:
        """``"<provider>:<name>"``."""
        # Read for nearly every event; cached, and rebuilt if provider or name is reassigned.
        cached = self._key_cache
        if cached is None or cached[0] is not self.provider or cached[1] is not self.name:
            cached = (self.provider, self.name, f"{self.provider}:{self.name}")
            self._key_cache = cached
        return cached[2]

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """Send ``request`` and stream the answer as chunks, ending with a :class:`FinishChunk`.

        Raises:
            ModelError: A subclass describing why the call failed.
        """

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the whole answer."""
        assembler = ResponseAssembler(self.key)
        async for chunk in self.stream(request):
            assembler.add(chunk)
        return assembler.response()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r})"
