"""Graph executions served over HTTP: started, resumed and forked here, watched from anywhere.

Executions are checkpointed into the server's store (``StoreCheckpointer``), so they are
runs of its journal like the agents' runs. Each execution's signals are logged in the store
(``events:<execution id>``) before a client sees them, numbered from 1, so a client that
reconnects with ``Last-Event-ID`` reads what it missed. The tenant that started an
execution owns it (an ``owner`` artifact written before it starts); a fork belongs to the
tenant of its origin. Another tenant's execution is "not found".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from bastion.core import UserError, new_id
from bastion.graph import (
    CheckpointConflict,
    ExecutionRecord,
    Graph,
    GraphResult,
    GraphStream,
    StoreCheckpointer,
    entry_type,
)
from bastion.tools import Directive

from ._errors import Conflict, NotFound
from ._events import EventLog, LoggedEvent
from ._wire import JsonValue, loads_object

if TYPE_CHECKING:
    from bastion.stores import Stores

    from ._auth import Caller

__all__ = ["GraphRuns", "Owner"]

_OWNER = "owner"


def _owner_key(execution_id: str) -> str:
    return f"graph-owner:{execution_id}"


@dataclass(frozen=True, slots=True)
class Owner:
    """The graph an execution belongs to and the tenant that started it."""

    graph: str
    tenant: str | None


@dataclass(slots=True)
class _Live:
    """An execution running in this process: its task, its last seq, who waits for more."""

    seq: int
    task: asyncio.Task[None] | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    done: bool = False

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


def _json(signal: object, seq: int) -> str:
    data: dict[str, JsonValue] = to_jsonable_python(signal, fallback=repr)  # a dataclass
    data.pop("exception", None)  # a node.error's exception: its text is in ``error``
    return json.dumps({"seq": seq, **data}, default=repr)


def _ends(event: LoggedEvent) -> bool:
    """Whether a logged signal is the last of its execution's segment."""
    if event.type == "server.error":
        return True
    data = loads_object(event.data, "A logged signal")
    return event.type == "graph.after" and not data.get("ancestry")


async def _pause(seconds: float, stopping: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), timeout=seconds)


