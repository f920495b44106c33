"""Normalised entities: the values a data-flow policy follows from source to sink.

An entity is a ``"kind:value"`` string. Kinds: ``email``, ``url``, ``domain``, ``iban``,
``number`` (phone and account numbers: the digits only), ``amount`` (two decimals, the
currency dropped), ``path``. Normalising makes near-verbatim copies meet: ``GB82 WEST
1234 5698 7654 32`` and ``gb82west12345698765432`` are one IBAN, ``+44 (20) 7946-0958``
and ``442079460958`` one number, ``https://WWW.Evil.example/x/`` and
``https://www.evil.example/x`` one URL on the domain ``evil.example``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._decode import scan_view

__all__ = ["allow_keys", "entities_of_view", "extract_entities"]

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")
_URL = re.compile(r"\bhttps?://[^\s<>\"'()\[\]{}]{1,2000}")
_DIGITS = re.compile(
    r"(?P<iban>\b[a-z]{2}\d{2}(?: ?[a-z0-9]){11,30}\b)"
    r"|(?P<amount>(?:[$€£¥]|\b(?:usd|eur|gbp|chf|jpy)\b)\s?\d[\d,]{0,20}(?:\.\d{1,4})?"
    r"|\b\d[\d,]{0,20}(?:\.\d{1,4})?\s?(?:[$€£]|(?:usd|eur|gbp|chf|jpy|dollars?|euros?"
    r"|pounds?)\b))"
    r"|(?P<number>(?<![\w.])\+?\d[\d \-().]{5,30}\d(?![\w.]))"
)
_PATH = re.compile(r"(?<![\w/:])(?:~|\.{1,2})?/(?:[\w.-]{1,255}/){1,40}[\w.-]{0,255}")
# A bare domain is found from its top-level domain backwards (a literal "." to look for).
_TLD = re.compile(
    r"\.(?:com|org|net|io|co|ai|app|dev|info|biz|me|us|uk|de|fr|nl|ru|cn|xyz|online|site"
    r"|example|test)\b"
)
_HAS_DIGIT = re.compile(r"\d")
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_TRAILING = ".,;:!?'\")]}"


def _iban_valid(iban: str) -> bool:
    if not (iban.isascii() and iban.isalnum()):
        return False
    rearranged = iban[4:] + iban[:4]
    digits = "".join(str(int(c, 36)) for c in rearranged)
    return int(digits) % 97 == 1


def _iban(raw: str) -> str:
    """The IBAN in ``raw``; a trailing word the pattern took is dropped (``... 32 and``)."""
    chunks = raw.split(" ")
    while len(chunks) > 1:
        compact = "".join(chunks).upper()
        if _iban_valid(compact):
            return f"iban:{compact}"
        chunks.pop()
    compact = raw.replace(" ", "").upper()
    if _iban_valid(compact):
        return f"iban:{compact}"
    return f"number:{''.join(c for c in compact if c.isdigit())}"


def _normalise(kind: str, raw: str) -> Iterable[str]:
    if kind == "email":
        raw = raw.rstrip(_TRAILING)
        return (f"email:{raw}", f"domain:{raw.rsplit('@', 1)[1].removeprefix('www.')}")
    if kind == "url":
        raw = raw.rstrip(_TRAILING)
        rest = raw.split("://", 1)[1]
        host = rest.split("/", 1)[0].split(":", 1)[0].removeprefix("www.")
        return (f"url:{host}{rest[len(rest.split('/', 1)[0]) :].rstrip('/')}", f"domain:{host}")
    if kind == "iban":
        return (_iban(raw),)
    if kind == "amount":
        number = "".join(c for c in raw if c.isdigit() or c == ".")
        return (f"amount:{float(number):.2f}",) if number.strip(".") else ()
    if kind == "path":
        return (f"path:{raw.rstrip('/')}",) if raw.count("/") > 1 else ()
    if kind == "domain":
        return (f"domain:{raw.removeprefix('www.')}",)
    digits = "".join(c for c in raw if c.isdigit())
    return (f"number:{digits}",) if len(digits) >= 7 else ()


def extract_entities(text: str) -> set[str]:
    """The normalised entities of ``text`` (decoded first, like the injection scan)."""
    return entities_of_view(scan_view(text))


def entities_of_view(view: str) -> set[str]:
    """The normalised entities of an already decoded, lower-cased text.

    Each kind's pattern runs only when the text holds the character it needs (``@``,
    ``://``, a digit, ``/``, ``.``), so ordinary prose costs a few substring tests.
    """
    found: set[str] = set()
    if "@" in view:
        for match in _EMAIL.finditer(view):
            found.update(_normalise("email", match.group()))
    if "://" in view:
        for match in _URL.finditer(view):
            found.update(_normalise("url", match.group()))
    if _HAS_DIGIT.search(view):
        for match in _DIGITS.finditer(view):
            found.update(_normalise(match.lastgroup or "number", match.group()))
    if "/" in view:
        for match in _PATH.finditer(view):
            found.update(_normalise("path", match.group()))
    if "." in view:
        for match in _TLD.finditer(view):
            start = match.start()
            while start > 0 and view[start - 1] in _HOST_CHARS:
                start -= 1
            host = view[start : match.end()].strip(".-")
            if "." in host and "@" not in view[max(start - 1, 0) : start]:
                found.update(_normalise("domain", host))
    return found


def allow_keys(entries: Iterable[str]) -> frozenset[str]:
    """The entities an allowlist names.

    An e-mail address allows that address only (not its whole domain); a bare domain
    (``corp.example``) or ``@corp.example`` allows every address and URL on it; any other
    entry is matched by its entities, or as the literal lower-cased value (``raw:...``).
    """
    keys: set[str] = set()
    for entry in entries:
        value = entry.strip().lower().removeprefix("@")
        entities = extract_entities(value)
        emails = {e for e in entities if e.startswith("email:")}
        keys.update(emails or entities)
        keys.add(f"raw:{value}")
    return frozenset(keys)
