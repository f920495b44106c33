"""Reading a finished workflow's history in the tests."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory


def scheduled(history: WorkflowHistory) -> list[str]:
    """The kinds (``model``, ``tool``, ``source``) of the activities scheduled, in order."""
    attributes: list[Any] = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return [a.activity_type.name.rpartition(".")[2] for a in attributes]
