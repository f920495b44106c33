"""Tool sources (MCP servers) in a workflow: listed and called by activities on the worker.

The worker holds the sources themselves (its MCP connections). The workflow holds one
:class:`ActivitySource` per source: its listing is the source activity, which returns the
worker's tools described as data (``_source_wire.py``); the workflow rebuilds each as a tool
whose calls are the tool activity, addressed ``source:<source>:<tool>``, which the worker's
source answers (``_source_worker.py``). The loop asks before every model call, as locally,
and gets the same tuple back while the description is unchanged, so the registry changes
only when the server's list does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from bastion.core import json_object
from bastion.mcp._convert import RawSchema
from bastion.mcp._naming import arguments_key
from bastion.tools import Tool

from ._proxies import proxy_tool, remote_error
from ._source_wire import PREFIX, WireTool, tools_adapter

if TYPE_CHECKING:
    from ._proxies import Activities

__all__ = ["ActivitySource"]


def _rebuild(wire: WireTool, address: str) -> Tool:
    """The workflow's tool of ``wire``; its function is replaced by the activity's."""

    async def on_the_worker(*_: object, **__: object) -> object:
        raise AssertionError(f"{address} runs as the tool activity")  # replaced below

    return Tool(
        name=address,
        description=wire.description,
        function=on_the_worker,
        validator=RawSchema(json_object(wire.parameters, f"{address}'s parameters")),
        takes_ctx=wire.takes_ctx,
        side_effect_class=wire.side_effect_class,
        idempotency_key=arguments_key if wire.idempotent else None,
        needs_approval=wire.needs_approval,
        execution_mode=wire.execution_mode,
        defer_loading=wire.defer_loading,
        sensitivity=wire.sensitivity,
        trust_class=wire.trust_class,
        label=wire.label,
        timeout=wire.timeout,
        max_result_tokens=wire.max_result_tokens,
        output_schema=None
        if wire.output_schema is None
        else json_object(wire.output_schema, f"{address}'s output schema"),
        inbound_sanitization=wire.inbound_sanitization,
        oracle_key=wire.oracle_key,
        source=wire.source,
        secrets_allowed=tuple(wire.secrets_allowed),
        kind=wire.kind,
    )


class ActivitySource:
    """A tool source of the workflow: each listing is the source activity."""

    def __init__(self, name: str, activities: Activities) -> None:
        self.name = name
        self._activities = activities
        self._text: str | None = None
        self._tools: tuple[Tool, ...] = ()

    async def list_tools(self) -> Sequence[Tool]:
        """The worker's source's tools, the same tuple while their description is unchanged.

        Raises:
            Exception: The listing failed on the worker (named as the worker's error was).
        """
        activities = self._activities
        try:
            text = await workflow.execute_activity(
                activities.source,
                args=[self.name],
                result_type=str,
                start_to_close_timeout=activities.timeout,
                retry_policy=activities.no_retry,  # locally, one attempt per step
                summary=self.name,
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError):
                raise remote_error(cause.type or "Exception")(cause.message) from error
            raise
        if text != self._text:
            self._tools = tuple(self._proxy(w) for w in tools_adapter().validate_json(text))
            self._text = text
        return self._tools

    def _proxy(self, wire: WireTool) -> Tool:
        address = f"{PREFIX}{self.name}:{wire.name}"
        return replace(proxy_tool(_rebuild(wire, address), self._activities), name=wire.name)

    async def aclose(self) -> None:
        """Nothing to release: the worker holds the source."""
