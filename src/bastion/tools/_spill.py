"""The spill store: full tool results kept on disk behind opaque handles.

Written by :class:`~bastion.tools.ResultLimiter` (strategy ``spill_to_file``) and read by
the ``read_result`` tool. Layout: ``<root>/<run_id>/<token>.txt``; the default root is
``<tmpdir>/bastion-spill``. Directories are created with mode 0700 and files with 0600;
a file is written atomically (a temporary file in the same directory, ``fsync``, then
``os.replace``), so a reader never sees half a result.

A handle reads ``spill:<run_id>/<token>``. It is an opaque name, never a path: it resolves
only when it is well formed (run id and token made of letters, digits, ``_`` and ``-``, so
no ``/``, ``..``, NUL byte or absolute path gets through), when it names the *current* run
(one run never reads another run's results, which may belong to another user or tenant),
and when it maps to a regular file inside the root reached without following a symlink
(on POSIX the run directory and the file are opened relative to the root's descriptor with
``O_NOFOLLOW``, so a symlink planted in the store is refused, not followed).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

__all__ = ["ResultReadError", "SpillStore"]

_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_HANDLE = re.compile(r"spill:([A-Za-z0-9_-]{1,128})/([A-Za-z0-9_-]{16,64})")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_DIR_FD = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd and bool(_NOFOLLOW)


class ResultReadError(Exception):
    """A handle or range given to ``read_result`` cannot be served; the message says why."""


class SpillStore:
    """Stores full tool results on disk and hands out opaque, run-scoped handles.

    Args:
        root: Directory holding one sub-directory per run (default
            ``<tmpdir>/bastion-spill``). Created on the first spill.
    """

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else Path(tempfile.gettempdir(), "bastion-spill")

    @staticmethod
    def owns(handle: str) -> bool:
        """Whether ``handle`` is a spill handle (well formed or not)."""
        return handle.startswith("spill:")

    async def write(self, run_id: str, body: str) -> str:
        """Store ``body`` for the run ``run_id``; return its handle.

        Raises:
            OSError: The file could not be written (the caller falls back to truncation).
        """
        if not _ID.fullmatch(run_id):
            raise OSError(f"Run id {run_id!r} cannot name a spill directory.")
        token = secrets.token_urlsafe(18)  # 144 random bits, 24 characters of [A-Za-z0-9_-]
        data = body.encode("utf-8", "surrogatepass")
        await asyncio.to_thread(self._write, run_id, f"{token}.txt", data)
        return f"spill:{run_id}/{token}"

    def path(self, handle: str, run_id: str) -> Path:
        """The file a handle names, after checking its form and its run.

        Raises:
            ResultReadError: The handle is malformed or belongs to another run.
        """
        match = _HANDLE.fullmatch(handle)
        if match is None:
            raise ResultReadError(
                f"{handle!r} is not a valid result handle: spill handles read "
                "'spill:<run>/<token>', exactly as shown with the truncated result."
            )
        run, token = match.groups()
        if run != run_id:
            raise ResultReadError(
                f"Handle {handle!r} belongs to another run; only results stored in this "
                "run can be read."
            )
        return self.root / run / f"{token}.txt"

    def open(self, handle: str, run_id: str) -> BinaryIO:
        """Open a handle's file for reading, refusing anything outside the root (blocking).

        Raises:
            ResultReadError: The handle is malformed, of another run, unknown, or resolves
                to something other than a regular file inside the root.
        """
        path = self.path(handle, run_id)
        try:
            fd = self._open_fd(path) if _DIR_FD else self._open_checked(path)
        except FileNotFoundError:
            raise ResultReadError(
                f"No stored result has the handle {handle!r}; it may have been removed."
            ) from None
        except OSError:
            raise ResultReadError(
                f"Handle {handle!r} does not resolve to a stored result inside the spill "
                "store; the read was refused."
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ResultReadError(f"Handle {handle!r} does not name a stored result.")
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def _open_fd(self, path: Path) -> int:
        root_fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            run_fd = os.open(path.parent.name, _DIR_FLAGS, dir_fd=root_fd)
        finally:
            os.close(root_fd)
        try:
            return os.open(path.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=run_fd)
        finally:
            os.close(run_fd)

    def _open_checked(self, path: Path) -> int:
        # Without descriptor-relative opens: resolve and check containment instead.
        root = os.path.realpath(self.root)
        real = os.path.realpath(path)
        if os.path.islink(path) or os.path.dirname(os.path.dirname(real)) != root:
            raise PermissionError(str(path))
        return os.open(real, os.O_RDONLY | _CLOEXEC | getattr(os, "O_BINARY", 0))

    def _write(self, run_id: str, name: str, data: bytes) -> None:
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _DIR_FD:
            self._write_by_path(self.root / run_id, name, data)
            return
        root_fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(run_id, 0o700, dir_fd=root_fd)
            run_fd = os.open(run_id, _DIR_FLAGS, dir_fd=root_fd)
        finally:
            os.close(root_fd)
        try:
            _check_private(os.fstat(run_fd))
            temp = f".{name}.{secrets.token_hex(8)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
            fd = os.open(temp, flags, 0o600, dir_fd=run_fd)
            try:
                _write_all(fd, data)
                os.replace(temp, name, src_dir_fd=run_fd, dst_dir_fd=run_fd)
            except BaseException:
                os.unlink(temp, dir_fd=run_fd)
                raise
            with contextlib.suppress(OSError):  # not every platform syncs a directory
                os.fsync(run_fd)  # make the rename itself durable
        finally:
            os.close(run_fd)

    @staticmethod
    def _write_by_path(run_dir: Path, name: str, data: bytes) -> None:
        run_dir.mkdir(mode=0o700, exist_ok=True)
        if run_dir.is_symlink() or not run_dir.is_dir():
            raise PermissionError(f"Spill directory {run_dir} is not a plain directory.")
        fd, temp = tempfile.mkstemp(dir=run_dir, prefix=f".{name}.", suffix=".tmp")
        try:
            _write_all(fd, data)
            os.replace(temp, run_dir / name)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def _write_all(fd: int, data: bytes) -> None:
    """Write, flush to disk and close ``fd``."""
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def _check_private(info: os.stat_result) -> None:
    """Refuse a run directory someone else owns or may write to (it could be swapped)."""
    getuid = getattr(os, "geteuid", None)
    if getuid is not None and info.st_uid != getuid():
        raise PermissionError("The spill directory belongs to another user.")
    if info.st_mode & 0o022:
        raise PermissionError("The spill directory is writable by other users.")
