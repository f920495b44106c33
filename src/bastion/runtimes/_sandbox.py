"""``SandboxRuntime``: each command in a fresh bubblewrap sandbox.

What a command sees: the system directories read-only (``/usr`` and its ``/bin``, ``/lib``
links, a short list of ``/etc`` files), the work dir writable at its own path, a private
``/tmp``, ``/proc`` of its own PID namespace, a minimal ``/dev``, and nothing else of the
host: no home directory, no other project, no host environment variable. All namespaces
are new (no network but a private loopback unless ``allow_network``), the root is
read-only, and the process dies with its parent.

Limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and no core dumps are set
in the child before ``bwrap`` starts and are inherited by everything inside; the number of
processes is capped by a ``pids`` cgroup when this process may create one (as root), else
by ``RLIMIT_NPROC`` (which the kernel ignores for root). The wall-clock timeout kills the
process group of ``bwrap``; the sandbox's PID 1 goes with it, and the kernel kills every
process left in the namespace.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import resource
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from bastion.core import (
    ExecResult,
    Runtime,
    SandboxConfig,
    UserError,
)

from ._local import LocalRuntime, WorkDirFiles, _argv, _timeout
from ._process import ProcessSpec, run_process

__all__ = ["SandboxRuntime", "bwrap_argv", "find_bwrap"]

# Files of /etc that programs need to start and to name users; nothing secret (no shadow,
# no ssh keys, no machine credentials).
_ETC = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "group",
    "hostname",
    "hosts",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "profile",
    "protocols",
    "resolv.conf",
    "services",
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
    bwrap: str, root: str, config: SandboxConfig, cwd: str, command: Sequence[str]
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
    return [*argv, "--", *command]


class SandboxRuntime(WorkDirFiles):
    r"""Runs every command in a new bubblewrap sandbox; files confined to the work dir.

    Example::

        runtime = SandboxRuntime("/srv/jobs/42", SandboxConfig(timeout=10))
        result = await runtime.exec("python3 -c 'print(6 * 7)'")
        assert result.stdout == "42\\n"

    Args:
        root: The work dir, the only host directory the command may write (must exist).
        config: Limits, network and extra paths (default: ``SandboxConfig()``).

    Raises:
        UserError: The work dir does not exist, bubblewrap is missing, or a path of
            ``config.allow_fs`` does not exist.
    """

    __slots__ = ("_bwrap", "config")

    def __init__(
        self, root: str | os.PathLike[str] = ".", config: SandboxConfig | None = None
    ) -> None:
        super().__init__(root)
        config = config if config is not None else SandboxConfig()
        if not isinstance(config, SandboxConfig):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"SandboxRuntime config must be a SandboxConfig, got {config!r}.")
        if config.allow_fs is not None:
            for path in (*config.allow_fs.read_only, *config.allow_fs.read_write):
                if not os.path.exists(path):
                    raise UserError(f"SandboxConfig.allow_fs names {path!r}, which does not exist.")
        self.config = config
        self._bwrap = find_bwrap()

    def __repr__(self) -> str:
        return f"SandboxRuntime({self.cwd!r}, network={self.config.allow_network})"

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's deadline, not ours
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run a shell command (a string, by bash) or an argv list inside the sandbox.

        ``timeout`` may shorten the config's, never extend it.

        Raises:
            RuntimeAccessError: ``cwd`` is outside the work dir.
        """
        config = self.config
        if env:
            config = replace(config, env={**config.env, **env})
        start_dir = self._command_cwd(cwd)
        cgroup = _PidsGroup.create(config.max_processes)
        try:
            spec = ProcessSpec(
                argv=bwrap_argv(self._bwrap, self.cwd, config, start_dir, _argv(command)),
                cwd=start_dir,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},  # bwrap's own, not the host's
                timeout=min(_timeout(timeout, config.timeout), config.timeout),
                max_output=config.max_output_bytes,
                stdin=stdin,
                preexec=_limits(config, cgroup),
            )
            return await run_process(spec)
        finally:
            if cgroup is not None:
                cgroup.remove()

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """This work dir with another sandbox config (``None``: a local runtime)."""
        if config is None:
            return LocalRuntime(self.cwd)
        if config == self.config:
            return self
        return SandboxRuntime(self.cwd, config)


def _limits(config: SandboxConfig, cgroup: _PidsGroup | None) -> Callable[[], None]:
    """What the child sets before ``exec``: plain syscalls, nothing that takes a lock."""
    memory = config.max_memory_mb << 20
    fsize = config.max_file_size_mb << 20
    cpu = config.cpu_limit
    procs_file = cgroup.procs_file if cgroup is not None else None
    nproc = None if cgroup is not None or os.getuid() == 0 else _nproc_limit(config)

    def apply() -> None:
        if procs_file is not None:
            fd = os.open(procs_file, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


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


class _PidsGroup:
    """A ``pids`` cgroup (v1) holding one command, so a fork bomb stops at its limit."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    @property
    def procs_file(self) -> str:
        return os.path.join(self.path, "cgroup.procs")

    @classmethod
    def create(cls, max_processes: int) -> _PidsGroup | None:
        """A new group with ``pids.max`` set, or ``None`` where cgroups are not writable."""
        parent = os.path.join(_PIDS_ROOT, _CGROUP_PARENT)
        path = os.path.join(parent, f"{os.getpid()}-{next(_sequence)}")
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(parent)
            os.mkdir(path)
        except OSError:
            return None
        group = cls(path)
        try:
            with open(os.path.join(path, "pids.max"), "w") as limit:
                limit.write(str(max_processes))
        except OSError:
            group.remove()
            return None
        return group

    def remove(self) -> None:
        """Delete the group (its processes are gone once the command ended)."""
        with contextlib.suppress(OSError):
            os.rmdir(self.path)
