"""The secrets vault: secrets by name, revealed only inside the tool calls allowed them.

A :class:`Vault` maps names to sources (:func:`env_secret`, :func:`file_secret`,
:func:`callable_secret`); each reveal reads the source again (``ttl`` caches it), so a
rotated secret is used without a restart. A tool names the secrets it may use
(``tool(..., secrets_allowed=["stripe"])``) and, while it runs, reads one with
``SecretRef("stripe").reveal()``. The executor opens a :class:`SecretScope` around each
call; outside one, or for a name the tool is not allowed, ``reveal`` raises
:class:`SecretAccessError` naming the secret, never its value.

Every value the vault ever revealed is redacted (``[secret:<name>]``) from what the call
returns (its result and any error message) before the model, the events, the journal,
exports or traces see it, so a tool that echoes its key leaks nothing.
"""

from __future__ import annotations

import contextvars
import dataclasses
import os
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar, cast

from bastion.core import BastionError, UserError

__all__ = [
    "SecretAccessError",
    "SecretInheritance",
    "SecretRef",
    "SecretScope",
    "SecretSource",
    "Vault",
    "callable_secret",
    "env_secret",
    "file_secret",
]

_T = TypeVar("_T")

_MIN_REDACTED = 4  # shorter values would redact ordinary text


class SecretAccessError(BastionError):
    """A secret was asked for outside a tool call allowed it, or does not exist."""


@dataclass(kw_only=True, slots=True, frozen=True)
class SecretSource:
    """Where a secret's value comes from (read on every reveal)."""

    describe: str
    read: Callable[[], str]


def env_secret(variable: str) -> SecretSource:
    """A secret read from the environment variable ``variable``."""

    def read() -> str:
        value = os.environ.get(variable)
        if value is None:
            raise SecretAccessError(f"The environment variable {variable!r} is not set.")
        return value

    return SecretSource(describe=f"env:{variable}", read=read)


def file_secret(path: str | os.PathLike[str]) -> SecretSource:
    """A secret read from a file (surrounding whitespace stripped)."""
    where = Path(path)

    def read() -> str:
        try:
            return where.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SecretAccessError(
                f"The secret file {str(where)!r} cannot be read: {exc.strerror}."
            ) from None

    return SecretSource(describe=f"file:{where}", read=read)


def callable_secret(function: Callable[[], str], describe: str = "callable") -> SecretSource:
    """A secret returned by ``function`` (a secrets manager client, for example)."""
    return SecretSource(describe=describe, read=function)


class Vault:
    """Secrets by name.

    Args:
        secrets: Name to source; a plain string is the name of an environment variable.
        ttl: Seconds a read value is reused (``0``: read on every reveal).
    """

    __slots__ = ("_cache", "_revealed", "_sources", "ttl")

    def __init__(self, secrets: Mapping[str, SecretSource | str], *, ttl: float = 0.0) -> None:
        if ttl < 0:
            raise UserError(f"Vault ttl must be >= 0, got {ttl!r}.")
        sources: dict[str, SecretSource] = {}
        for name, source in secrets.items():
            if not name:
                raise UserError("A secret needs a non-empty name.")
            sources[name] = env_secret(source) if isinstance(source, str) else source
        self._sources = sources
        self._cache: dict[str, tuple[float, str]] = {}
        self._revealed: dict[str, str] = {}  # value -> name, for redaction
        self.ttl = ttl

    @property
    def names(self) -> tuple[str, ...]:
        """The secrets' names."""
        return tuple(self._sources)

    def check(self, names: Sequence[str], owner: str) -> None:
        """Raise :class:`UserError` if any of ``names`` is not in the vault."""
        missing = [n for n in names if n not in self._sources]
        if missing:
            raise UserError(
                f"{owner} is allowed secret(s) {', '.join(map(repr, missing))} that the vault "
                f"does not hold (it holds: {', '.join(map(repr, self._sources)) or 'none'})."
            )

    def reveal(self, name: str) -> str:
        """The current value of ``name`` (only :class:`SecretScope` calls this)."""
        source = self._sources.get(name)
        if source is None:
            raise SecretAccessError(f"The vault holds no secret named {name!r}.")
        now = time.monotonic()
        cached = self._cache.get(name)
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        value = source.read()
        if self.ttl:
            self._cache[name] = (now, value)
        if len(value) >= _MIN_REDACTED:
            self._revealed[value] = name
        return value

    def redact(self, text: str) -> str:
        """``text`` with every value this vault revealed replaced by ``[secret:<name>]``."""
        if not self._revealed:
            return text
        # A copy: a tool in a worker thread may reveal a value while this runs.
        for value, name in tuple(self._revealed.items()):
            if value in text:
                text = text.replace(value, f"[secret:{name}]")
        return text

    def unfinished_tail(self, text: str) -> int:
        """How many characters at the end of ``text`` start a revealed value but do not finish it.

        A stream of pieces holds that many back until the next piece shows whether the value
        completes (and is then redacted whole) or not.
        """
        longest = 0
        for value in tuple(self._revealed):  # a copy: a worker thread may reveal meanwhile
            longest = max(longest, _open_prefix(text, value))
        return longest

    def redact_within(self, value: _T) -> _T:
        """``value`` with every revealed value redacted from the strings it holds.

        Walks dataclass instances (an event, a nested sub-agent event), lists, tuples and
        dicts; returns ``value`` itself when nothing in it changed.
        """
        if not self._revealed:
            return value
        return cast("_T", _redact_within(value, self.redact))  # the same shape, redacted

    def subset(self, names: Sequence[str]) -> Vault:
        """A vault holding only ``names`` (the same sources, so rotation still applies)."""
        self.check(names, "A sub-vault")
        child = Vault({n: self._sources[n] for n in names}, ttl=self.ttl)
        child._revealed = self._revealed  # one redaction set: a child's reveals are scrubbed too
        return child

    def snapshot(self, names: Sequence[str]) -> Vault:
        """A vault holding the current values of ``names`` (no rotation)."""
        values = {n: self.reveal(n) for n in names}
        child = Vault({n: callable_secret(_constant(v), "forwarded") for n, v in values.items()})
        child._revealed = self._revealed
        return child


