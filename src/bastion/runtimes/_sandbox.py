"""The bubblewrap sandbox of ``SandboxRuntime``: its command line, limits and cgroup.

What a command sees: the system directories read-only (``/usr`` and its ``/bin``, ``/lib``
links, a short list of ``/etc`` files), the work dir writable at its own path, a private
``/tmp``, ``/proc`` of its own PID namespace, a minimal ``/dev``, and nothing else of the
host: no home directory, no other project, no host environment variable. All namespaces
are new (no network but a private loopback unless ``allow_network``), the root is
read-only, the process dies with its parent, and a seccomp filter refuses setuid and
setgid bits (``_seccomp``).

Limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and no core dumps are set
by ``prlimit`` before it execs ``bwrap``, and are inherited by everything inside; the number of
processes is capped by a ``pids`` cgroup when this process may create one (as root), else
by ``RLIMIT_NPROC`` (which the kernel ignores for root). The wall-clock timeout kills the
process group of ``bwrap``; the sandbox's PID 1 goes with it, and the kernel kills every
process left in the namespace.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import shutil
from collections.abc import Sequence
from typing import ClassVar

from bastion.core import SandboxConfig, UserError

__all__ = ["PidsGroup", "bwrap_argv", "find_bwrap", "find_prlimit", "launcher"]

# Files of /etc that programs need to start and to name users; nothing secret (no shadow,
# no ssh keys, no machine credentials).
_ETC = (
    "alternatives",
    "ca-certificates",
    "group",
    "hosts",
    "ld.so.cache",
    "localtime",
    "nsswitch.conf",
    "passwd",
    "resolv.conf",
    "ssl",
)
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_PIDS_ROOT = "/sys/fs/cgroup/pids"
_CGROUP_PARENT = "bastion-sandbox"
_sequence = itertools.count()


@functools.cache
def find_bwrap() -> str:
    """The path of the ``bwrap`` executable.

    Raises:
        UserError: bubblewrap is not installed.
    """
    path = shutil.which("bwrap")
    if path is None:
        raise UserError(
            "SandboxRuntime needs bubblewrap, and 'bwrap' is not on PATH: install it "
            "(Debian/Ubuntu: apt-get install -y bubblewrap)."
        )
    return path


def bwrap_argv(
    bwrap: str,
    root: str,
    config: SandboxConfig,
    cwd: str,
    command: Sequence[str],
    *,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` in ``cwd`` under ``config``."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
    if config.allow_network:
        argv.append("--share-net")
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_DIRS:
        path = "/" + name
        if os.path.islink(path):  # merged /usr: /bin -> usr/bin
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    for name in _ETC:
        argv += ["--ro-bind-try", "/etc/" + name, "/etc/" + name]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if config.allow_fs is not None:
        for path in config.allow_fs.read_only:
            argv += ["--ro-bind", path, path]
        for path in config.allow_fs.read_write:
            argv += ["--bind", path, path]
    argv += ["--bind", root, root, "--remount-ro", "/", "--chdir", cwd, "--clearenv"]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        **config.env,
    }
    for key, value in env.items():
        argv += ["--setenv", key, value]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--", *command]


def launcher(config: SandboxConfig, cgroup: PidsGroup | None) -> list[str]:
    """The argv prefix that limits ``bwrap`` (and all it starts) before it runs.

    ``prlimit`` sets the rlimits and execs; with a cgroup, a tiny shell first moves itself
    into it. Both run before ``bwrap``, so nothing of the command ever runs unlimited, and
    this process forks through the fast ``vfork`` path (no Python code in the child).
    """
    limits = [
        find_prlimit(),
        f"--as={config.max_memory_mb << 20}",
        f"--cpu={config.cpu_limit}",
        f"--fsize={config.max_file_size_mb << 20}",
        "--core=0",
    ]
    if cgroup is None and os.getuid() != 0:
        limits.append(f"--nproc={_nproc_limit(config)}")
    limits.append("--")
    if cgroup is None:
        return limits
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', cgroup.procs_file, *limits]


@functools.cache
def find_prlimit() -> str:
    """The path of ``prlimit`` (util-linux).

    Raises:
        UserError: It is not installed.
    """
    path = shutil.which("prlimit") or shutil.which("prlimit", path="/usr/bin:/bin")
    if path is None:
        raise UserError(
            "SandboxRuntime needs 'prlimit' (util-linux) to set resource limits: install it "
            "(Debian/Ubuntu: apt-get install -y util-linux)."
        )
    return path


def _nproc_limit(config: SandboxConfig) -> int:
    """``RLIMIT_NPROC`` counts every process of the user, so add the ones it already has."""
    uid = os.getuid()
    running = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.stat("/proc/" + entry).st_uid == uid:
                    running += 1
    return running + config.max_processes


class PidsGroup:
    """A ``pids`` cgroup (v1) holding one command at a time, so a fork bomb stops at its limit.

    Groups are pooled per process: removing a cgroup that held processes waits for the
    kernel (several milliseconds), so an emptied group is kept for the next command and
    removed at exit. Groups left by processes that died are swept once.
    """

    __slots__ = ("limit", "path")

    _idle: ClassVar[list[PidsGroup]] = []
    _retired: ClassVar[list[PidsGroup]] = []  # still draining when released; removed at exit
    _owner: ClassVar[int] = 0

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        self.limit = limit

    @property
    def procs_file(self) -> str:
        """Writing a pid here moves that process into the group."""
        return os.path.join(self.path, "cgroup.procs")

    @classmethod
    def acquire(cls, max_processes: int) -> PidsGroup | None:
        """An empty group limited to ``max_processes`` (``None``: cgroups not writable)."""
        if cls._owner != os.getpid():  # first use, or a forked child: the pool is not ours
            cls._owner = os.getpid()
            cls._idle = []
            cls._retired = []
            _sweep()
            atexit.register(cls._remove_idle)
        group = cls._idle.pop() if cls._idle else cls._create()
        if group is None:
            return None
        if group.limit != max_processes:
            try:
                _write(os.path.join(group.path, "pids.max"), str(max_processes))
            except OSError:
                group.remove()
                return None
            group.limit = max_processes
        return group

    @classmethod
    def _create(cls) -> PidsGroup | None:
        parent = os.path.join(_PIDS_ROOT, _CGROUP_PARENT)
        path = os.path.join(parent, f"{os.getpid()}-{next(_sequence)}")
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(parent)
            os.mkdir(path)
        except OSError:
            return None
        return cls(path, -1)

    def release(self) -> None:
        """Return the group to the pool once empty (the command's namespace is gone)."""
        try:
            with open(os.path.join(self.path, "pids.current")) as current:
                empty = current.read().strip() == "0"
        except OSError:
            return
        (self._idle if empty else self._retired).append(self)

    def remove(self) -> None:
        """Delete the group."""
        with contextlib.suppress(OSError):
            os.rmdir(self.path)

    @classmethod
    def _remove_idle(cls) -> None:
        if cls._owner == os.getpid():
            for group in (*cls._idle, *cls._retired):
                group.remove()
            cls._idle.clear()
            cls._retired.clear()


def _write(path: str, value: str) -> None:
    with open(path, "w") as file:
        file.write(value)


def _sweep() -> None:
    """Remove groups left behind by processes that no longer exist."""
    parent = os.path.join(_PIDS_ROOT, _CGROUP_PARENT)
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            pid = name.split("-", 1)[0]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(parent, name))
