"""Where tools execute: the ``Runtime`` protocol, its results, and the sandbox configuration.

The protocol lives in the core so that ``RunContext`` can carry a runtime and the tool
executor can choose one per call without depending on the implementations
(``bastion.runtimes``: local process, bubblewrap sandbox; ``bastion.testing``: in memory).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from ._errors import RunError, UserError

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DirEntry",
    "ExecResult",
    "FsAccess",
    "Runtime",
    "RuntimeAccessError",
    "SandboxConfig",
    "SandboxSetting",
    "call_sandbox",
    "resolve_sandbox",
]

DEFAULT_MAX_OUTPUT_BYTES = 1_048_576
"""Bytes of stdout (and, separately, of stderr) an ``exec`` keeps: 1 MiB."""

EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]


class RuntimeAccessError(RunError):
    """A runtime refused a path or a command: it would leave the work dir or break a limit.

    Built-in tools turn it into a ``sandbox_violation`` tool error the model reads.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecResult:
    """What a command did.

    Attributes:
        stdout: Standard output, decoded as UTF-8 (invalid bytes replaced), cut at the
            runtime's output cap.
        stderr: Standard error, likewise.
        exit_code: The exit status; ``128 + n`` when a signal ``n`` ended the command
            (137: killed, e.g. by the timeout or the CPU limit), as a shell reports it.
        timed_out: The wall-clock timeout expired and the command's processes were killed.
        stdout_bytes: Bytes the command wrote to stdout, including any cut off.
        stderr_bytes: Bytes the command wrote to stderr, including any cut off.
        truncated: Part of stdout or stderr was cut off at the cap.
        duration: Seconds from start to exit.
    """

    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0 in time."""
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True, slots=True, kw_only=True)
class DirEntry:
    """One entry of a directory listing.

    Attributes:
        name: The entry's name inside the directory.
        kind: ``file``, ``dir``, ``symlink`` (never followed) or ``other``.
        size: Size in bytes (of the link itself for a symlink).
    """

    name: str
    kind: EntryKind
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FsAccess:
    """Host paths a sandbox may see besides its work dir and the system directories.

    Attributes:
        read_only: Absolute paths mounted read-only.
        read_write: Absolute paths mounted writable.
    """

    read_only: tuple[str, ...] = ()
    read_write: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for kind, paths in (("read_only", self.read_only), ("read_write", self.read_write)):
            if isinstance(paths, str):  # a lone string would be taken letter by letter
                raise UserError(f"FsAccess.{kind} must be a sequence of paths, got {paths!r}.")
            object.__setattr__(self, kind, tuple(paths))
            for path in paths:
                if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
                    raise UserError(
                        f"FsAccess.{kind} takes absolute paths, got {path!r}: "
                        "write it as '/abs/path'."
                    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """Limits of a sandboxed runtime: an isolated process with no network by default.

    Giving a config turns the sandbox on; ``enabled=False`` keeps the settings but turns
    it off. Invalid values raise ``UserError`` here, before anything runs.

    Attributes:
        enabled: Whether the sandbox applies.
        timeout: Wall-clock seconds before every process of the command is killed.
        max_memory_mb: Address-space limit of each process (``RLIMIT_AS``), in MiB.
        cpu_seconds: CPU time limit of each process (``RLIMIT_CPU``); ``None``: the
            timeout, rounded up.
        max_processes: Most processes and threads at once (a fork bomb stops here).
        max_file_size_mb: Largest file a process may write (``RLIMIT_FSIZE``), in MiB.
        max_output_bytes: Bytes of stdout and of stderr kept (the rest is counted and cut).
        allow_network: Share the host's network; ``False`` leaves only a private loopback.
        allow_fs: Host paths visible besides the work dir and the system directories.
        env: Environment variables of the command (the host's environment never enters).
    """

    enabled: bool = True
    timeout: float = 30.0
    max_memory_mb: int = 256
    cpu_seconds: float | None = None
    max_processes: int = 64
    max_file_size_mb: int = 64
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    allow_network: bool = False
    allow_fs: FsAccess | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])

    def __post_init__(self) -> None:
        _positive("timeout", self.timeout)
        _positive("max_memory_mb", self.max_memory_mb, minimum=16)
        if self.cpu_seconds is not None:
            _positive("cpu_seconds", self.cpu_seconds)
        _positive("max_processes", self.max_processes, minimum=1)
        _positive("max_file_size_mb", self.max_file_size_mb, minimum=1)
        _positive("max_output_bytes", self.max_output_bytes, minimum=1)
        if self.allow_fs is not None and not isinstance(self.allow_fs, FsAccess):
            raise UserError(
                f"SandboxConfig.allow_fs must be an FsAccess or None, got {self.allow_fs!r}."
            )
        for key, value in self.env.items():
            if not isinstance(key, str) or not key or "=" in key or "\0" in key:
                raise UserError(f"SandboxConfig.env has an invalid variable name {key!r}.")
            if not isinstance(value, str) or "\0" in value:
                raise UserError(f"SandboxConfig.env[{key!r}] must be a string, got {value!r}.")
        object.__setattr__(self, "env", dict(self.env))

    @property
    def cpu_limit(self) -> int:
        """Whole CPU seconds each process may use."""
        return max(1, math.ceil(self.cpu_seconds if self.cpu_seconds is not None else self.timeout))

    def describe(self) -> str:
        """One line for audit rows and spans.

        For example ``sandbox: no network, 30s, 256 MiB, 64 processes``.
        """
        if not self.enabled:
            return "none"
        network = "network" if self.allow_network else "no network"
        fs = self.allow_fs
        extra = "" if fs is None else f", {len(fs.read_only) + len(fs.read_write)} host paths"
        return (
            f"sandbox: {network}, {self.timeout:g}s, {self.max_memory_mb} MiB, "
            f"{self.max_processes} processes{extra}"
        )


SandboxSetting: TypeAlias = "bool | SandboxConfig | None"
"""What a tool or an agent says about sandboxing: a config, on/off, or nothing (inherit)."""


def _positive(name: str, value: object, *, minimum: float | None = None) -> None:
    """Refuse anything but a finite number above zero (or at least ``minimum``)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    finite = number and math.isfinite(value)  # pyright: ignore[reportArgumentType]
    if finite and ((value > 0) if minimum is None else (value >= minimum)):  # pyright: ignore[reportOperatorIssue]
        return
    bound = "> 0" if minimum is None else f">= {minimum}"
    raise UserError(f"SandboxConfig.{name} must be a number {bound}, got {value!r}.")


def call_sandbox(runtime: object | None, tool: SandboxSetting, agent: SandboxSetting) -> str | None:
    """What a tool call's runtime is, in one line, or ``None`` when the run has no runtime.

    The tool's own setting wins over the agent's (:func:`resolve_sandbox`); with neither,
    the runtime stands as the agent gave it. The tool's Python code always runs in this
    process: the sandbox confines the commands and files it reaches through ``ctx.runtime``.
    """
    if runtime is None:
        return None
    if tool is None and agent is None:
        config = getattr(runtime, "config", None)
        return config.describe() if isinstance(config, SandboxConfig) else "none"
    config = resolve_sandbox(tool, agent)
    return "none" if config is None else config.describe()


def check_sandbox_setting(value: object, owner: str) -> None:
    """Raise ``UserError`` unless ``value`` is ``True``, ``False``, ``None`` or a config."""
    if value is not None and not isinstance(value, bool | SandboxConfig):
        raise UserError(
            f"{owner}: sandbox must be True, False, None or a SandboxConfig, got {value!r}."
        )


def resolve_sandbox(
    tool: bool | SandboxConfig | None, agent: bool | SandboxConfig | None
) -> SandboxConfig | None:
    """The sandbox a tool call runs in, or ``None`` for none.

    The tool's setting wins over the agent's; ``False`` on the tool turns the sandbox off
    whatever the agent says; a config with ``enabled=False`` means off. ``True`` asks for a
    sandbox with the agent's limits (or the defaults).
    """
    if tool is False:
        return None
    if isinstance(tool, SandboxConfig):
        return tool if tool.enabled else None
    if tool is True:
        if isinstance(agent, SandboxConfig):
            return agent if agent.enabled else replace(agent, enabled=True)
        return SandboxConfig()
    if isinstance(agent, SandboxConfig):
        return agent if agent.enabled else None
    return SandboxConfig() if agent is True else None


@runtime_checkable
class Runtime(Protocol):
    """Where a tool runs commands and reads and writes files.

    Tools reach it as ``ctx.runtime``; paths are relative to :attr:`cwd` (the work dir),
    and an implementation refuses any path that resolves outside it with
    :class:`RuntimeAccessError`.
    """

    @property
    def cwd(self) -> str:
        """The work dir: where commands start and relative paths point."""
        ...

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's deadline, not ours
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run a shell command (a string) or an argv list; never raises for its exit status.

        Raises:
            RuntimeAccessError: ``cwd`` is outside the work dir.
        """
        ...

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """Return a file's bytes (at most ``max_bytes``).

        Raises:
            RuntimeAccessError: The path leaves the work dir.
            FileNotFoundError: No such file.
        """
        ...

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (parents are created).

        Raises:
            RuntimeAccessError: The path leaves the work dir.
        """
        ...

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        """Return a directory's entries, sorted by name.

        Raises:
            RuntimeAccessError: The path leaves the work dir.
            FileNotFoundError: No such directory.
        """
        ...

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """The same work dir, sandboxed with ``config`` (``None``: not sandboxed)."""
        ...
