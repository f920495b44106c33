"""What runs as an agent: the one protocol of agent-likes, and the base of their run handles.

An :class:`~bastion.agent.Agent`, a ``bastion.multi.Team`` and an external agent
(``bastion.multi.external_agent``) are all :class:`AgentLike`: a name, and ``stream(input)``
returning an :class:`AgentRunHandle`. Fan-outs, teams, judges, evaluator loops and graph
nodes take any agent-like, and read nothing else of it.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

from bastion.core import AgentEvent, RunHandle

if TYPE_CHECKING:
    from ._result import RunResult

__all__ = ["AgentLike", "AgentRun", "AgentRunHandle"]

ResultT_co = TypeVar("ResultT_co", covariant=True)


class AgentRunHandle(RunHandle[AgentEvent, ResultT_co]):
    """A run of an agent-like: typed events (``agent.start`` … ``agent.end``), a ``RunResult``.

    Subclasses: :class:`~bastion.agent.AgentStream` (an agent's run) and the stream of a
    team's or an external agent's run.
    """

    __slots__ = ()

    @abstractmethod
    def abort(self, *, drain: bool = False) -> None:
        """Stop the run; it ends with status ``aborted`` (``drain``: after its current step)."""


AgentRun: TypeAlias = "AgentRunHandle[RunResult[Any]]"
"""A run of any agent-like, whatever its output type."""


class AgentLike(Protocol):
    """What a fan-out, a team, a judge, an evaluator loop or a graph node runs."""

    @property
    def name(self) -> str:
        """The agent's name (events, results, the journal)."""
        ...

    def stream(self, input: str, *, metadata: dict[str, Any] | None = None) -> AgentRun:
        """Start a run on ``input``; it starts when iteration starts."""
        ...
