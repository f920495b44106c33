"""``RunView``: what tracing reads of a run's context, whatever the run's deps type."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from bastion.core import Message

__all__ = ["RunView"]


class RunView(Protocol):
    """The parts of a ``RunContext`` (of any deps type) that spans and headers are made of."""

    @property
    def run_id(self) -> str:
        """The run."""
        ...

    @property
    def tool_call_id(self) -> str | None:
        """The tool call the context is bound to, if any."""
        ...

    @property
    def session_id(self) -> str | None:
        """The session the run belongs to, if any."""
        ...

    @property
    def metadata(self) -> MutableMapping[str, object]:
        """The run's metadata, where a continued trace is noted."""
        ...

    @property
    def messages(self) -> Sequence[Message]:
        """The run's messages so far."""
        ...
