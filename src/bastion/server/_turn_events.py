"""The events of a served session's turns, recorded like a served run's.

Each turn's run is tenant-scoped (the session's ``tenant_id``) and its events pass the
session's event bus, which records them here, so ``/runs/{id}/events`` follows a turn too.
"""

from __future__ import annotations

from bastion.core import AgentEvent, Clock, EventBus

from ._events import EventLog, Hub, LoggedEvent
from ._recorder import Recorder

__all__ = ["TurnEvents"]


class TurnEvents:
    """The recorders of a served session's runs, fed by :attr:`bus` (one per run segment)."""

    __slots__ = ("_clock", "_hub", "_log", "_recorders", "bus")

    def __init__(self, log: EventLog, hub: Hub, clock: Clock) -> None:
        self._log = log
        self._hub = hub
        self._clock = clock
        self._recorders: dict[str, Recorder] = {}
        self.bus = EventBus().on("*", self._record)
        """The bus a served session gives its turns' runs (``Session(event_bus=...)``)."""

    def _record(self, event: AgentEvent) -> None:
        recorder = self._recorders.get(event.run_id)
        if recorder is None:
            recorder = Recorder(event.run_id, self._log, self._hub, self._clock)
            self._recorders[event.run_id] = recorder
        recorder.add(LoggedEvent.of(event))
        if event.type == "agent.end":  # this segment of the run is over
            del self._recorders[event.run_id]
            recorder.close()
