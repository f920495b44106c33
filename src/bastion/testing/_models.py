"""Scripted test models: ``ScriptedModel`` (a list of turns) and ``FunctionModel``.

Both stream like a real provider: they yield to the event loop once per request and once
per streamed delta (as network I/O would), so tests exercise real interleavings. Asked for
a whole answer (``ModelSettings(stream=False)``) they behave like a non-streaming call:
one yield to the loop, then the answer as few chunks as it takes (one text, one reasoning
block, one delta per tool call), and a failing turn fails before any chunk.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from bastion.core import (
    FinishChunk,
    FinishReason,
    Model,
    ModelError,
    ModelRequest,
    OutputMode,
    ReasoningChunk,
    ScriptExhausted,
    StreamChunk,
    TextChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    Usage,
    UserError,
)

__all__ = ["Call", "FunctionModel", "ScriptedModel", "Turn", "TurnLike"]

_WORD = re.compile(r"\s*\S+\s*|\s+")


class Call:
    """A scripted tool call. ``args`` as a dict, or a raw string (e.g. malformed JSON).

    Attributes:
        arguments: The arguments as the JSON text the model sends.
    """

    __slots__ = ("args", "arguments", "id", "name")

    def __init__(
        self, name: str, args: dict[str, Any] | str | None = None, *, id: str | None = None
    ) -> None:
        if not isinstance(name, str) or not name:
            raise UserError(f"Call needs a non-empty tool name, got {name!r}.")
        if args is not None and not isinstance(args, (dict, str)):
            raise UserError(f"Call({name!r}) args must be a dict or a JSON string, got {args!r}.")
        self.name = name
        self.args: dict[str, Any] | str = {} if args is None else args
        self.id = id
        try:
            self.arguments = self.args if isinstance(self.args, str) else json.dumps(self.args)
        except (TypeError, ValueError) as exc:
            raise UserError(f"Call({name!r}) args are not JSON-serialisable: {exc}.") from exc

    def __repr__(self) -> str:
        return f"Call({self.name!r}, {self.args!r}, id={self.id!r})"


@dataclass(kw_only=True, slots=True)
class Turn:
    """One scripted model answer.

    Attributes:
        text: The answer; a string is streamed word by word, a list of strings as exactly
            those deltas.
        tool_calls: Tool calls to ask for, in order.
        reasoning: Reasoning text to stream before the answer.
        reasoning_signature: Opaque signature attached to the reasoning.
        usage: Reported usage (default: an estimate of four characters per token).
        finish_reason: Reported finish reason (default: ``tool_calls`` or ``stop``).
        error: Raise this instead of answering (after ``error_after`` chunks).
        error_after: How many chunks to stream before raising ``error``.
        unclosed_calls: Leave the tool calls open (no end chunk): an incomplete stream.
    """

    text: str | Sequence[str] = ""
    tool_calls: Sequence[Call] = ()
    reasoning: str | None = None
    reasoning_signature: str | None = None
    usage: Usage | None = None
    finish_reason: FinishReason | None = None
    error: ModelError | None = None
    error_after: int = 0
    unclosed_calls: bool = False


TurnLike: TypeAlias = Turn | str


def _as_turn(item: object, index: int) -> Turn:
    """The turn ``item`` stands for; UserError naming the turn when it is malformed."""
    where = f"ScriptedModel turn {index}"
    if isinstance(item, str):
        return Turn(text=item)
    if not isinstance(item, Turn):
        is_list = type(item) is list
        hint = " (wrap tool calls as Turn(tool_calls=[...]))" if is_list else ""
        shown = repr(item)
        raise UserError(
            f"{where} is {type(item).__name__} {shown}{hint}; each turn must be a string "
            "(the answer text) or a Turn."
        )
    _check_turn(item, where)
    return item


def _check_turn(turn: Turn, where: str) -> None:
    text: object = turn.text
    if not isinstance(text, str) and (
        not isinstance(text, Sequence) or not all(isinstance(d, str) for d in text)
    ):
        raise UserError(f"{where}: text must be a string or a list of strings, got {text!r}.")
    calls: object = turn.tool_calls
    if isinstance(calls, (str, Call)) or not isinstance(calls, Sequence):
        raise UserError(f"{where}: tool_calls must be a list of Call, got {calls!r}.")
    for call in calls:
        if not isinstance(call, Call):
            raise UserError(f"{where}: tool_calls holds {call!r}; use Call(name, args).")
        if not isinstance(call.name, str) or not call.name:
            raise UserError(f"{where}: a Call needs a non-empty tool name, got {call.name!r}.")
    usage: object = turn.usage
    if usage is not None and not isinstance(usage, Usage):
        raise UserError(f"{where}: usage must be a Usage, got {usage!r}.")
    error: object = turn.error
    if error is not None and not isinstance(error, ModelError):
        raise UserError(f"{where}: error must be a ModelError, got {error!r}.")
    if turn.error_after < 0:
        raise UserError(f"{where}: error_after must be >= 0, got {turn.error_after!r}.")


def _estimate_usage(request: ModelRequest, turn: Turn, text: str) -> Usage:
    """A deterministic, O(1) estimate: 8 tokens per earlier message, 4 characters per token.

    Cheap on purpose (benchmarks run it on every request); scripts that need exact
    figures pass ``Turn(usage=...)``.
    """
    messages = request.messages
    last = getattr(messages[-1], "content", "") if messages else ""
    last_chars = len(last) if isinstance(last, str) else 64
    completion = len(text) + sum(len(c.arguments) for c in turn.tool_calls)
    return Usage(
        prompt_tokens=8 * (len(messages) - 1) + max(1, last_chars // 4),
        completion_tokens=max(1, completion // 4),
        requests=1,
    )


def _turn_chunks(turn: Turn, request: ModelRequest, request_index: int) -> list[StreamChunk]:
    """The chunks a scripted turn streams (the error, if any, is raised after them)."""
    deltas = _WORD.findall(turn.text) if isinstance(turn.text, str) else list(turn.text)
    chunks: list[StreamChunk] = []
    if turn.reasoning is not None:
        chunks.extend(ReasoningChunk(text=d) for d in _WORD.findall(turn.reasoning))
        if turn.reasoning_signature is not None:
            chunks.append(ReasoningChunk(signature=turn.reasoning_signature))
    chunks.extend(TextChunk(text=d) for d in deltas)
    for i, call in enumerate(turn.tool_calls):
        call_id = call.id or f"call_{request_index}_{i}"
        chunks.append(ToolCallStartChunk(id=call_id, name=call.name))
        chunks.append(ToolCallDeltaChunk(id=call_id, arguments_delta=call.arguments))
        if not turn.unclosed_calls:
            chunks.append(ToolCallEndChunk(id=call_id))
    if turn.error is not None:
        return chunks[: turn.error_after]
    text = "".join(deltas)
    usage = turn.usage if turn.usage is not None else _estimate_usage(request, turn, text)
    finish = turn.finish_reason or ("tool_calls" if turn.tool_calls else "stop")
    chunks.append(FinishChunk(finish_reason=finish, usage=usage))
    return chunks


def _whole(chunks: Sequence[StreamChunk]) -> list[StreamChunk]:
    """The chunks of a non-streamed answer: runs of text, reasoning and arguments joined."""
    whole: list[StreamChunk] = []
    for chunk in chunks:
        last = whole[-1] if whole else None
        if isinstance(chunk, TextChunk) and isinstance(last, TextChunk):
            whole[-1] = TextChunk(text=last.text + chunk.text)
        elif (
            isinstance(chunk, ReasoningChunk)
            and isinstance(last, ReasoningChunk)
            and not (last.redacted or chunk.redacted)
            and not (last.signature and chunk.text)
        ):
            whole[-1] = ReasoningChunk(
                text=last.text + chunk.text,
                signature=chunk.signature if chunk.signature is not None else last.signature,
                provider_details={**(last.provider_details or {}), **(chunk.provider_details or {})}
                or None,
            )
        elif (
            isinstance(chunk, ToolCallDeltaChunk)
            and isinstance(last, ToolCallDeltaChunk)
            and last.id == chunk.id
        ):
            whole[-1] = ToolCallDeltaChunk(
                id=chunk.id, arguments_delta=last.arguments_delta + chunk.arguments_delta
            )
        else:
            whole.append(chunk)
    return whole


def _whole_answer(turn: Turn, chunks: Sequence[StreamChunk]) -> list[StreamChunk]:
    """A turn answered without streaming: its error before any chunk, else ``_whole``."""
    if turn.error is not None:
        raise turn.error
    return _whole(chunks)


class _TestModel(Model):
    """What both test models share: counting, recording and yielding on each request."""

    def __init__(
        self,
        *,
        name: str,
        provider: str,
        yield_to_loop: bool,
        record_requests: bool,
        output_mode: OutputMode = "native",
    ) -> None:
        if output_mode not in ("native", "prompted", "tool"):
            raise UserError(
                f"output_mode must be 'native', 'prompted' or 'tool', got {output_mode!r}."
            )
        self.name = name
        self.provider = provider
        self.output_mode = output_mode
        self._yield = yield_to_loop
        self._record = record_requests
        self._count = 0
        self.requests: list[ModelRequest] = []

    async def _receive(self, request: ModelRequest) -> int:
        """Count (and record) a request, yield to the loop as I/O would; its 0-based index."""
        index = self._count
        self._count += 1
        if self._record:
            self.requests.append(request)
        if self._yield:
            await asyncio.sleep(0)
        return index


class ScriptedModel(_TestModel):
    """A model that answers from a script, one turn per request.

    Example::

        model = ScriptedModel([
            Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]),
            "The answer is 3.",
        ])

    Attributes:
        requests: Every request received, for assertions (unless ``record_requests`` is
            False, as benchmarks and long-running tests want: it grows with every call).
        output_mode: The structured-output mode the model prefers (``output_mode=``), as a
            provider profile would set it.
    """

    def __init__(
        self,
        script: Sequence[TurnLike],
        *,
        name: str = "scripted",
        provider: str = "test",
        yield_to_loop: bool = True,
        record_requests: bool = True,
        output_mode: OutputMode = "native",
    ) -> None:
        super().__init__(
            name=name,
            provider=provider,
            yield_to_loop=yield_to_loop,
            record_requests=record_requests,
            output_mode=output_mode,
        )
        if isinstance(script, (str, Turn)) or not isinstance(script, Sequence):
            raise UserError(
                f"ScriptedModel takes a list of turns (strings or Turn), got {script!r}."
            )
        self._script = [_as_turn(t, i) for i, t in enumerate(script)]

    @property
    def remaining(self) -> int:
        """Turns not yet used."""
        return len(self._script) - self._count

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """Answer ``request`` with the next scripted turn."""
        index = await self._receive(request)
        if index >= len(self._script):
            raise ScriptExhausted(
                f"{self.key} was asked for turn {index + 1} but its script has "
                f"{len(self._script)} turn(s). Add turns or check why the loop kept going."
            )
        turn = self._script[index]
        chunks = _turn_chunks(turn, request, index)
        if request.settings.stream is False:
            for chunk in _whole_answer(turn, chunks):
                yield chunk
            return
        for chunk in chunks:
            if self._yield and chunk.type != "finish":
                await asyncio.sleep(0)
            yield chunk
        if turn.error is not None:
            raise turn.error


TurnFunction: TypeAlias = Callable[[ModelRequest], "TurnLike | Awaitable[TurnLike]"]
StreamFunction: TypeAlias = Callable[[ModelRequest], AsyncIterator["str | StreamChunk"]]


class FunctionModel(_TestModel):
    """A model whose answers a function computes from each request.

    Give ``function`` (returns a :class:`Turn` or a string, sync or async) or
    ``stream_function`` (an async generator of text deltas or raw stream chunks).

    Attributes:
        requests: Every request received (unless ``record_requests`` is False).
    """

    def __init__(
        self,
        function: TurnFunction | None = None,
        *,
        stream_function: StreamFunction | None = None,
        name: str = "function",
        provider: str = "test",
        yield_to_loop: bool = True,
        record_requests: bool = True,
        output_mode: OutputMode = "native",
    ) -> None:
        if (function is None) == (stream_function is None):
            raise UserError("FunctionModel needs exactly one of function or stream_function.")
        super().__init__(
            name=name,
            provider=provider,
            yield_to_loop=yield_to_loop,
            record_requests=record_requests,
            output_mode=output_mode,
        )
        self._function = function
        self._stream_function = stream_function

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """Answer ``request`` with what the function returns."""
        index = await self._receive(request)
        if self._function is not None:
            result = self._function(request)
            if inspect.isawaitable(result):
                result = await result
            turn = _as_turn(result, index)
            chunks = _turn_chunks(turn, request, index)
            if request.settings.stream is False:
                for chunk in _whole_answer(turn, chunks):
                    yield chunk
                return
            if not self._yield:
                for chunk in chunks:
                    yield chunk
            else:
                for chunk in chunks:
                    if chunk.type != "finish":
                        await asyncio.sleep(0)
                    yield chunk
            if turn.error is not None:
                raise turn.error
            return
        assert self._stream_function is not None
        if request.settings.stream is False:
            items = [
                TextChunk(text=item) if isinstance(item, str) else item
                async for item in self._stream_function(request)
            ]
            if not any(isinstance(c, FinishChunk) for c in items):
                items.append(FinishChunk(finish_reason="stop", usage=Usage(requests=1)))
            for chunk in _whole(items):
                yield chunk
            return
        finished = False
        async for item in self._stream_function(request):
            if self._yield:
                await asyncio.sleep(0)
            if isinstance(item, str):
                yield TextChunk(text=item)
            else:
                finished = finished or isinstance(item, FinishChunk)
                yield item
        if not finished:
            yield FinishChunk(finish_reason="stop", usage=Usage(requests=1))
