"""``ReplayModel``: a recorded run's model answers, streamed again without calling a model.

A run of an agent made with ``ModelOptions(record_responses=True)`` keeps every answer in
its journal as the provider streamed it (the ``chunks`` of each ``model_response`` entry).
A replay model built from that journal answers the same agent's next run with those
chunks, in order, so the run gives the same events, the same tool calls and the same
output, and no provider is called. Tools run again unless the agent uses
:meth:`ReplayModel.recorded_results` as its first ``ToolOptions.before_call`` hook, which
answers every call with its recorded result.

Each answer is checked against what it was recorded for: the messages the recorded call
answered (the user's input, then the tool results and any message the loop added). When
the agent now asks something else (a tool returned another result, the input changed, or
the run makes more model calls than were recorded) the call fails with
:class:`ReplayDiverged`, naming the step.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from bastion.core import (
    AssistantMessage,
    JsonObject,
    JsonValue,
    Message,
    Model,
    ModelRequest,
    ScriptExhausted,
    StreamChunk,
    SystemMessage,
    ToolMessage,
    UserError,
    UserMessage,
    messages_adapter,
    stream_chunks_adapter,
)
from bastion.stores import EntryKind, JournalEntry, Stores
from bastion.tools import Mock, ToolCallRequest

if TYPE_CHECKING:
    from bastion.agent import Agent, AgentStream
    from bastion.agent._result import OutputT

__all__ = ["RecordedCall", "ReplayDiverged", "ReplayModel"]

Asked: TypeAlias = tuple[tuple[str, str, str], ...]
"""What a model call answered: ``(role, tool_call_id, text)`` of each user or tool message
after the previous answer, sorted."""


class ReplayDiverged(ScriptExhausted):
    """The replayed run asked the model something its recording does not hold."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedCall:
    """One recorded model call.

    Attributes:
        step: The run's step the call was made in.
        model: The model that answered (``"<provider>:<name>"``).
        chunks: The answer, chunk by chunk, as the provider streamed it.
        asked: The user and tool messages the call answered (see :data:`Asked`).
    """

    step: int
    model: str
    chunks: tuple[StreamChunk, ...]
    asked: Asked


