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

__all__ = ["allow_keys", "extract_entities"]

_ENTITY = re.compile(
    r"(?P<email>(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+)"
    r"|(?P<url>\bhttps?://[^\s<>\"'()\[\]{}]{1,2000})"
    r"|(?P<iban>\b[a-z]{2}\d{2}(?: ?[a-z0-9]){11,30}\b)"
    r"|(?P<amount>(?:[$€£¥]|\b(?:usd|eur|gbp|chf|jpy)\b)\s?\d[\d,]{0,20}(?:\.\d{1,4})?"
    r"|\b\d[\d,]{0,20}(?:\.\d{1,4})?\s?(?:[$€£]|(?:usd|eur|gbp|chf|jpy|dollars?|euros?"
    r"|pounds?)\b))"
    r"|(?P<path>(?<![\w/])(?:~|\.{1,2})?/(?:[\w.-]{1,255}/){1,40}[\w.-]{0,255})"
    r"|(?P<domain>\b(?:[a-z0-9-]{1,63}\.){1,10}(?:com|org|net|io|co|ai|app|dev|info|biz|me"
    r"|us|uk|de|fr|nl|ru|cn|xyz|online|site|example|test)\b)"
    r"|(?P<number>(?<![\w.])\+?\d[\d \-().]{5,30}\d(?![\w.]))"
)
_TRAILING = ".,;:!?'\")]}"


def _iban_valid(iban: str) -> bool:
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
    compact = raw.upper()
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
    found: set[str] = set()
    for match in _ENTITY.finditer(scan_view(text)):
        kind = match.lastgroup
        if kind is not None:
            found.update(_normalise(kind, match.group()))
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
