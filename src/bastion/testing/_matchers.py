"""Value matchers for trajectory assertions: ``ANY``, ``contains``, ``regex``, ``where``.

An expected value is either a plain value (compared with ``==``; dicts and lists are
compared item by item, so they may hold matchers) or a :class:`Matcher`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, cast

from bastion.core import UserError

__all__ = ["ANY", "Matcher", "contains", "mismatch", "regex", "show", "where"]


class Matcher:
    """Decides whether an actual value is the expected one; shown as ``description``."""

    __slots__ = ("_test", "description")

    def __init__(self, test: Callable[[Any], bool], description: str) -> None:
        self._test = test
        self.description = description

    def matches(self, value: object) -> bool:
        """Whether ``value`` matches; a value of the wrong shape for the test does not.

        Only the errors a wrong shape raises (a missing key or attribute, a wrong type or
        value) mean "no match"; any other error in the test itself propagates.
        """
        try:
            return bool(self._test(value))
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return False

    def __repr__(self) -> str:
        return self.description


ANY = Matcher(lambda _: True, "ANY")
"""Matches any value (the argument or result must still be present)."""


def contains(needle: object, *, ignore_case: bool = False) -> Matcher:
    """Matches a string holding ``needle``, or a list / dict holding it as item / key."""
    if ignore_case and not isinstance(needle, str):
        raise UserError(f"contains({needle!r}, ignore_case=True) needs a string.")

    def test(value: object) -> bool:
        if isinstance(needle, str) and ignore_case:
            return isinstance(value, str) and needle.casefold() in value.casefold()
        return isinstance(value, Container) and needle in value

    suffix = ", ignore_case=True" if ignore_case else ""
    return Matcher(test, f"contains({needle!r}{suffix})")


def regex(pattern: str | re.Pattern[str]) -> Matcher:
    """Matches a string in which ``pattern`` is found (``re.search``)."""
    compiled = re.compile(pattern)
    return Matcher(
        lambda value: isinstance(value, str) and compiled.search(value) is not None,
        f"regex({compiled.pattern!r})",
    )


def where(predicate: Callable[[Any], bool], description: str | None = None) -> Matcher:
    """Matches a value for which ``predicate`` returns true."""
    if not callable(predicate):
        raise UserError(f"where() needs a function of the value, got {predicate!r}.")
    name = getattr(predicate, "__name__", "predicate")
    return Matcher(predicate, description or f"where({name})")


def mismatch(expected: object, actual: object, path: str = "") -> str | None:
    """Why ``actual`` is not ``expected`` (``None`` when it is), naming the place."""
    where_ = f" at {path}" if path else ""
    if isinstance(expected, Matcher):
        ok = expected.matches(actual)
        return None if ok else f"expected {expected!r}{where_}, got {show(actual)}"
    wanted_items, got_items = _as_mapping(expected), _as_mapping(actual)
    if wanted_items is not None and got_items is not None:
        return _mapping_mismatch(wanted_items, got_items, path)
    wanted, got = _as_list(expected), _as_list(actual)
    if wanted is not None and got is not None:
        if len(wanted) != len(got):
            return f"expected {len(wanted)} item(s){where_}, got {show(actual)}"
        for index, (item, value) in enumerate(zip(wanted, got, strict=True)):
            reason = mismatch(item, value, f"{path}[{index}]")
            if reason is not None:
                return reason
        return None
    return None if expected == actual else f"expected {show(expected)}{where_}, got {show(actual)}"


def _mapping_mismatch(
    expected: Mapping[str, object], actual: Mapping[str, object], path: str
) -> str | None:
    for key, value in expected.items():
        place = f"{path}.{key}" if path else str(key)
        if key not in actual:
            return f"missing {place}"
        reason = mismatch(value, actual[key], place)
        if reason is not None:
            return reason
    extra = sorted(str(k) for k in actual.keys() - expected.keys())
    if extra and path:  # nested objects are compared whole
        return f"unexpected {', '.join(f'{path}.{k}' for k in extra)}"
    return None


def _as_mapping(value: object) -> Mapping[str, object] | None:
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else None


def _as_list(value: object) -> Sequence[object] | None:
    return cast("Sequence[object]", value) if isinstance(value, (list, tuple)) else None


def show(value: object, limit: int = 60) -> str:
    """A short ``repr`` for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "…" + text[-3:]
