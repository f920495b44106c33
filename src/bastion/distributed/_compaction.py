"""Context compaction in a workflow: the summarizer's calls are model activities.

The loop compacts as it does locally (the same trigger, the same token counts, the same
spans); only the summarizer differs: it is an :class:`ActivityModel` on the worker's own
summarizer, so a summary is asked once, recorded in the history, and read back on replay.
The model activity serves the agent's models, then the summarizer when it is none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion.agent._context import ContextKeeper

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bastion.agent import RunConfig
    from bastion.core import Model

__all__ = ["activity_models", "summarizer_index", "workflow_keeper"]


def activity_models(config: RunConfig) -> tuple[Model, ...]:
    """The models the model activity serves, by index: the agent's, then its summarizer."""
    keeper = config.context
    if keeper is None or summarizer_index(config) < len(config.models):
        return config.models
    return (*config.models, keeper.summarizer)


def summarizer_index(config: RunConfig) -> int:
    """The summarizer's index among :func:`activity_models` (it may be the agent's model)."""
    keeper = config.context
    assert keeper is not None  # only asked of an agent that compacts
    for index, model in enumerate(config.models):
        if model is keeper.summarizer:
            return index
    return len(config.models)


def workflow_keeper(config: RunConfig, models: Sequence[Model]) -> ContextKeeper | None:
    """The agent's compaction settings, its summarizer the activity model of the same index.

    ``models`` are the workflow's activity models, one for each of :func:`activity_models`.
    """
    keeper = config.context
    if keeper is None:
        return None
    summarizer = models[summarizer_index(config)]
    return ContextKeeper(keeper.config, models[0], summarizer, f"Agent {config.name!r}")
