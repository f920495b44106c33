"""What a graph execution's journal holds, and the fold that reads it back.

Written by ``StoreCheckpointer`` (through ``ExecutionLog``), read by it on resume, by
``history()`` / ``fork()`` and by the CLI. Entries, in order:

* ``graph_started`` — graph name, input, and for a fork its origin and the node results it
  starts from;
* ``graph_node_finished`` — one node (or mapped item) whose body returned: its resume key,
  super-step and output; committed before anything downstream of it runs;
* ``graph_step`` — a super-step's checkpoint: the keys that finished in it (the delta);
* ``graph_suspended`` — the execution waits for a human (pending pauses and approvals);
* ``graph_resumed`` — a process took the execution over (with the directive it was given);
* ``graph_ended`` — the final status and output.

The checkpoint *version* of an execution is its journal's last seq: a resume appends at
``expected_seq=version``, so of two racing resumes exactly one is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from bastion.core import JsonObject, JsonValue, RunStatus, UserError
from bastion.stores import JournalUnreadable

from ._store_log import GRAPH_SCHEMA_VERSION

if TYPE_CHECKING:
    from bastion.stores import JournalEntry

__all__ = [
    "CheckpointRecord",
    "ExecutionRecord",
    "FinishedNode",
    "fold_execution",
    "json_objects",
    "to_json",
]


def to_json(value: object) -> JsonValue:
    """``value`` as JSON data (pydantic models and dataclasses become objects).

    Raises:
        UserError: The value has no JSON form (a node must return JSON-serialisable data
            to be checkpointed).
    """
    if value is None or isinstance(value, str | int | float | bool):
        return value
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise UserError(
            f"Cannot checkpoint {type(value).__name__} value {value!r}: {exc}. Return JSON "
            "data, a pydantic model or a dataclass from nodes of a durable graph."
        ) from exc


def _json(value: object) -> JsonValue:
    """A value read from a journal payload, which holds JSON data only."""
    return cast("JsonValue", value)


def json_objects(value: object) -> Sequence[Mapping[str, JsonValue]]:
    """A list of JSON objects as a payload holds it (``None``: an empty one)."""
    return cast("Sequence[Mapping[str, JsonValue]]", value or ())


@dataclass(frozen=True, kw_only=True, slots=True)
class FinishedNode:
    """A node (or mapped item) whose body returned, as the journal holds it.

    Attributes:
        key: Its resume key: which run of which node it was (stable across processes).
        node: The node's name in the graph.
        step: The super-step it ran in.
        output: Its output, as JSON data.
        version: The journal seq of its ``graph_node_finished`` entry.
    """

    key: str
    node: str
    step: int
    output: JsonValue
    version: int


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckpointRecord:
    """One checkpoint of an execution (``Graph.history`` lists them); a fork starts from it.

    A checkpoint is written each time a node finishes (``kind="node"``) and at the end of
    each round (``kind="round"``, with the round's delta and where the next one starts).

    Attributes:
        execution_id: The execution.
        version: Its journal seq: the state it names is every result up to it.
        kind: ``node`` or ``round``.
        step: The round.
        finished: Resume keys of the results it added (the delta).
        nodes: Names of those nodes, in the order they finished.
        frontier: For a round: the nodes the next round starts from.
    """

    execution_id: str
    version: int
    kind: Literal["node", "round"]
    step: int
    finished: tuple[str, ...]
    nodes: tuple[str, ...]
    frontier: tuple[str, ...] = ()


@dataclass(kw_only=True, slots=True)
class ExecutionRecord:
    """A graph execution as its journal tells it.

    Attributes:
        execution_id: The execution (its run id in the store).
        graph: The graph's name.
        input: The execution's input (JSON data).
        status: ``running``, ``awaiting_approval``, ``completed``, ``failed``, ``aborted``.
        version: The checkpoint version: the journal's last seq.
        finished: Every node run whose body returned, by resume key, in order.
        checkpoints: One per super-step that was checkpointed.
        pending: What a suspended execution waits for (pauses and approvals).
        output: The final output once ended (JSON data).
        error: The error message of a failed execution.
        forked_from: ``(execution_id, version)`` this execution was forked from.
        counters: The governor's state last checkpointed (JSON data), if any.
        suspended_at: The version of the last ``graph_suspended`` entry, if any.
        decided: Ids of the interrupts and calls a resume already decided (a directive is
            used once).
        agents: The saved runs (``run_state_to_json``) of the agent nodes the last
            suspension waits on, by node key.
    """

    execution_id: str
    graph: str
    input: JsonValue
    status: RunStatus = "running"
    version: int = 0
    finished: dict[str, FinishedNode] = field(default_factory=dict[str, FinishedNode])
    checkpoints: list[CheckpointRecord] = field(default_factory=list[CheckpointRecord])
    pending: list[JsonObject] = field(default_factory=list[JsonObject])
    output: JsonValue = None
    error: str | None = None
    forked_from: tuple[str, int] | None = None
    counters: JsonObject | None = None
    suspended_at: int | None = None
    decided: set[str] = field(default_factory=set[str])
    agents: dict[str, str] = field(default_factory=dict[str, str])

    def outputs_at(self, version: int) -> dict[str, FinishedNode]:
        """The node results durable at checkpoint ``version`` (what a fork starts from)."""
        return {key: node for key, node in self.finished.items() if node.version <= version}


def _apply(record: ExecutionRecord, entry: JournalEntry) -> None:
    payload = entry.payload
    kind = entry.kind
    if kind == "graph_node_finished":
        key = str(payload["key"])
        node = FinishedNode(
            key=key,
            node=str(payload["node"]),
            step=int(cast("int", payload["step"])),
            output=_json(payload.get("output")),
            version=entry.seq,
        )
        record.finished[key] = node
        record.checkpoints.append(
            CheckpointRecord(
                execution_id=record.execution_id,
                version=entry.seq,
                kind="node",
                step=node.step,
                finished=(key,),
                nodes=(node.node,),
            )
        )
    elif kind == "graph_step":
        keys = tuple(str(k) for k in cast("Sequence[object]", payload["finished"]))
        counters = payload.get("counters")
        if isinstance(counters, dict):
            record.counters = counters
        record.checkpoints.append(
            CheckpointRecord(
                execution_id=record.execution_id,
                version=entry.seq,
                kind="round",
                step=int(cast("int", payload["step"])),
                finished=keys,
                nodes=tuple(record.finished[k].node for k in keys if k in record.finished),
                frontier=tuple(
                    str(f) for f in cast("Sequence[object]", payload.get("frontier", []))
                ),
            )
        )
    elif kind == "graph_suspended":
        record.status = "awaiting_approval"
        record.pending = [dict(p) for p in json_objects(payload["pending"])]
        record.suspended_at = entry.seq
        agents = cast("Mapping[str, object]", payload.get("agents") or {})
        record.agents = {str(k): str(v) for k, v in agents.items()}
    elif kind == "graph_resumed":
        record.status = "running"
        record.pending = []
        directive = cast("Mapping[str, JsonValue] | None", payload.get("directive")) or {}
        for item in json_objects(directive.get("interrupts")):
            record.decided.add(str(item["interrupt_id"]))
        for item in json_objects(directive.get("approvals")):
            record.decided.add(str(item["tool_call_id"]))
    elif kind == "graph_ended":
        record.status = cast("RunStatus", payload["status"])
        record.output = _json(payload.get("output"))
        error = payload.get("error")
        record.error = str(error) if error is not None else None
    else:
        raise ValueError(f"is of kind {kind!r}, which is not a graph entry")


def _start(execution_id: str, entry: JournalEntry) -> ExecutionRecord:
    payload = entry.payload
    record = ExecutionRecord(
        execution_id=execution_id, graph=str(payload["graph"]), input=_json(payload.get("input"))
    )
    origin = payload.get("forked_from")
    if isinstance(origin, dict):
        record.forked_from = (str(origin["execution_id"]), int(cast("int", origin["version"])))
    for seeded in json_objects(payload.get("seed")):
        key = str(seeded["key"])
        record.finished[key] = FinishedNode(
            key=key,
            node=str(seeded["node"]),
            step=int(cast("int", seeded["step"])),
            output=seeded.get("output"),
            version=entry.seq,
        )
    return record


def fold_execution(execution_id: str, entries: Sequence[JournalEntry]) -> ExecutionRecord:
    """Read a graph execution back from its journal entries.

    Raises:
        UserError: The run is not a graph execution (an agent run, say).
        JournalUnreadable: An entry is missing fields, out of sequence, or newer than this
            Bastion reads; nothing is run.
    """
    if not entries:
        raise UserError(f"No graph execution {execution_id!r} in the store.")
    if entries[0].kind != "graph_started":
        raise UserError(
            f"Run {execution_id!r} is not a graph execution (its journal starts with "
            f"{entries[0].kind!r}); resume agent runs with agent.resume or 'bastion runs resume'."
        )
    record: ExecutionRecord | None = None
    for position, entry in enumerate(entries, start=1):
        if entry.seq != position:
            raise JournalUnreadable(
                execution_id, entry.seq, f"follows a gap (expected {position})."
            )
        if entry.schema_version > GRAPH_SCHEMA_VERSION:
            raise JournalUnreadable(
                execution_id,
                entry.seq,
                f"({entry.kind}) was written with schema_version {entry.schema_version}, newer "
                f"than the {GRAPH_SCHEMA_VERSION} this Bastion reads: upgrade bastion.",
            )
        try:
            if record is None:
                record = _start(execution_id, entry)
            else:
                _apply(record, entry)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalUnreadable(
                execution_id, entry.seq, f"({entry.kind}) is malformed: {exc}."
            ) from exc
        record.version = entry.seq
    assert record is not None
    return record
