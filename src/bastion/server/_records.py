"""What the server tells about a journaled run: its latest state and what it waits for."""

from __future__ import annotations

import json
from dataclasses import dataclass

from bastion.agent import RunState, run_state_from_json
from bastion.stores import JournalEntry, JournalStore, RunRecord

from ._items import call_item, interrupt_item, usage_view
from ._models import PendingItem, RunView

__all__ = ["RunFacts", "load_run", "pending_items", "run_view"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFacts:
    """A run's store record and its state as of the last entry that recorded one."""

    record: RunRecord
    state: RunState


async def load_run(journal: JournalStore, run_id: str) -> RunFacts | None:
    """Read the run from the journal; ``None`` when the store has no such run (yet)."""
    record = await journal.get_run(run_id)
    if record is None:
        return None
    state = _last_state(await journal.read(run_id))
    if state is None:
        return None
    return RunFacts(record=record, state=state)


def _last_state(entries: list[JournalEntry]) -> RunState | None:
    for entry in reversed(entries):
        state = entry.payload.get("state")
        if isinstance(state, dict):
            document = {"schema_version": entry.schema_version, "state": state}
            return run_state_from_json(json.dumps(document))
    return None


def pending_items(state: RunState) -> list[PendingItem]:
    """The calls and budget interrupts a suspended run waits for."""
    held = {c for i in state.interrupts for c in i.tool_call_ids}
    items = [
        call_item(state.run_id, p.call.id, p.call.name, p.request.arguments, p.request.reason)
        for p in state.pending_approvals
        if p.request is not None and p.call.id not in held
    ]
    items.extend(interrupt_item(state.run_id, i.to_dict()) for i in state.interrupts)
    return items


def run_view(facts: RunFacts) -> RunView:
    """The run as the API shows it."""
    record, state = facts.record, facts.state
    error = state.error
    return RunView(
        run_id=record.run_id,
        agent=record.agent,
        status=record.status,
        tenant_id=state.tenant_id,
        session_id=state.session_id,
        metadata=state.metadata,
        created_at=record.created_at,
        updated_at=record.updated_at,
        output=state.output if record.status == "completed" else None,
        error=None if error is None else {"code": error.code, "message": error.message},
        usage=usage_view(state.usage),
        pending=pending_items(state) if record.status == "awaiting_approval" else [],
    )
