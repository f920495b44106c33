"""File access confined to a work dir, safe against symlink and ``..`` tricks.

Both runtimes read and write files on the host side through a :class:`WorkDir`: a path is
refused when it names ``..``, or when it resolves (symlinks followed) outside the root. The
resolved path is then opened one component at a time from a descriptor of the root with
``O_NOFOLLOW``, so a symlink swapped in after the check makes the call fail instead of
leading outside (no check-then-use race). The calls are blocking; the runtimes run them in
a worker thread.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Generator
from contextlib import contextmanager, suppress

from bastion.core import DirEntry, RuntimeAccessError, UserError

__all__ = ["WorkDir"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CHUNK = 1 << 16


class WorkDir:
    """A directory outside of which no path may lead.

    Args:
        root: The directory (it must exist); symlinks in it are resolved once.

    Raises:
        UserError: ``root`` is not an existing directory.
    """

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = os.fspath(root)
        if not isinstance(path, str) or not path or "\0" in path:
            raise UserError(f"A runtime's work dir must be a directory path, got {root!r}.")
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            raise UserError(f"Work dir {path!r} is not an existing directory: create it first.")
        self.root = real

    def resolve(self, path: str) -> str:
        """The absolute, symlink-free form of ``path`` (relative to the root).

        Raises:
            RuntimeAccessError: ``path`` names ``..`` or resolves outside the root.
        """
        return os.path.join(self.root, *self._parts(path))

    def _parts(self, path: str) -> list[str]:
        if not isinstance(path, str) or "\0" in path:
            raise RuntimeAccessError(f"Invalid path {path!r}: give a file name as text.")
        if ".." in path.replace("\\", "/").split("/"):
            raise RuntimeAccessError(
                f"Path {path!r} contains '..': name files inside the work dir without '..'."
            )
        real = os.path.realpath(os.path.join(self.root, path))
        if real != self.root and not real.startswith(self.root + os.sep):
            raise RuntimeAccessError(
                f"Path {path!r} resolves to {real!r}, outside the work dir {self.root!r}: "
                "only files inside the work dir are reachable."
            )
        relative = os.path.relpath(real, self.root)
        return [] if relative == "." else relative.split(os.sep)

    @contextmanager
    def _dir_fd(self, parts: list[str], *, create: bool = False) -> Generator[int]:
        """A descriptor of the directory ``parts`` under the root, opened without following."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for part in parts:
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _swapped(exc, fd, part, parts) from exc
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def read(self, path: str, max_bytes: int | None = None) -> bytes:
        """Read a regular file (at most ``max_bytes``).

        Raises:
            RuntimeAccessError: The path leaves the root, or is not a regular file.
            FileNotFoundError: No such file.
        """
        parts = self._parts(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "Is a directory (the work dir)", path)
        with self._dir_fd(parts[:-1]) as dir_fd:
            try:
                fd = os.open(parts[-1], _READ_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                raise _swapped(exc, dir_fd, parts[-1], parts) from exc
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            if not stat.S_ISREG(mode):  # a FIFO or a device could block or never end
                raise RuntimeAccessError(f"Path {path!r} is not a regular file.")
            os.set_blocking(fd, True)
            chunks: list[bytes] = []
            left = max_bytes if max_bytes is not None else -1
            while left != 0:
                chunk = os.read(fd, _CHUNK if left < 0 else min(_CHUNK, left))
                if not chunk:
                    break
                chunks.append(chunk)
                left = left - len(chunk) if left > 0 else left
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write(self, path: str, data: bytes) -> None:
        """Create or replace a file atomically (parents are created).

        The data goes to a temporary file beside the target, renamed over it, so a crash
        leaves the old file or the new one, never half of one.

        Raises:
            RuntimeAccessError: The path leaves the root.
        """
        parts = self._parts(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "Is a directory (the work dir)", path)
        name = parts[-1]
        with self._dir_fd(parts[:-1], create=True) as dir_fd:
            temp = f".{name}.{secrets.token_hex(6)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temp, flags, 0o644, dir_fd=dir_fd)
            try:
                try:
                    existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    existing = None
                if existing is not None and stat.S_ISDIR(existing.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
                if existing is not None and stat.S_ISREG(existing.st_mode):
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))  # an edited script stays +x
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.close(fd)
                fd = -1
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                with suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise

    def list(self, path: str = ".") -> list[DirEntry]:
        """List a directory, sorted by name; symlinks are reported, never followed.

        Raises:
            RuntimeAccessError: The path leaves the root.
            FileNotFoundError: No such directory.
        """
        with self._dir_fd(self._parts(path)) as dir_fd, os.scandir(dir_fd) as entries:
            listing: list[DirEntry] = []
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if entry.is_symlink():
                    kind = "symlink"
                elif stat.S_ISDIR(info.st_mode):
                    kind = "dir"
                elif stat.S_ISREG(info.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                listing.append(DirEntry(name=entry.name, kind=kind, size=info.st_size))
        return sorted(listing, key=lambda e: e.name)


def _swapped(exc: OSError, dir_fd: int, name: str, parts: list[str]) -> Exception:
    """Map "a component turned into a symlink after the check" to a refusal."""
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        is_link = False
    if is_link or exc.errno == errno.ELOOP:
        where = "/".join(parts)
        return RuntimeAccessError(
            f"Path {where!r} changed into a symbolic link while it was opened; refused."
        )
    return exc
