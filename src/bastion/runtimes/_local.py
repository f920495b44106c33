"""``LocalRuntime``: commands run as local processes; files confined to the work dir.

Also the file half that the sandboxed runtime shares: files are read and written on the
host side (the sandbox mounts the same work dir), in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence

from bastion.core import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DirEntry,
    ExecResult,
    Runtime,
    RuntimeAccessError,
    SandboxConfig,
    UserError,
)

from ._process import ProcessSpec, run_process, shell_argv
from ._workdir import WorkDir

__all__ = ["LocalRuntime", "WorkDirFiles"]


class WorkDirFiles:
    """Files of a work dir, reached without blocking the event loop."""

    __slots__ = ("_workdir",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._workdir = WorkDir(root)

    @property
    def cwd(self) -> str:
        """The work dir (absolute, symlinks resolved)."""
        return self._workdir.root

    def resolve(self, path: str) -> str:
        """The absolute path ``path`` names inside the work dir.

        Raises:
            RuntimeAccessError: It names ``..`` or resolves outside the work dir.
        """
        return self._workdir.resolve(path)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """Return a file's bytes (at most ``max_bytes``).

        Raises:
            RuntimeAccessError: The path leaves the work dir or is not a regular file.
            FileNotFoundError: No such file.
        """
        return await asyncio.to_thread(self._workdir.read, path, max_bytes)

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file atomically (parents are created).

        Raises:
            RuntimeAccessError: The path leaves the work dir.
        """
        raw = data.encode() if isinstance(data, str) else bytes(data)
        await asyncio.to_thread(self._workdir.write, path, raw)

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        """Return a directory's entries, sorted by name.

        Raises:
            RuntimeAccessError: The path leaves the work dir.
            FileNotFoundError: No such directory.
        """
        return await asyncio.to_thread(self._workdir.list, path)

    def _command_cwd(self, cwd: str | None) -> str:
        if cwd is None:
            return self.cwd
        resolved = self._workdir.resolve(cwd)
        if not os.path.isdir(resolved):
            raise RuntimeAccessError(f"cwd {cwd!r} is not a directory inside the work dir.")
        return resolved


class LocalRuntime(WorkDirFiles):
    """Runs commands as ordinary local processes, in a work dir.

    Commands are not isolated: they see the host as the current user does. The file
    methods stay inside the work dir. Use :class:`SandboxRuntime` (or ``sandbox=`` on the
    agent or a tool) for commands you do not trust.

    Args:
        root: The work dir (must exist).
        timeout: Default wall-clock seconds of a command; its process group is then killed.
        max_output_bytes: Bytes of stdout and of stderr kept per command.
        env: Variables added to the environment of commands.
        inherit_env: Start from the host's environment (``False``: only ``PATH``,
            ``HOME``, ``LANG`` and ``env``).

    Raises:
        UserError: The work dir does not exist, or a limit is not positive.
    """

    __slots__ = ("_env", "inherit_env", "max_output_bytes", "timeout")

    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        *,
        timeout: float = 120.0,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
    ) -> None:
        super().__init__(root)
        self.timeout = _timeout(timeout, 0.0)
        if isinstance(max_output_bytes, bool) or not isinstance(max_output_bytes, int):
            max_output_bytes = 0
        if max_output_bytes < 1:
            raise UserError(f"max_output_bytes must be an int >= 1, got {max_output_bytes!r}.")
        SandboxConfig(env=env or {})  # the same checks of variable names and values
        self.max_output_bytes = max_output_bytes
        self._env = dict(env or {})
        self.inherit_env = inherit_env

    def __repr__(self) -> str:
        return f"LocalRuntime({self.cwd!r})"

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's deadline, not ours
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run a shell command (a string, by bash) or an argv list in the work dir.

        Raises:
            RuntimeAccessError: ``cwd`` is outside the work dir.
        """
        base = dict(os.environ) if self.inherit_env else _minimal_env(self.cwd)
        spec = ProcessSpec(
            argv=_argv(command),
            cwd=self._command_cwd(cwd),
            env={**base, **self._env, **(env or {})},
            timeout=_timeout(timeout, self.timeout),
            max_output=self.max_output_bytes,
            stdin=stdin,
        )
        return await run_process(spec)

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """This work dir in a bubblewrap sandbox with ``config`` (``None``: ``self``)."""
        if config is None:
            return self
        from ._sandbox import SandboxRuntime

        return SandboxRuntime(self.cwd, config)


def _argv(command: str | Sequence[str]) -> list[str]:
    try:
        return shell_argv(command)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _timeout(given: float | None, default: float) -> float:
    if given is None:
        return default
    if isinstance(given, bool) or not isinstance(given, int | float) or not given > 0:
        raise UserError(f"timeout must be a number of seconds > 0, got {given!r}.")
    return float(given)


def _minimal_env(home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
    }