def _open_prefix(text: str, value: str) -> int:
    """Length of the longest end of ``text`` that is a proper prefix of ``value`` (or 0)."""
    first = value[0]
    i = text.find(first, max(0, len(text) - len(value) + 1))
    while i != -1:
        if value.startswith(text[i:]):
            return len(text) - i
        i = text.find(first, i + 1)
    return 0


def _redact_within(value: object, redact: Callable[[str], str]) -> object:
    if isinstance(value, str):
        return redact(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: new
            for f in dataclasses.fields(value)
            if f.init and (new := _redact_within(old := getattr(value, f.name), redact)) is not old
        }
        return dataclasses.replace(value, **changes) if changes else value
    if isinstance(value, list | tuple):
        items = cast("list[object] | tuple[object, ...]", value)
        new_items = [_redact_within(item, redact) for item in items]
        if all(a is b for a, b in zip(new_items, items, strict=True)):
            return items
        return new_items if isinstance(items, list) else tuple(new_items)
    if isinstance(value, dict):
        mapping = cast("dict[object, object]", value)
        new_map = {k: _redact_within(v, redact) for k, v in mapping.items()}
        return new_map if any(new_map[k] is not v for k, v in mapping.items()) else mapping
    return value


def _constant(value: str) -> Callable[[], str]:
    return lambda: value


@dataclass(kw_only=True, slots=True, frozen=True)
class SecretInheritance:
    """What a sub-agent gets of its parent's secrets.

    Modes:
        ``inherit``: the parent's vault, limited to ``names`` (default: none at all);
        ``forward``: the values of ``names`` as they are when the sub-agent starts;
        ``isolated``: nothing of the parent's; the sub-agent uses ``own`` only.
    """

    mode: Literal["inherit", "forward", "isolated"] = "inherit"
    names: tuple[str, ...] = ()
    own: Vault | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("inherit", "forward", "isolated"):
            raise UserError(
                "SecretInheritance.mode must be 'inherit', 'forward' or 'isolated', "
                f"got {self.mode!r}."
            )
        if self.mode == "isolated" and self.names:
            raise UserError(
                "SecretInheritance(mode='isolated') takes no names: use own=Vault(...)."
            )

    def child_vault(self, parent: Vault | None) -> Vault | None:
        """The sub-agent's vault."""
        if self.mode == "isolated" or parent is None or not self.names:
            return self.own
        if self.mode == "forward":
            return self.own if not self.names else parent.snapshot(self.names)
        return parent.subset(self.names)


_SCOPE: contextvars.ContextVar[SecretScope | None] = contextvars.ContextVar(
    "bastion_secret_scope", default=None
)


@dataclass(kw_only=True, slots=True)
class SecretScope:
    """The secrets one tool call may reveal (opened by the executor around the call)."""

    vault: Vault
    tool: str
    allowed: frozenset[str]
    used: list[str] = field(default_factory=list[str])

    @contextmanager
    def active(self) -> Generator[SecretScope]:
        """Make this the scope of the current call (and of threads it starts from here)."""
        token = _SCOPE.set(self)
        try:
            yield self
        finally:
            _SCOPE.reset(token)

    def reveal(self, name: str) -> str:
        """The value of ``name``, if this call may have it."""
        if name not in self.allowed:
            raise SecretAccessError(
                f"Tool {self.tool!r} may not use secret {name!r}: add it to the tool's "
                "secrets_allowed."
            )
        value = self.vault.reveal(name)
        if name not in self.used:
            self.used.append(name)
        return value


@dataclass(slots=True, frozen=True)
class SecretRef:
    """A secret by name; :meth:`reveal` it inside a tool call allowed it."""

    name: str

    def reveal(self) -> str:
        """The secret's current value.

        Raises:
            SecretAccessError: Outside a tool call, or the tool is not allowed this secret.
        """
        scope = _SCOPE.get()
        if scope is None:
            raise SecretAccessError(
                f"Secret {self.name!r} can only be revealed inside a tool call allowed it."
            )
        return scope.reveal(self.name)

    def __repr__(self) -> str:
        return f"SecretRef({self.name!r})"
