"""Security: inbound sanitisation of untrusted tool output (layer L1).

The imperative-pattern catalogue, the five inbound policies and their defaults per trust
class, and the system-prompt preamble that explains the untrusted-data markers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._inbound import (
        INBOUND_POLICIES,
        INBOUND_PREAMBLE,
        STRIP_MARKER,
        TRUST_CLASS_DEFAULTS,
        UNTRUSTED_BEGIN,
        UNTRUSTED_END,
        InboundHit,
        InboundPolicy,
        InboundScan,
        default_inbound_policy,
        find_injections,
        flag_line,
        sanitize_inbound,
        wrap_untrusted,
    )
    from ._patterns import InjectionCategory, InjectionPattern, catalogue

_LAZY = {
    "INBOUND_POLICIES": "._inbound",
    "INBOUND_PREAMBLE": "._inbound",
    "STRIP_MARKER": "._inbound",
    "TRUST_CLASS_DEFAULTS": "._inbound",
    "UNTRUSTED_BEGIN": "._inbound",
    "UNTRUSTED_END": "._inbound",
    "InboundHit": "._inbound",
    "InboundPolicy": "._inbound",
    "InboundScan": "._inbound",
    "default_inbound_policy": "._inbound",
    "find_injections": "._inbound",
    "flag_line": "._inbound",
    "sanitize_inbound": "._inbound",
    "wrap_untrusted": "._inbound",
    "InjectionCategory": "._patterns",
    "InjectionPattern": "._patterns",
    "catalogue": "._patterns",
}

__all__ = [
    "INBOUND_POLICIES",
    "INBOUND_PREAMBLE",
    "InboundHit",
    "InboundPolicy",
    "InboundScan",
    "InjectionCategory",
    "InjectionPattern",
    "STRIP_MARKER",
    "TRUST_CLASS_DEFAULTS",
    "UNTRUSTED_BEGIN",
    "UNTRUSTED_END",
    "catalogue",
    "default_inbound_policy",
    "find_injections",
    "flag_line",
    "sanitize_inbound",
    "wrap_untrusted",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