class ReplayModel(Model):
    """A model that streams a recorded run's answers again, in order.

    Build it with :meth:`from_run` (or :meth:`from_entries`) and run the same agent on it
    with :meth:`rerun` (the recorded input, history and metadata), or yourself::

        replay = await ReplayModel.from_run(store, result.run_id)
        again = await replay.rerun(agent).drain()
        same = await agent.with_model(replay).run(replay.input)  # the same, by hand

    One replay model serves one run at a time; a run that needs more answers than were
    recorded fails with :class:`ReplayDiverged`.

    Attributes:
        run_id: The recorded run.
        calls: The recorded model calls, in order.
        input: The recorded run's input (the text of its last user message).
        opening: The messages the recorded run started from (system prompt, history,
            input).
        metadata: The recorded run's metadata.
        results: The recorded tool results, by tool call id.
    """

    provider = "replay"

    def __init__(
        self,
        run_id: str,
        calls: Sequence[RecordedCall],
        *,
        opening: Sequence[Message] = (),
        metadata: Mapping[str, object] | None = None,
        results: Mapping[str, str] | None = None,
    ) -> None:
        self.run_id = run_id
        self.calls = tuple(calls)
        self.opening = tuple(opening)
        users = [m for m in self.opening if isinstance(m, UserMessage)]
        self.input = _text(users[-1]) if users else ""
        self.metadata = dict(metadata or {})
        self.results = dict(results or {})
        self._next = 0
        self._show(0)

    @property
    def remaining(self) -> int:
        """How many recorded answers have not been replayed yet."""
        return len(self.calls) - self._next

    @classmethod
    async def from_run(cls, stores: Stores, run_id: str) -> ReplayModel:
        """The recording of ``run_id`` in ``stores`` (opened by the caller).

        Raises:
            UserError: The store has no journal for the run, or the run was not recorded.
        """
        return cls.from_entries(run_id, await stores.journal.read(run_id))

    @classmethod
    def from_entries(cls, run_id: str, entries: Sequence[JournalEntry]) -> ReplayModel:
        """The recording in a run's journal entries (``stores.journal.read(run_id)``).

        Raises:
            UserError: There are no entries, or the run was not recorded.
        """
        if not entries:
            raise UserError(
                f"No journal for run {run_id!r}: replay needs the run's journal, written by "
                "an agent with a store and ModelOptions(record_responses=True)."
            )
        return _Reader(run_id).read(entries)

    @classmethod
    def from_export(cls, path: str | os.PathLike[str], run_id: str | None = None) -> ReplayModel:
        """The recording in a file written by ``bastion runs export RUN_ID > file``.

        A recorded run kept as a test fixture replays without the store it ran on.
        ``run_id`` picks one run of a file that holds several.

        Raises:
            UserError: The file cannot be read, is not an export, holds no such run (or
                several runs and no ``run_id``), or the run was not recorded.
        """
        lines = _export_lines(Path(path))
        ids = sorted({str(line.get("run_id")) for line in lines})
        if run_id is None:
            if len(ids) != 1:
                raise UserError(f"{path} holds the runs {ids}: pass run_id= to pick one.")
            run_id = ids[0]
        entries = [_entry(line) for line in lines if line.get("run_id") == run_id]
        return cls.from_entries(run_id, entries)

    def _show(self, index: int) -> None:
        """Name the model after the recorded call ``index`` (``step.start`` shows it)."""
        if index < len(self.calls):
            provider, _, name = self.calls[index].model.partition(":")
            self.provider, self.name = provider, name

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """The next recorded answer, once the request is checked against its recording.

        Raises:
            ReplayDiverged: The run made more model calls than were recorded, or this call
                answers other messages than the recorded one did.
        """
        index = self._next
        calls = self.calls
        if index >= len(calls):
            last = calls[-1].step if calls else 0
            raise ReplayDiverged(
                f"Replay of run {self.run_id} diverged after step {last}: the agent made "
                f"model call {index + 1}, but the recording holds {len(calls)}."
            )
        recorded = calls[index]
        asked = asked_in(request.messages)
        if asked != recorded.asked:
            raise ReplayDiverged(
                f"Replay of run {self.run_id} diverged at step {recorded.step} (model call "
                f"{index + 1}): the recording answered {_show_asked(recorded.asked)}, the "
                f"agent now asks with {_show_asked(asked)}."
            )
        self._next = index + 1
        for chunk in recorded.chunks:
            yield chunk
        self._show(index + 1)

    def rerun(
        self, agent: Agent[Any, OutputT], *, recorded_results: bool = False, deps: Any = None
    ) -> AgentStream[OutputT]:
        """A run of ``agent`` on this recording: the recorded input, history and metadata.

        ``recorded_results=True``: tools do not run; each call gets its recorded result
        (see :meth:`recorded_results`).

        Raises:
            UserError: The recorded run did not start from a user message.
        """
        opening = [m for m in self.opening if not isinstance(m, SystemMessage)]
        if not opening or not isinstance(opening[-1], UserMessage):
            raise UserError(
                f"Run {self.run_id} did not start from a user message: run the agent on the "
                "replay model yourself, agent.with_model(replay).run(...)."
            )
        replaying = agent.with_model(self)
        config = replaying.config
        if recorded_results:
            executor = config.executor
            gate = executor.gate.with_first_hook(self.recorded_results)
            config = replace(config, executor=executor.with_gate(gate))
        return replaying.stream(
            opening[-1].content,
            message_history=opening[:-1],
            metadata=self.metadata,
            deps=deps,
            config=config,
        )

    def recorded_results(self, request: ToolCallRequest) -> Mock | None:
        """A ``before_tool_call`` hook: each call gets its recorded result, the tool never runs.

        A call the recording does not hold is left to the agent's other hooks (and runs).
        """
        result = self.results.get(request.call.id)
        return None if result is None else Mock(result)


