"""What a graph execution returns, and the errors it raises."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bastion.core import RunError, RunFailed

from ._signals import GraphStatus

__all__ = ["Aborted", "GraphResult", "NodeInterrupt"]


class Aborted(RunError):
    """The execution was aborted: work still pending raises this."""


class NodeInterrupt(Exception):
    """Raise it in a node to ask the governor's interrupt handler for a decision.

    ``retry`` runs the node again, ``result`` makes the decision's value its output,
    ``deny`` fails the node; without a handler the node (and the execution) is suspended.
    """

    def __init__(self, payload: object = None, *, reason: str = "") -> None:
        super().__init__(reason or "the node asks for a decision")
        self.payload = payload
        self.reason = reason


def _no_outputs() -> dict[str, object]:
    return {}


def _no_errors() -> dict[str, BaseException]:
    return {}


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphResult:
    """The outcome of one graph execution.

    Attributes:
        graph: The graph's key.
        graph_id: This execution's id (``<graph key>#<execution id>``).
        execution_id: The id its checkpoints are saved under.
        status: ``completed``; ``failed`` (a node failed; the others still ran);
            ``suspended`` (a node waits for a decision); ``aborted``.
        output: The output node's last output (see ``Graph(output=...)``).
        outputs: Every node's last output, by node key, in finishing order.
        errors: The error of each failed or suspended node, by node key.
        rounds: How many rounds ran (1 for a graph without cycles).
        stopped: Nodes whose next round a policy or ``max_rounds`` refused.
    """

    graph: str
    graph_id: str
    execution_id: str
    status: GraphStatus
    output: object = None
    outputs: Mapping[str, object] = field(default_factory=_no_outputs)
    errors: Mapping[str, BaseException] = field(default_factory=_no_errors)
    rounds: int = 1
    stopped: tuple[str, ...] = ()

    def raise_for_status(self) -> GraphResult:
        """Return self when completed; otherwise raise :class:`RunFailed`.

        Raises:
            RunFailed: Naming the failed nodes, chained to the first error.
        """
        if self.status == "completed":
            return self
        detail = "; ".join(f"{k}: {e!r}" for k, e in self.errors.items()) or self.status
        first = next(iter(self.errors.values()), None)
        raise RunFailed(
            f"Graph {self.graph_id} {self.status}: {detail}", code=f"graph_{self.status}"
        ) from first
