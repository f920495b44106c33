"""``RunState`` as JSON, for callers who keep suspended runs themselves.

The document is ``{"schema_version": N, "state": {...}}``. Every field of ``RunState``
is kept except the live exception object (its message stays in ``error``); a structured
``output`` is stored as JSON and loads back as plain JSON values. Documents of older
schema versions are upgraded on load (a corpus test keeps every released version loading).
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING

from bastion.core import UserError
from bastion.security import redact_secret_keys

from ._narrow import as_json_object
from ._state import RunState

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["RUN_STATE_SCHEMA_VERSION", "run_state_from_json", "run_state_to_json"]

RUN_STATE_SCHEMA_VERSION = 1
"""The version :func:`run_state_to_json` writes."""


@cache
def _adapter() -> TypeAdapter[RunState]:
    from pydantic import TypeAdapter

    return TypeAdapter(RunState)


def run_state_to_json(state: RunState) -> str:
    """Serialise a run's state (typically a suspended one) to JSON text.

    Values of secret-named keys in the run's metadata (``password``, ``api_key``,
    ``client_secret``...) are written as ``[REDACTED]``: keep secrets in a vault.
    """
    document = _adapter().dump_python(state, mode="json", exclude={"exception"})
    # Values under secret-named keys (``api_key``, ``password``...) never reach the text.
    document["metadata"] = redact_secret_keys(document.get("metadata") or {})
    return json.dumps(
        {"schema_version": RUN_STATE_SCHEMA_VERSION, "state": document},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def run_state_from_json(text: str | bytes) -> RunState:
    """Load a state written by :func:`run_state_to_json` (any released schema version).

    Raises:
        UserError: The text is not a run state document, or its version is newer than
            this Bastion understands.
    """
    try:
        document = as_json_object(json.loads(text))
    except ValueError as exc:
        raise UserError(f"Not a run state: invalid JSON ({exc}).") from None
    if document is None or "state" not in document:
        raise UserError("Not a run state: expected {'schema_version': ..., 'state': {...}}.")
    version = document.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise UserError(f"Not a run state: bad schema_version {version!r}.")
    if version > RUN_STATE_SCHEMA_VERSION:
        raise UserError(
            f"Run state schema_version {version} is newer than this Bastion understands "
            f"({RUN_STATE_SCHEMA_VERSION}); upgrade Bastion to load it."
        )
    from pydantic import ValidationError

    try:
        return _adapter().validate_python(document["state"])
    except ValidationError as exc:
        raise UserError(f"Not a valid run state: {exc}") from None
