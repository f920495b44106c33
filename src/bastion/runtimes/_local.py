"""``LocalRuntime`` and ``SandboxRuntime``: commands run as local processes, plain or boxed.

A sandboxed command runs in a fresh bubblewrap sandbox (``_sandbox``); files stay confined
to the work dir (``_files``). The two runtimes turn into each other by ``with_sandbox``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace

from bastion.core import (
    DEFAULT_MAX_OUTPUT_BYTES,
    ExecResult,
    Runtime,
    SandboxConfig,
    UserError,
)

from ._files import WorkDirFiles, command_argv, command_timeout
from ._process import ProcessSpec, run_process
from ._sandbox import PidsGroup, bwrap_argv, find_bwrap, find_prlimit, launcher
from ._seccomp import seccomp_pipe

__all__ = ["LocalRuntime", "SandboxRuntime"]


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
        self.timeout = command_timeout(timeout, 0.0)
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
            argv=command_argv(command),
            cwd=self._command_cwd(cwd),
            env={**base, **self._env, **(env or {})},
            timeout=command_timeout(timeout, self.timeout),
            max_output=self.max_output_bytes,
            stdin=stdin,
        )
        return await run_process(spec)

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """This work dir in a bubblewrap sandbox with ``config`` (``None``: ``self``)."""
        if config is None:
            return self
        return SandboxRuntime(self.cwd, config)


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
        if not isinstance(config, SandboxConfig):
            raise UserError(f"SandboxRuntime config must be a SandboxConfig, got {config!r}.")
        if config.allow_fs is not None:
            for path in (*config.allow_fs.read_only, *config.allow_fs.read_write):
                if not os.path.exists(path):
                    raise UserError(f"SandboxConfig.allow_fs names {path!r}, which does not exist.")
        self.config = config
        self._bwrap = find_bwrap()
        find_prlimit()

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
        argv = command_argv(command)
        cgroup = PidsGroup.acquire(config.max_processes)
        seccomp = seccomp_pipe()
        try:
            bwrap = bwrap_argv(self._bwrap, self.cwd, config, start_dir, argv, seccomp_fd=seccomp)
            spec = ProcessSpec(
                argv=[*launcher(config, cgroup), *bwrap],
                cwd=start_dir,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},  # bwrap's own, not the host's
                timeout=min(command_timeout(timeout, config.timeout), config.timeout),
                max_output=config.max_output_bytes,
                stdin=stdin,
                pass_fds=() if seccomp is None else (seccomp,),
            )
            return await run_process(spec)
        finally:
            if seccomp is not None:
                os.close(seccomp)
            if cgroup is not None:
                cgroup.release()

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """This work dir with another sandbox config (``None``: a local runtime)."""
        if config is None:
            return LocalRuntime(self.cwd)
        if config == self.config:
            return self
        return SandboxRuntime(self.cwd, config)


def _minimal_env(home: str) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
    }
