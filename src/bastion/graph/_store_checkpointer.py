"""``StoreCheckpointer``: the scheduler's :class:`Checkpointer` on a Bastion store.

Each graph execution is a run in ``stores.journal`` (agent column ``graph:<name>``), written
through :class:`~bastion.graph._store_log.ExecutionLog`: the ``graph_started`` entry is
durable before the first node runs (a process killed before its first step leaves an
execution that is listed and resumable), each node's result is durable before anything
downstream of it runs (a node whose body returned never runs again), and a super-step's
checkpoint holds only the keys that finished in it and the next frontier (its size follows
the step, not the history). A resume appends ``graph_resumed`` at the version it loaded, so
of two racing resumes one goes on and the other gets :class:`CheckpointConflict` before it
runs anything.

Nested executions (a spawned graph, a mapped item) have ids under their root's
(``<root>/<node path>…``); they are kept in the root's journal, their node ids prefixed with
that path, so one execution is one journal with one version.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bastion.core import Clock, JsonObject, JsonValue, SystemClock, UserError
from bastion.governance import (
    GovernorSnapshot,
    dump_governance_state,
    load_governance_state,
)
from bastion.stores import (
    LeaseHeld,
    LeaseKeeper,
    RunBusy,
    Stores,
    new_owner,
    open_store,
    run_lease_key,
)

from ._checkpoint import Checkpoint, Step
from ._signals import GraphStatus
from ._store_history import fork_execution, list_checkpoints, load_execution
from ._store_log import CheckpointConflict, ExecutionLog
from ._store_records import (
    CheckpointRecord,
    ExecutionRecord,
    fold_execution,
    json_objects,
    to_json,
)

if TYPE_CHECKING:
    from ._directive_json import DirectiveJson

__all__ = ["StoreCheckpointer"]

_log = logging.getLogger(__name__)

_ENDED: dict[str, GraphStatus] = {
    "completed": "completed",
    "failed": "failed",
    "aborted": "aborted",
    "awaiting_approval": "suspended",
}


def _split(execution_id: str) -> tuple[str, str]:
    """``(root, prefix)``: the journal an execution lives in, and its node-id prefix."""
    root, sep, path = execution_id.partition("/")
    return root, f"{path}/" if sep else ""


class StoreCheckpointer:
    """Checkpoints graph executions into a store's run journal.

    A process works on an execution under its lease ``run:<execution id>`` (as an agent
    run), taken before its first entry or before it resumes a running one and released when
    it ends or suspends: a resume while the owner lives is refused with ``RunBusy``.

    Args:
        store: A :class:`~bastion.stores.Stores`, or a store URL (``sqlite:///graph.db``,
            ``postgresql://…``, ``redis://…``, ``memory://``), opened on first use.
        clock: The clock of the leases (``stores.lease_ttl`` long); default the system's.

    Raises:
        UserError: A URL no backend understands.
    """

    def __init__(self, store: Stores | str, *, clock: Clock | None = None) -> None:
        self._owned = isinstance(store, str)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._keepers: dict[str, LeaseKeeper] = {}
        self.stores: Stores = open_store(store) if isinstance(store, str) else store
        self._opened = False
        self._logs: dict[str, ExecutionLog] = {}
        self._records: dict[str, ExecutionRecord] = {}
        self._claimed: set[str] = set()  # resumed here: graph_resumed already written
        # Suspended agent nodes of a running execution: key -> (state JSON, pending items).
        self._agents: dict[str, dict[str, tuple[str, list[JsonObject]]]] = {}
        # A resumed execution's saved agent runs and its directive (JSON), until taken.
        self._resuming: dict[str, tuple[dict[str, str], DirectiveJson | None]] = {}
        # The counters last written per execution: (their JSON without taken_at, data).
        self._counters: dict[str, tuple[str, JsonObject]] = {}

    async def _ready(self) -> Stores:
        if not self._opened:
            await self.stores.open()
            self._opened = True
        return self.stores

    async def aclose(self) -> None:
        """Close the store if this checkpointer opened it from a URL."""
        if self._owned and self._opened:
            await self.stores.close()
            self._opened = False

    def _log(self, execution_id: str) -> ExecutionLog:
        log = self._logs.get(_split(execution_id)[0])
        if log is None:
            raise UserError(f"Execution {execution_id!r} was not started on this checkpointer.")
        return log

    async def _own(self, root: str) -> None:
        """Take the execution's lease (once).

        Raises:
            RunBusy: A live process works on it.
        """
        if root in self._keepers:
            return
        stores = self.stores
        keeper = LeaseKeeper(
            stores.leases, run_lease_key(root), self._clock, ttl=stores.lease_ttl, owner=new_owner()
        )
        try:
            await keeper.acquire()
        except LeaseHeld as held:
            raise RunBusy(root, held.lease, held.now) from None
        self._keepers[root] = keeper

    async def _release(self, root: str) -> None:
        keeper = self._keepers.pop(root, None)
        if keeper is not None:
            try:
                await keeper.release()
            except Exception as exc:  # the store failed: the lease then lapses at its expiry
                _log.warning("Graph execution %s: releasing its lease failed (%r)", root, exc)
                keeper.stop()

    def _alive(self, root: str) -> None:
        keeper = self._keepers.get(root)
        if keeper is not None and keeper.lost is not None:
            raise keeper.lost  # another process took the execution over: stop writing

    # -- the scheduler's protocol ---------------------------------------------------------

    async def load(self, execution_id: str) -> Checkpoint | None:
        """The saved state of an execution (or of a nested one), or ``None``."""
        stores = await self._ready()
        root, prefix = _split(execution_id)
        record = self._records.get(root)
        if record is None:
            if prefix and root in self._logs:  # under an execution this process started
                return None
            entries = await stores.journal.read(root)
            if not entries:
                return None
            record = fold_execution(root, entries)
            self._records[root] = record
            self._logs[root] = ExecutionLog(stores, root, record.graph, version=record.version)
        finished = {
            key.removeprefix(prefix): node.output
            for key, node in record.finished.items()
            if key.startswith(prefix) and "/" not in key.removeprefix(prefix)
        }
        if prefix:
            return Checkpoint(execution_id=execution_id, graph=record.graph, finished=finished)
        rounds = [c for c in record.checkpoints if c.kind == "round"]
        last = rounds[-1] if rounds else None
        counters = None
        if record.counters is not None:
            loaded = load_governance_state(record.counters)
            counters = loaded if isinstance(loaded, GovernorSnapshot) else None
        return Checkpoint(
            execution_id=execution_id,
            graph=record.graph,
            input=record.input,
            finished=finished,
            round=last.step if last is not None else -1,
            frontier=last.frontier if last is not None else (),
            counters=counters,
            status=_ENDED.get(record.status),
            output=record.output,
        )

    def check_claim(self, execution_id: str, directive: DirectiveJson | None) -> None:
        """Refuse a directive whose decisions a resume already used (by any process).

        Raises:
            CheckpointConflict: The execution was resumed with these decisions since it
                was suspended: another process won the race.
        """
        root = _split(execution_id)[0]
        record = self._records.get(root)
        named: set[str] = set()
        if directive is not None:
            named = {i["interrupt_id"] for i in directive["interrupts"]}
            named |= {a["tool_call_id"] for a in directive["approvals"]}
        if record is not None and named & record.decided:
            raise CheckpointConflict(
                root,
                expected_version=record.suspended_at or record.version,
                actual_version=record.version,
            )

    def pending_ids(self, execution_id: str) -> set[str]:
        """Ids of what the loaded (suspended) execution waits for: interrupts and calls."""
        record = self._records.get(_split(execution_id)[0])
        return {str(p["id"]) for p in record.pending} if record is not None else set()

    def suspend_agent(
        self, execution_id: str, node: str, state: str, pending: list[JsonObject]
    ) -> None:
        """Keep a suspended agent node's run; it is written with ``graph_suspended``."""
        root, prefix = _split(execution_id)
        self._agents.setdefault(root, {})[prefix + node] = (state, pending)

    def resumed_agent(
        self, execution_id: str, node: str
    ) -> tuple[str, DirectiveJson | None] | None:
        """The saved run of an agent node this resume continues, with the directive."""
        root, prefix = _split(execution_id)
        resuming = self._resuming.get(root)
        if resuming is None:
            return None
        state = resuming[0].pop(prefix + node, None)
        return None if state is None else (state, resuming[1])

    async def claim(self, execution_id: str, directive: DirectiveJson | None) -> None:
        """Take a loaded execution over: write ``graph_resumed`` at the version loaded.

        Raises:
            CheckpointConflict: Another process resumed (or wrote) it since it was loaded.
        """
        root = _split(execution_id)[0]
        self.check_claim(root, directive)
        record = self._records.get(root)
        try:
            if record is not None and record.status == "running":
                await self._own(root)  # a live owner refuses it before anything is written
                await self._log(root).write("graph_resumed", {"directive": directive})
            else:  # suspended: the version decides a race, then nobody else holds it
                await self._log(root).write("graph_resumed", {"directive": directive}, "running")
                await self._own(root)
        except Exception:
            await self._release(root)
            raise
        self._resuming[root] = (dict(record.agents) if record is not None else {}, directive)
        self._records.pop(root, None)
        self._claimed.add(root)

    async def execution_started(self, execution_id: str, *, graph: str, input: object) -> None:
        """Write ``graph_started`` (new) or ``graph_resumed`` (loaded), durably."""
        stores = await self._ready()
        root, prefix = _split(execution_id)
        if prefix:
            return  # a nested execution lives in its root's journal
        log = self._logs.get(root)
        if log is None:
            started = {"graph": graph, "input": to_json(input)}  # a UserError before the lease
            await self._own(root)
            log = self._logs[root] = ExecutionLog(stores, root, graph)
            try:
                await log.write("graph_started", started)
            except Exception:
                del self._logs[root]
                await self._release(root)
                raise
        elif root in self._claimed:
            self._claimed.discard(root)
        else:  # restarted with graph.run(execution_id=...) rather than resume()
            await self._own(root)
            self._records.pop(root, None)
            await log.write("graph_resumed", {"directive": None}, status="running")

    async def node_finished(
        self, execution_id: str, node_id: str, round: int, output: object
    ) -> None:
        """Write the node's result; return once it is durable."""
        prefix = _split(execution_id)[1]
        key = prefix + node_id
        self._alive(_split(execution_id)[0])
        node = node_id.split("@", maxsplit=1)[0]
        payload = {"key": key, "node": node, "step": round, "output": to_json(output)}
        await self._log(execution_id).write("graph_node_finished", payload)

    async def step_finished(self, execution_id: str, step: Step) -> None:
        """Queue the step's checkpoint (the keys it finished); it rides the next commit."""
        prefix = _split(execution_id)[1]
        if prefix:
            return  # a nested round is not a checkpoint of the root
        payload: dict[str, object] = {
            "step": step.round,
            "finished": list(step.finished),
            "frontier": list(step.frontier),
        }
        if step.counters is not None:  # written only when they changed: a delta too
            counters = dump_governance_state(step.counters)
            same = json.dumps({**counters, "taken_at": 0}, sort_keys=True, default=str)
            last = self._counters.get(execution_id)
            if last is None or last[0] != same:
                self._counters[execution_id] = (same, counters)
                payload["counters"] = counters
        self._log(execution_id).queue("graph_step", payload)

    async def execution_ended(
        self, execution_id: str, *, status: GraphStatus, output: object
    ) -> None:
        """Write ``graph_ended`` (or ``graph_suspended``) with the run status, durably."""
        root, prefix = _split(execution_id)
        if prefix:
            return
        log = self._log(execution_id)
        last = self._counters.pop(execution_id, None)
        agents = self._agents.pop(root, {})
        self._resuming.pop(root, None)
        self._records.pop(root, None)  # a later resume reads the store again
        self._claimed.discard(root)
        if status == "suspended":
            pending = _pending(last[1] if last is not None else {})
            for _, waits in agents.values():
                pending.extend(waits)
            payload = {"pending": pending, "agents": {k: v[0] for k, v in agents.items()}}
            try:
                await log.write("graph_suspended", payload, status="awaiting_approval")
            finally:
                self._logs.pop(root, None)
                await self._release(root)
            return
        try:
            await log.write(
                "graph_ended",
                {"status": status, "output": to_json(output) if status == "completed" else None},
                status=status,
            )
        finally:
            self._logs.pop(root, None)
            await self._release(root)

    # -- reading back ---------------------------------------------------------------------

    async def history(self, execution_id: str) -> list[CheckpointRecord]:
        """The execution's super-step checkpoints, oldest first."""
        return await list_checkpoints(await self._ready(), execution_id)

    async def record(self, execution_id: str) -> ExecutionRecord:
        """The execution as its journal tells it (status, results, checkpoints)."""
        return await load_execution(await self._ready(), execution_id)

    async def fork(
        self,
        execution_id: str,
        *,
        version: int | None = None,
        edits: Mapping[str, object] | None = None,
    ) -> str:
        """A new execution from a checkpoint, with edited node outputs; see ``fork_execution``."""
        return await fork_execution(await self._ready(), execution_id, version=version, edits=edits)


def _pending(counters: Mapping[str, JsonValue]) -> list[JsonObject]:
    """The interrupts a suspended execution waits for, as ``graph_suspended`` lists them."""
    fields = ("id", "node", "kind", "action", "reason", "payload")
    return [
        {name: interrupt.get(name) for name in fields}
        for interrupt in json_objects(counters.get("pending"))
    ]