class _Reader:
    """Reads a journal's recorded calls, in order."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.calls: list[RecordedCall] = []
        self.results: dict[str, str] = {}
        self.asked: list[tuple[str, str, str]] = []
        self.opening: list[Message] = []
        self.metadata: Mapping[str, JsonValue] = {}
        self.answers = 0

    def read(self, entries: Sequence[JournalEntry]) -> ReplayModel:
        for entry in entries:
            payload = entry.payload
            if entry.kind == "run_started":
                self._started(payload)
            elif entry.kind == "tool_result":
                content = str(payload["content"])
                self.results[str(payload["tool_call_id"])] = content
                self.asked.append(("tool", str(payload["tool_call_id"]), content))
            elif entry.kind == "model_response":
                self._answer(payload)
            elif entry.kind == "compaction":
                raise UserError(
                    f"Run {self.run_id} compacted its context (journal entry {entry.seq}): "
                    "its summary was not recorded, so the run cannot be replayed."
                )
        if self.answers and not self.calls:
            raise UserError(
                f"Run {self.run_id} was not recorded: its journal keeps the assembled answers "
                "only, not the provider responses a replay streams. Run it on an agent made "
                "with ModelOptions(record_responses=True) to record it."
            )
        return ReplayModel(
            self.run_id,
            self.calls,
            opening=self.opening,
            metadata=self.metadata,
            results=self.results,
        )

    def _started(self, payload: JsonObject) -> None:
        state = _object(payload["state"], "The run_started entry's state")
        if self.opening:
            return  # a state kept by the caller, resumed: the run opened before
        self.opening = messages_adapter().validate_python(state.get("messages", []))
        self.metadata = _object(state.get("metadata") or {}, "The recorded run's metadata")
        self.asked = list(asked_in(self.opening))

    def _answer(self, payload: JsonObject) -> None:
        self.answers += 1
        if "inserted" in payload:
            inserted = messages_adapter().validate_python(payload["inserted"])
            self.asked.extend(_fingerprint(m) for m in inserted if _asks(m))
        chunks = payload.get("chunks")
        if chunks is None:  # not a provider's answer (or not recorded): nothing to replay
            self.asked = []
            return
        self.calls.append(
            RecordedCall(
                step=_int(payload["step"]),
                model=str(payload["model"]),
                chunks=tuple(stream_chunks_adapter().validate_python(chunks)),
                asked=tuple(sorted(self.asked)),
            )
        )
        self.asked = []


def _export_lines(path: Path) -> list[JsonObject]:
    """The JSON objects of an export file, one a line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"Cannot read the run export {str(path)!r}: {exc}.") from exc
    lines: list[JsonObject] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise UserError(f"{path}:{number} is not JSON ({exc}): not a run export.") from exc
        if not isinstance(value, dict) or not {"kind", "payload", "seq"} <= value.keys():
            raise UserError(
                f"{path}:{number} is not a journal entry: write the file with "
                "'bastion runs export RUN_ID'."
            )
        lines.append(cast("JsonObject", value))
    return lines


def _entry(line: JsonObject) -> JournalEntry:
    recorded = line.get("recorded_at")
    return JournalEntry(
        seq=_int(line["seq"]),
        kind=cast("EntryKind", line["kind"]),
        payload=dict(_object(line["payload"], f"The payload of entry {line['seq']}")),
        schema_version=_int(line.get("schema_version", 1)),
        recorded_at=datetime.fromisoformat(str(recorded)) if recorded else datetime.now(UTC),
    )


def _int(value: JsonValue) -> int:
    """``value`` as an int, as ``int()`` reads a number or its text; UserError otherwise."""
    if not isinstance(value, (int, float, str)):
        raise UserError(f"Expected a number in the recording, got {type(value).__name__}.")
    return int(value)


def _object(value: JsonValue, what: str) -> Mapping[str, JsonValue]:
    """``value`` as a JSON object; UserError when it is another JSON value."""
    if not isinstance(value, Mapping):
        raise UserError(f"{what} is {type(value).__name__}, not a JSON object.")
    return value


def asked_in(messages: Sequence[Message]) -> Asked:
    """What a request asks: its user and tool messages after the last answer, sorted."""
    start = len(messages)
    while start > 0 and not isinstance(messages[start - 1], AssistantMessage):
        start -= 1
    return tuple(sorted(_fingerprint(m) for m in messages[start:] if _asks(m)))


def _asks(message: Message) -> bool:
    return isinstance(message, (UserMessage, ToolMessage))


def _fingerprint(message: Message) -> tuple[str, str, str]:
    call_id = message.tool_call_id if isinstance(message, ToolMessage) else ""
    return (message.role, call_id, _text(message))


def _text(message: Message) -> str:
    content: object = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts = cast("list[object]", content) if isinstance(content, list) else []
    return "".join(str(getattr(p, "text", f"[{getattr(p, 'type', 'part')}]")) for p in parts)


def _show_asked(asked: Asked) -> str:
    if not asked:
        return "no new message"
    shown = [
        f"{role} {call_id} {_clip(text)!r}" if call_id else f"{role} {_clip(text)!r}"
        for role, call_id, text in asked
    ]
    return "[" + "; ".join(shown) + "]"


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
