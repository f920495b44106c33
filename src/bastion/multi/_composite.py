"""``CompositeLog``: the journal of a multi-agent operation (fan-out, evaluator, external call).

A composite operation is journaled as a run of its own in the store's journal, under an id
the caller chooses (so a second process finds it): ``run_started`` (a ``RunState`` naming
the operation), one ``tool_result`` entry per finished part (a fan-out child, an iteration,
an external call; ``tool_call_id`` is the part's key, ``content`` its JSON record, ``spent``
its usage), and ``run_ended`` once the whole is done. The entries are the ordinary typed
entries of ``_entries``, so ``bastion runs show`` reads them like any run.

Running the operation again with the same id reads the finished parts back
(:attr:`CompositeLog.done`) and does not redo them. Used by ``_fanout``, ``_evaluator`` and
``_external``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from bastion.agent._entries import (
    RunEndedEntry,
    RunStartedEntry,
    Spent,
    ToolResultEntry,
    entry_payload,
)
from bastion.agent._journal import state_payload
from bastion.agent._state import RunState
from bastion.core import Usage, UserError, usage_adapter
from bastion.stores import JournalConflict, NewEntry

if TYPE_CHECKING:
    from bastion.core import JsonObject, JsonValue, RunStatus
    from bastion.stores import Stores

__all__ = ["COMPOSITE", "CompositeLog", "Part"]

COMPOSITE = "bastion.composite"
"""The ``metadata`` key naming what a composite run is (``fan_out``, ``evaluator_optimizer``…)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Part:
    """One finished part as journaled: its record (a JSON object) and what it spent."""

    key: str
    name: str
    record: JsonObject
    usage: Usage
    is_error: bool


class CompositeLog:
    """Appends the parts of one composite run; reads back the parts finished earlier."""

    __slots__ = ("_lock", "_seq", "_stores", "done", "ended", "name", "run_id")

    def __init__(self, stores: Stores, run_id: str, name: str) -> None:
        self._stores = stores
        self.run_id = run_id
        self.name = name
        self._seq = 0
        self._lock = asyncio.Lock()
        self.done: dict[str, Part] = {}
        """The parts journaled so far, by key."""
        self.ended = False

    @classmethod
    async def open(
        cls, stores: Stores, run_id: str, *, name: str, kind: str, metadata: Mapping[str, object]
    ) -> CompositeLog:
        """Open the run ``run_id``: create it, or read the parts it already holds."""
        log = cls(stores, run_id, name)
        entries = await stores.journal.read(run_id)
        if not entries:
            state = RunState(run_id=run_id, agent_name=name, metadata={COMPOSITE: kind, **metadata})
            entry = RunStartedEntry(state=state_payload(state))
            await log._append(NewEntry(kind="run_started", payload=entry_payload(entry)), None)
            return log
        _check_kind(entries[0].payload, run_id, kind)
        for stored in entries:
            log._seq = stored.seq
            if stored.kind == "tool_result":
                payload = stored.payload
                key = str(payload.get("tool_call_id"))
                log.done[key] = Part(
                    key=key,
                    name=str(payload.get("tool_name")),
                    record=_record(payload.get("content"), run_id),
                    usage=_spent(payload.get("spent")),
                    is_error=bool(payload.get("is_error")),
                )
            elif stored.kind == "run_ended":
                log.ended = True
        return log

    async def record(self, part: Part, *, model: str = "composite") -> None:
        """Journal a finished part (before anyone is told it finished)."""
        entry = ToolResultEntry(
            step=len(self.done) + 1,
            tool_call_id=part.key,
            tool_name=part.name,
            arguments="{}",
            content=json.dumps(part.record, default=str),
            is_error=part.is_error,
            spent=[Spent(model=model, usage=part.usage)] if part.usage.requests else [],
        )
        await self._append(NewEntry(kind="tool_result", payload=entry_payload(entry)), None)
        self.done[part.key] = part

    async def finish(self, status: RunStatus, output: object, usage: Usage) -> None:
        """Journal the end of the composite run (its status, output and usage)."""
        if self.ended:
            return
        state = RunState(run_id=self.run_id, agent_name=self.name, status=status, usage=usage)
        state.output = output
        payload = entry_payload(RunEndedEntry(state=state_payload(state)))
        await self._append(NewEntry(kind="run_ended", payload=payload), status)
        self.ended = True

    async def _append(self, entry: NewEntry, status: RunStatus | None) -> None:
        async with self._lock:
            while True:
                try:
                    stored = await self._stores.journal.append(
                        self.run_id,
                        [entry],
                        expected_seq=self._seq,
                        agent=self.name,
                        status=status,
                    )
                except JournalConflict as exc:  # another process appended: follow it
                    self._seq = exc.actual_seq
                    continue
                self._seq = stored[-1].seq
                return


def _check_kind(payload: Mapping[str, JsonValue], run_id: str, kind: str) -> None:
    """Refuse a run id that another kind of run (an agent's, another operation's) holds."""
    state = payload.get("state")
    metadata = state.get("metadata") if isinstance(state, Mapping) else None
    found = metadata.get(COMPOSITE) if isinstance(metadata, Mapping) else None
    if found != kind:
        what = f"a {found} run" if found else "an agent's run"
        raise UserError(
            f"Run id {run_id!r} is already {what} in this store, not a {kind}; give the "
            f"{kind} an id of its own."
        )


def _record(content: JsonValue, run_id: str) -> JsonObject:
    """A part's record: the JSON object its entry's ``content`` holds.

    Raises:
        UserError: The content is not a JSON object (not a composite part).
    """
    record: object = json.loads(str(content))
    if not isinstance(record, dict):
        raise UserError(f"Run {run_id!r}: a journaled part is {record!r}, not a JSON object.")
    return cast("JsonObject", record)


def _spent(spent: JsonValue) -> Usage:
    """The usage a part's ``spent`` list (of ``{"model", "usage"}`` objects) adds up to."""
    usage = Usage()
    for item in spent if isinstance(spent, Sequence) and not isinstance(spent, str) else ():
        data = item.get("usage") if isinstance(item, Mapping) else None
        if isinstance(data, Mapping):
            usage += usage_adapter().validate_python(data)
    return usage
