"""``WorkDirFiles``: the file half that the local and the sandboxed runtime share.

Files are read and written on the host side (the sandbox mounts the same work dir), in a
worker thread. Also the checks of a command's argv and timeout that both runtimes make.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from bastion.core import DirEntry, RuntimeAccessError, UserError

from ._process import shell_argv
from ._workdir import WorkDir

__all__ = ["WorkDirFiles", "command_argv", "command_timeout"]


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


def command_argv(command: str | Sequence[str]) -> list[str]:
    """The argv of a shell command string (run by bash) or of an argv list."""
    try:
        return shell_argv(command)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def command_timeout(given: float | None, default: float) -> float:
    """A command's timeout in seconds: ``given``, else ``default``."""
    if given is None:
        return default
    if isinstance(given, bool) or not isinstance(given, int | float) or not given > 0:
        raise UserError(f"timeout must be a number of seconds > 0, got {given!r}.")
    return float(given)