class GraphRuns:
    """The served graphs' executions, as one caller may see them."""

    def __init__(self, graphs: Mapping[str, Graph], stores: Stores, *, poll: float = 0.25) -> None:
        self.graphs = dict(graphs)
        self.stores = stores
        self.poll = poll
        self.stopping = asyncio.Event()
        self.checkpointer = StoreCheckpointer(stores)
        self.log = EventLog(stores.artifacts)
        self.live: dict[str, _Live] = {}
        self._adapters: dict[str, TypeAdapter[object] | None] = {}

    def graph(self, key: str) -> Graph:
        """The served graph ``key``.

        Raises:
            NotFound: No such graph is served.
        """
        graph = self.graphs.get(key)
        if graph is None:
            known = ", ".join(sorted(self.graphs)) or "none"
            raise NotFound(f"No graph {key!r} is served (served: {known}).")
        return graph

    async def owner(self, execution_id: str) -> Owner | None:
        """Who owns an execution started on a server (``None``: not served by one)."""
        found = await self.stores.artifacts.read(
            run_id=_owner_key(execution_id), role=_OWNER, max_artifacts=1
        )
        if not found:
            return None
        data = loads_object(found[-1].content, "An execution's owner")
        tenant = data["tenant"]
        return Owner(graph=str(data["graph"]), tenant=tenant if isinstance(tenant, str) else None)

    async def check(self, execution_id: str, caller: Caller) -> Owner:
        """The owner of an execution the caller may see.

        Raises:
            NotFound: No such execution, or another tenant's.
        """
        owner = await self.owner(execution_id)
        if owner is None or not caller.sees(owner.tenant):
            raise NotFound(f"No graph execution {execution_id}.")
        return owner

    async def record(self, execution_id: str, caller: Caller) -> ExecutionRecord:
        """The execution's journal record, if the caller may see it.

        Raises:
            NotFound: No such execution, or another tenant's.
        """
        owner = await self.check(execution_id, caller)
        try:
            return await self.checkpointer.record(execution_id)
        except UserError:
            if execution_id not in self.live:
                raise
            # Started here a moment ago: its first entry is not written yet.
            return ExecutionRecord(execution_id=execution_id, graph=owner.graph, input=None)

    async def start(self, caller: Caller, key: str, input: JsonValue) -> str:
        """Start an execution of ``key`` on ``input`` for the caller's tenant."""
        graph = self.graph(key)
        typed = self._typed(graph, input)
        execution_id = new_id("gx")
        await self._own(execution_id, caller.tenant, key)
        stream = graph.stream(typed, execution_id=execution_id, checkpointer=self.checkpointer)
        self._drive(execution_id, stream, 0)
        return execution_id

    def _typed(self, graph: Graph, input: JsonValue) -> object:
        """``input`` as the entry's type (``inputs: list[T]``), checked before anything runs.

        Raises:
            UserError: The input does not fit.
        """
        adapter = self._adapters.get(graph.key)
        if adapter is None:
            accepts = entry_type(graph)
            adapter = self._adapters[graph.key] = None if accepts is Any else TypeAdapter(accepts)
        if adapter is None:
            return input
        try:
            return adapter.validate_python(input)
        except ValidationError as exc:
            raise UserError(
                f"The input of graph {graph.key!r} does not fit its entry: {exc}"
            ) from None

    async def resume(self, execution_id: str, directive: Directive, caller: Caller) -> None:
        """Resume an execution with the decisions it waits for (in the background)."""
        record = await self.record(execution_id, caller)
        if execution_id in self.live and not self.live[execution_id].done:
            raise Conflict(f"Graph execution {execution_id} is running on this server.")
        graph = self.graph(record.graph)
        try:
            opened = await graph.resume_stream(
                execution_id, directive, checkpointer=self.checkpointer
            )
        except CheckpointConflict as exc:
            raise Conflict(str(exc)) from exc
        if not isinstance(opened, GraphResult):
            tail = await self.log.tail(execution_id)
            self._drive(execution_id, opened, tail.seq if tail is not None else 0)

    async def fork(
        self, execution_id: str, version: int | None, edits: Mapping[str, JsonValue], caller: Caller
    ) -> str:
        """Fork an execution at ``version`` with edited outputs, and run the fork."""
        owner = await self.check(execution_id, caller)
        graph = self.graph(owner.graph)
        forked = await self.checkpointer.fork(execution_id, version=version, edits=edits)
        await self._own(forked, owner.tenant, owner.graph)
        opened = await graph.resume_stream(forked, checkpointer=self.checkpointer)
        if not isinstance(opened, GraphResult):
            self._drive(forked, opened, 0)
        return forked

    async def events(self, execution_id: str, after: int) -> AsyncIterator[LoggedEvent]:
        """The execution's signals after seq ``after`` (check first), each once, in order.

        Missed signals come from the store; while the execution runs in this process the
        rest come as they are written; while it runs in another server process on the same
        store, the store is polled every ``poll`` seconds. The stream ends once the
        execution is not running and its logged signals are all out, or the server stops.
        """
        last = after
        while True:
            live = self.live.get(execution_id)
            changed = live.changed if live is not None else None
            for event in await self.log.read(execution_id, last):
                yield event
                last = event.seq
            if live is not None and changed is not None and not live.done:
                await changed.wait()
            elif live is not None and live.seq > last:
                continue  # the last batch landed after the read: read it too
            elif self.stopping.is_set() or await self._settled(execution_id, last):
                return
            else:
                await _pause(self.poll, self.stopping)

    async def _settled(self, execution_id: str, last: int) -> bool:
        """Whether no segment of the execution goes on anywhere and its signals are all out.

        A journal that says ``running`` (here, in another process, or left by a dead one)
        goes on unless the last logged signal ends the execution (``graph.after`` of the
        execution itself, or the ``server.error`` of a log that failed): the journal then
        lags. An execution with no journal yet is starting in another process.
        """
        tail = await self.log.tail(execution_id)
        if tail is not None and tail.seq > last:
            return False
        if tail is not None and _ends(tail):
            return True
        record = await self.stores.journal.get_run(execution_id)
        return record is not None and record.status != "running"

    async def close(self) -> None:
        """Stop the executions running here (their checkpoints make them resumable)."""
        self.stopping.set()
        tasks = [live.task for live in self.live.values() if live.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _own(self, execution_id: str, tenant: str | None, key: str) -> None:
        content = json.dumps({"tenant": tenant, "graph": key})
        await self.stores.artifacts.write(_owner_key(execution_id), content, role=_OWNER, seq=1)

    def _drive(self, execution_id: str, stream: GraphStream, seq: int) -> None:
        live = self.live[execution_id] = _Live(seq=seq)

        async def pump() -> None:
            try:
                async for signal in stream:
                    live.seq += 1
                    data = _json(signal, live.seq)
                    event = LoggedEvent(seq=live.seq, type=signal.type, data=data)
                    await self.log.append(execution_id, [event])
                    live.notify()
            except Exception as exc:  # a store failure: the checkpoints say where it stopped
                live.seq += 1
                data = {"seq": live.seq, "type": "server.error", "error": f"{exc!r}"}
                failure = LoggedEvent(seq=live.seq, type="server.error", data=json.dumps(data))
                with contextlib.suppress(Exception):
                    await self.log.append(execution_id, [failure])
            finally:
                live.done = True
                if self.live.get(execution_id) is live:
                    del self.live[execution_id]
                live.notify()

        live.task = asyncio.get_running_loop().create_task(pump())
