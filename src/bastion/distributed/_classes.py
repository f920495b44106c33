"""Making one workflow class per agent around a shared run method."""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow

__all__ = ["workflow_class"]


def workflow_class(
    base: type[Any],
    run: Callable[[Any, str], Awaitable[str]],
    name: str,
    class_name: str,
    attributes: dict[str, Any],
) -> type[Any]:
    """A subclass of ``base`` registered as workflow ``name``, whose run method is ``run``.

    Temporal wants a run method defined on the class itself, outside any function: the
    class is made with ``type`` around a copy of the module-level ``run``. It runs
    unsandboxed: the loop is deterministic once its clock, ids, models and tools are the
    workflow's.
    """
    method = types.FunctionType(run.__code__, run.__globals__, "run")  # pyright: ignore[reportFunctionMemberAccess]
    method.__qualname__ = f"{class_name}.run"  # Temporal checks the run method is the class's
    method.__annotations__ = dict(run.__annotations__)
    members = {
        **attributes,
        "run": workflow.run(method),
        "__qualname__": class_name,
        "__module__": base.__module__,
    }
    return workflow.defn(name=name, sandboxed=False)(type(class_name, (base,), members))
