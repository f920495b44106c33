"""The activity functions one agent's workflows call, as a worker registers them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._activities import model_activity, tool_activity
from ._code_mode import worker_tools
from ._compaction import activity_models
from ._source_worker import source_activity
from ._tool_remote import WorkerSide

if TYPE_CHECKING:
    from bastion.agent import RunConfig

    from ._activities import ActivityFunction
    from ._proxies import Activities

__all__ = ["agent_activities"]


def agent_activities(
    own: Activities, config: RunConfig, beat: float | None
) -> list[ActivityFunction]:
    """The model, tool and tool-source activities of agent ``config`` under ``own``'s names.

    The tool activity runs the worker's copy of each tool; what a tool's ``RunContext``
    takes from the worker (deps, runtime, sandbox) comes from that copy too.
    """
    sources = config.tool_sources.sources
    side = WorkerSide(deps=config.deps, runtime=config.runtime, sandbox=config.sandbox)
    return [
        model_activity(own.model, activity_models(config), beat),
        tool_activity(own.tool, worker_tools(config), beat, side, sources),
        source_activity(own.source, sources),
    ]
