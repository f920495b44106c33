"""The interface every framework adapter implements: build the agents, run, stream."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from ._script import Workload

__all__ = ["Adapter", "StreamOutcome"]


@dataclass(slots=True)
class StreamOutcome:
    """What the consumer of one streamed run saw.

    Attributes:
        deltas: Text deltas the consumer received through the framework's streaming API.
        text: The run's final text output, as the framework reports it.
        last_delta_at: ``time.perf_counter()`` when the consumer received the last delta.
    """

    deltas: int = 0
    text: str = ""
    last_delta_at: float = field(default_factory=time.perf_counter)

    def saw_delta(self) -> None:
        """Record one delta received now."""
        self.deltas += 1
        self.last_delta_at = time.perf_counter()


class Adapter(ABC):
    """One framework, driven through the shared script (``benchmarks._script``).

    ``setup`` builds one agent per workload, plus one streaming agent, each on the
    framework's own fake-model mechanism; ``run`` and ``stream`` drive them. Adapters hold
    no timing or checking logic: the harness does both, identically for every framework.
    """

    name: ClassVar[str]
    """Short key used on the command line and in results (``"pydantic-ai"``)."""

    @abstractmethod
    def setup(self) -> None:
        """Build the agents; called once, before any run."""

    @abstractmethod
    async def run(self, workload: Workload) -> str:
        """Run the agent for ``workload`` to completion; return its final text output."""

    @abstractmethod
    async def stream(self) -> StreamOutcome:
        """Run the streaming agent through the framework's streaming API, counting deltas."""
