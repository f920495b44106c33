"""What the agent workflow and the session workflow share.

The class factory Temporal needs (a run method of the class's own), the check of the
``decide`` update's validator, and the client's side of that update.
"""

from __future__ import annotations

import asyncio
import types
import uuid
from typing import TYPE_CHECKING, TypeVar

from temporalio import workflow
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from bastion.core import UserError

from ._views import decisions_adapter

_T = TypeVar("_T")
_W = TypeVar("_W")

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence

    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import Agent
    from bastion.tools import ApprovalDecision, ApprovalRequest

    from ._proxies import Activities

__all__ = [
    "cancel_as_abort",
    "cancel_workflow",
    "check_decisions",
    "decision_update",
    "define_workflow",
    "send_decisions",
    "start_run",
    "workflow_class",
]


def define_workflow(
    base: type[_W],
    run: Callable[[_W, str], Awaitable[str]],
    agent: Agent[object, object],
    name: str,
    activities: Activities,
) -> type:
    """A subclass of ``base`` for ``agent``, registered as the workflow ``name``."""
    attributes = {"agent": agent, "activities": activities}
    return workflow_class(base, run, f"{base.__name__}[{agent.name}]", name, attributes)


def workflow_class(
    base: type[_W],
    run: Callable[[_W, str], Awaitable[str]],
    class_name: str,
    name: str,
    attributes: Mapping[str, object],
) -> type:
    """A subclass ``class_name`` of ``base`` with ``attributes``, registered as workflow ``name``.

    Temporal wants a run method defined on the class itself, outside any function: the
    class is made with ``type`` around a copy of the module-level ``run``. It runs
    unsandboxed: the loop is deterministic once its clock, ids, models and tools (or a
    graph's node bodies) are the workflow's.
    """
    method = types.FunctionType(run.__code__, run.__globals__, "run")
    method.__qualname__ = f"{class_name}.run"  # Temporal checks the run method is the class's
    method.__annotations__ = dict(run.__annotations__)
    namespace = {
        **attributes,
        "run": workflow.run(method),
        "__qualname__": class_name,
        "__module__": base.__module__,
    }
    cls = type(class_name, (base,), namespace)
    return workflow.defn(name=name, sandboxed=False)(cls)


async def start_run(
    client: Client,
    workflow: str,
    payload: str,
    *,
    workflow_id: str | None,
    id_prefix: str,
    task_queue: str,
) -> WorkflowHandle[object, str]:
    """Start a run of the workflow type ``workflow`` on ``payload``; its handle.

    The run's result is JSON text. Without a ``workflow_id`` the run gets a fresh one,
    ``<id_prefix>-<hex>``.
    """
    return await client.start_workflow(
        workflow,
        payload,
        id=workflow_id or f"{id_prefix}-{uuid.uuid4().hex}",
        task_queue=task_queue,
        result_type=str,
    )


def check_decisions(
    decisions: str,
    pending: Mapping[str, ApprovalRequest],
    decided: Mapping[str, ApprovalDecision],
) -> None:
    """Refuse malformed decisions, or decisions on calls not waiting or decided already."""
    try:
        given = decisions_adapter().validate_json(decisions)
    except ValueError as error:
        raise ApplicationError(f"Malformed decisions: {error}") from None
    for decision in given:
        call = decision.tool_call_id
        if call not in pending:
            waiting = ", ".join(pending) or "none"
            raise ApplicationError(
                f"No call {call!r} is waiting for a decision (waiting: {waiting})."
            )
        if call in decided:
            raise ApplicationError(f"Call {call!r} is already decided.")


async def send_decisions(
    handle: WorkflowHandle[object, object], decisions: Sequence[ApprovalDecision], caller: str
) -> list[str]:
    """Send ``decisions`` as the ``decide`` update; the ids still waiting.

    Raises:
        UserError: No decision, or the workflow's validator refused them.
    """
    if not decisions:
        raise UserError(f"{caller} needs at least one ApprovalDecision.")
    payload = decisions_adapter().dump_json(list(decisions)).decode()
    return await decision_update(handle, "decide", payload)


async def decision_update(
    handle: WorkflowHandle[object, object], update: str, payload: str
) -> list[str]:
    """Send a decision ``update`` (``decide``, ``resolve``); the ids still waiting.

    Raises:
        UserError: The update's validator refused it, or the workflow has ended (or never
            existed), so nothing waits for a decision.
    """
    try:
        waiting: list[str] = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
            update, payload, result_type=list[str]
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        raise UserError(str(getattr(cause, "message", cause))) from None
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        raise UserError(
            f"Run {handle.id!r} waits for no decision: its workflow has ended ({error.message})."
        ) from None
    return waiting


async def cancel_workflow(client: Client, workflow_id: str) -> None:
    """Ask Temporal to cancel the workflow ``workflow_id``; a closed one is left as it is.

    Raises:
        UserError: No workflow has that id.
    """
    handle = client.get_workflow_handle(workflow_id)
    try:
        await handle.cancel()
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        try:
            await handle.describe()  # it exists: closed already, nothing to cancel
        except RPCError as missing:
            if missing.status != RPCStatusCode.NOT_FOUND:
                raise
            raise UserError(f"No run {workflow_id!r} on Temporal.") from None


async def cancel_as_abort(
    body: Coroutine[object, None, _T], abort: Callable[[], None], *, then_raise: bool = False
) -> _T:
    """Run a workflow's ``body`` where Temporal's cancellation never reaches it.

    Temporal cancels a workflow by cancelling its main task wherever it waits, which
    inside the loop is a model or tool call: the call would fail and the run go on. Here
    the body works in a task of its own; a cancellation calls ``abort`` (the run's own
    abort), waits for the body to end through it, and returns its value, or, with
    ``then_raise``, raises the cancellation again (the workflow ends ``Canceled``).
    """
    task = asyncio.create_task(body)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        abort()
        done = await task
        if then_raise:
            raise
        return done
