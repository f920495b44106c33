r"""The protocol guard: control characters escaped where text crosses into the model's context.

Text a tool, an MCP server or a sub-agent returns may carry characters that mean something
to a terminal, a renderer or a tokenizer but nothing to a reader: ANSI escape sequences
that repaint a terminal, bidirectional overrides that show code in another order than it
runs, invisible Unicode tags that spell a hidden instruction in ASCII, zero-width joiners,
stray C0/C1 controls and line separators that end a line where a protocol does not expect
it. :class:`ProtocolGuard` writes each one as a visible escape (``\x1b``, ``\u202e``,
``\U000e0041``), so what reaches the model, the journal and any terminal shows that the
character was there and cannot act. Newline, carriage return and tab are kept.

:data:`CONTROL_ESCAPES` is the catalogue: one named class of characters per entry; a guard
escapes the classes it is given (all by default).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from bastion.core import UserError

__all__ = ["CONTROL_ESCAPES", "Escaped", "ProtocolGuard"]

CONTROL_ESCAPES: Final[dict[str, str]] = {
    "ansi": "\x1b",
    "c0": "\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f",
    "c1": "\x80-\x9f",
    "bidi": "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069",
    "invisible": "\u200b-\u200d\u2060-\u2064\ufeff\u180e",
    "tags": "\U000e0000-\U000e007f",
    "separators": "\u2028\u2029",
}
"""Each class of escaped characters, as a regular-expression character set.

- ``ansi``: ESC, which starts every terminal control sequence (colours, cursor moves,
  window titles, hyperlinks); the rest of a sequence is plain text once ESC is escaped.
- ``c0``: the other C0 controls and DEL (newline, carriage return and tab are kept).
- ``c1``: the C1 controls (U+0080 to U+009F), which some terminals obey like ESC sequences.
- ``bidi``: bidirectional marks, embeddings, overrides and isolates ("Trojan Source").
- ``invisible``: zero-width spaces and joiners, word joiner, invisible operators, BOM.
- ``tags``: Unicode tag characters (U+E0000 to U+E007F), invisible but read by models as
  ASCII, the carrier of "ASCII smuggling".
- ``separators``: the Unicode line and paragraph separators.
"""


@dataclass(frozen=True, slots=True)
class Escaped:
    """What the guard made of a text.

    Attributes:
        text: The text with every guarded character written as an escape.
        counts: How many characters of each class were escaped (only classes found).
    """

    text: str
    counts: dict[str, int] = field(default_factory=dict[str, int])

    @property
    def total(self) -> int:
        """Characters escaped, over every class."""
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True, init=False)
class ProtocolGuard:
    """Escapes the control characters of the given classes (all of :data:`CONTROL_ESCAPES`).

    Example::

        Agent(..., security=SecurityConfig(protocol_guard=ProtocolGuard()))

    Raises:
        UserError: A class is not in :data:`CONTROL_ESCAPES`, or none is given.
    """

    classes: frozenset[str]
    _pattern: re.Pattern[str]
    _class_of: dict[str, str]

    def __init__(self, classes: Iterable[str] | None = None) -> None:
        chosen = frozenset(CONTROL_ESCAPES if classes is None else classes)
        if isinstance(classes, str):
            raise UserError(
                f"ProtocolGuard classes must be a collection of names, got {classes!r}."
            )
        unknown = sorted(chosen - CONTROL_ESCAPES.keys())
        if unknown or not chosen:
            raise UserError(
                f"ProtocolGuard: unknown control-character class(es) {unknown!r}; "
                f"use some of {sorted(CONTROL_ESCAPES)!r}."
                if unknown
                else "ProtocolGuard needs at least one control-character class."
            )
        sets = {name: CONTROL_ESCAPES[name] for name in sorted(chosen)}
        object.__setattr__(self, "classes", chosen)
        object.__setattr__(self, "_pattern", re.compile("[" + "".join(sets.values()) + "]"))
        object.__setattr__(self, "_class_of", {name: f"[{chars}]" for name, chars in sets.items()})

    def needs(self, text: str) -> bool:
        """Whether ``text`` holds any guarded character (one regex scan)."""
        return self._pattern.search(text) is not None

    def escape(self, text: str) -> Escaped:
        """``text`` with every guarded character written as a visible escape."""
        counts: dict[str, int] = {}
        classes = self._class_of

        def visible(match: re.Match[str]) -> str:
            char = match.group()
            for name, chars in classes.items():
                if re.fullmatch(chars, char):
                    counts[name] = counts.get(name, 0) + 1
                    break
            return _escape(char)

        return Escaped(text=self._pattern.sub(visible, text), counts=counts)


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
