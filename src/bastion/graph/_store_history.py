"""Reading executions back from a store: ``load_execution``, ``history``, ``fork``.

Called by ``Graph.history`` / ``Graph.fork`` (through the store checkpointer) and by the
``bastion graph show|history|fork`` commands. Everything here works on the journal alone, so
it needs no graph definition: a fork is a new execution whose ``graph_started`` entry holds
the node results it starts from; ``resume`` on it runs what is left.
"""

from __future__ import annotations

from collections.abc import Mapping

from bastion.core import UserError, new_id
from bastion.stores import Stores

from ._store_log import ExecutionLog
from ._store_records import CheckpointRecord, ExecutionRecord, FinishedNode, fold_execution, to_json

__all__ = ["fork_execution", "list_checkpoints", "load_execution", "new_execution_id"]


def new_execution_id() -> str:
    """A fresh execution id, ``gx_<32 hex>``."""
    return new_id("gx")


async def load_execution(stores: Stores, execution_id: str) -> ExecutionRecord:
    """The execution as its journal tells it.

    Raises:
        UserError: No such execution, or the run is not a graph execution.
        JournalUnreadable: A damaged or newer journal.
    """
    return fold_execution(execution_id, await stores.journal.read(execution_id))


async def list_checkpoints(stores: Stores, execution_id: str) -> list[CheckpointRecord]:
    """The execution's super-step checkpoints, oldest first."""
    return (await load_execution(stores, execution_id)).checkpoints


def _pick(record: ExecutionRecord, version: int | None) -> int:
    if version is None:
        if not record.checkpoints:
            raise UserError(
                f"Execution {record.execution_id!r} has no checkpoint yet (no super-step "
                "finished); resume it instead of forking it."
            )
        return record.checkpoints[-1].version
    versions = [c.version for c in record.checkpoints]
    if version not in versions:
        shown = ", ".join(str(v) for v in versions) or "none"
        raise UserError(
            f"Execution {record.execution_id!r} has no checkpoint at version {version!r}. "
            f"Its checkpoints: {shown} (see 'bastion graph history {record.execution_id}')."
        )
    return version


def _edited(
    seed: dict[str, FinishedNode], edits: Mapping[str, object], record: ExecutionRecord
) -> None:
    latest: dict[str, str] = {}  # node name -> key of its latest finished run
    for key, node in seed.items():
        latest[node.node] = key
    for name, value in edits.items():
        key = latest.get(name)
        if key is None:
            shown = ", ".join(repr(n) for n in sorted(latest)) or "none"
            raise UserError(
                f"Cannot edit node {name!r}: it has not finished at this checkpoint of "
                f"execution {record.execution_id!r}. Finished nodes: {shown}."
            )
        old = seed[key]
        seed[key] = FinishedNode(
            key=key, node=old.node, step=old.step, output=to_json(value), version=old.version
        )


async def fork_execution(
    stores: Stores,
    execution_id: str,
    *,
    version: int | None = None,
    edits: Mapping[str, object] | None = None,
) -> str:
    """Start a new execution from a checkpoint of another, with edited node outputs.

    The fork keeps every node result durable at ``version`` (the latest checkpoint when
    ``None``); ``edits`` replace the outputs of finished nodes (by node name, the node's
    latest run) as the nodes that have not run yet will see them. Nothing that finished runs
    again; resume the returned execution to run the rest.

    Returns:
        The new execution's id.

    Raises:
        UserError: No such execution or checkpoint, or an edit of a node that had not
            finished at that checkpoint (before anything is written).
    """
    record = await load_execution(stores, execution_id)
    at = _pick(record, version)
    seed = record.outputs_at(at)
    _edited(seed, edits or {}, record)
    fork_id = new_execution_id()
    log = ExecutionLog(stores, fork_id, record.graph)
    await log.write(
        "graph_started",
        {
            "graph": record.graph,
            "input": record.input,
            "forked_from": {"execution_id": execution_id, "version": at},
            "seed": [
                {"key": n.key, "node": n.node, "step": n.step, "output": n.output}
                for n in seed.values()
            ],
        },
    )
    return fork_id
