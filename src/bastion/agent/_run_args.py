"""The keyword arguments a run is started with, as typed dicts for ``**kwargs`` signatures.

``Agent.run_sync(input, **kwargs)`` passes :class:`RunArgs` on to ``Agent.run``;
``Agent.drive(input, **options)`` passes :class:`DriveOptions` on to ``Agent.stream``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypedDict

from bastion.core._context import DepsT

if TYPE_CHECKING:
    from bastion.core import Message
    from bastion.tools import Directive

    from ._config import RunConfig

__all__ = ["DriveOptions", "RunArgs"]


class DriveOptions(TypedDict, total=False):
    """The run options ``Agent.drive`` takes besides input, resume, directive and deps."""

    message_history: Sequence[Message] | None
    session_id: str | None
    user_id: str | None
    tenant_id: str | None
    metadata: dict[str, Any] | None


class RunArgs(DriveOptions, Generic[DepsT], total=False):
    """The keyword arguments of ``Agent.run`` (what ``Agent.run_sync`` passes on)."""

    deps: DepsT | None
    directive: Directive | None
    config: RunConfig | None
