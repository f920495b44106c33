"""Secret-named keys: redacted wherever a run's state is serialised.

A value stored under a key such as ``password``, ``api_key``, ``client_secret`` or
``x-auth-token`` is replaced by :data:`REDACTED` in a serialised run state (the journal's
checkpoints), whatever the nesting. Keep secrets in the vault: a value redacted here is
gone from the stored state.
"""

from __future__ import annotations

import re
from typing import cast

__all__ = ["REDACTED", "is_secret_key", "redact_secret_keys"]

REDACTED = "[REDACTED]"
"""What a secret-named key's value becomes."""

_SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey"
    r"|access[_\-]?key|private[_\-]?key|secret[_\-]?key|auth|authorization|credentials?"
    r"|cookie|bearer)$",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """True when ``key`` names a secret (``password``, ``stripe_api_key``, ``X-Auth-Token``)."""
    return bool(_SECRET_KEY.search(key))


def redact_secret_keys(value: object) -> object:
    """A copy of ``value`` (JSON-like) with the values of secret-named keys redacted."""
    if isinstance(value, dict):
        mapping = cast("dict[object, object]", value)
        return {
            key: REDACTED
            if isinstance(key, str) and is_secret_key(key) and item is not None
            else redact_secret_keys(item)
            for key, item in mapping.items()
        }
    if isinstance(value, list):
        return [redact_secret_keys(item) for item in cast("list[object]", value)]
    return value
