"""Agents composed: teams, fan-out, sub-agents, external agents, evaluator-optimizer.

One layer above the single agent (:mod:`bastion.agent`): everything here builds on
``Agent`` and its run loop, and nothing below imports it. The names load on first use, so
``from bastion.multi import as_tool`` does not load teams or external agents.
"""

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._as_tool import as_tool
    from ._evaluator import EvaluatorResult, Iteration, evaluator_optimizer
    from ._external import ExternalAgent, ExternalContext, ExternalOutput, external_agent
    from ._fanout_api import fan_out, fan_out_stream
    from ._fanout_stream import FanOutStream
    from ._fanout_types import (
        ChildBudget,
        ChildResult,
        FanOutChild,
        FanOutChildEndEvent,
        FanOutEvent,
        FanOutMergedEvent,
        FanOutResult,
        FanOutSpawnedEvent,
    )
    from ._judge import Candidate, Judge, Pick
    from ._merge import Concat, FirstSuccess
    from ._merge_guard import GuardReport, MergeGuard, TrustScore
    from ._rubrics import Evaluation, FreeForm, LLMJudge
    from ._task import Subagents, SubagentSpec, subagents
    from ._team import Team, TeamMode

_LAZY = {
    "as_tool": "._as_tool",
    "EvaluatorResult": "._evaluator",
    "Iteration": "._evaluator",
    "evaluator_optimizer": "._evaluator",
    "ExternalAgent": "._external",
    "ExternalContext": "._external",
    "ExternalOutput": "._external",
    "external_agent": "._external",
    "fan_out": "._fanout_api",
    "fan_out_stream": "._fanout_api",
    "FanOutStream": "._fanout_stream",
    "ChildBudget": "._fanout_types",
    "ChildResult": "._fanout_types",
    "FanOutChild": "._fanout_types",
    "FanOutChildEndEvent": "._fanout_types",
    "FanOutEvent": "._fanout_types",
    "FanOutMergedEvent": "._fanout_types",
    "FanOutResult": "._fanout_types",
    "FanOutSpawnedEvent": "._fanout_types",
    "Candidate": "._judge",
    "Judge": "._judge",
    "Pick": "._judge",
    "Concat": "._merge",
    "FirstSuccess": "._merge",
    "GuardReport": "._merge_guard",
    "MergeGuard": "._merge_guard",
    "TrustScore": "._merge_guard",
    "Evaluation": "._rubrics",
    "FreeForm": "._rubrics",
    "LLMJudge": "._rubrics",
    "SubagentSpec": "._task",
    "Subagents": "._task",
    "subagents": "._task",
    "Team": "._team",
    "TeamMode": "._team",
}

__all__ = [
    "Candidate",
    "ChildBudget",
    "ChildResult",
    "Concat",
    "Evaluation",
    "EvaluatorResult",
    "ExternalAgent",
    "ExternalContext",
    "ExternalOutput",
    "FanOutChild",
    "FanOutChildEndEvent",
    "FanOutEvent",
    "FanOutMergedEvent",
    "FanOutResult",
    "FanOutSpawnedEvent",
    "FanOutStream",
    "FirstSuccess",
    "FreeForm",
    "GuardReport",
    "Iteration",
    "Judge",
    "LLMJudge",
    "MergeGuard",
    "Pick",
    "SubagentSpec",
    "Subagents",
    "Team",
    "TeamMode",
    "TrustScore",
    "as_tool",
    "evaluator_optimizer",
    "external_agent",
    "fan_out",
    "fan_out_stream",
    "subagents",
]

__getattr__ = lazy_attributes(__name__, _LAZY)
