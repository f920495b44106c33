"""Running one command as an asyncio subprocess: capped output, a deadline, a clean kill.

Shared by the local and the sandboxed runtime. The command starts in a new session, so a
timeout (or the caller's cancellation) kills its whole process group; stdout and stderr
are read as they come, keeping at most ``max_output`` bytes of each and counting the rest,
so a command printing forever costs neither memory nor a blocked pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bastion.core import ExecResult

__all__ = ["ProcessSpec", "run_process", "shell_argv"]

_READ_SIZE = 1 << 16


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSpec:
    """What to start and how.

    Attributes:
        argv: Program and arguments.
        cwd: Working directory of the started program (on the host).
        env: Its whole environment.
        timeout: Wall-clock seconds before the process group is killed.
        max_output: Bytes kept of stdout, and of stderr.
        stdin: Bytes fed to standard input (``None``: no input).
        pass_fds: Descriptors the program inherits (e.g. a seccomp filter for ``bwrap``).
    """

    argv: Sequence[str]
    cwd: str
    env: Mapping[str, str]
    timeout: float
    max_output: int
    stdin: bytes | None = None
    pass_fds: tuple[int, ...] = ()


class _Capped:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    __slots__ = ("chunks", "kept", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_SIZE):
            self.total += len(chunk)
            room = self.limit - self.kept
            if room > 0:
                piece = chunk[:room]
                self.chunks.append(piece)
                self.kept += len(piece)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def shell_argv(command: str | Sequence[str]) -> list[str]:
    """The argv that runs ``command``: a string goes to bash (or sh), a list runs as is."""
    if isinstance(command, str):
        return [_shell(), "-c", command]
    argv = list(command)
    if not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"A command must be a string or a non-empty list of strings: {command!r}")
    return argv


_SHELL: list[str] = []


def _shell() -> str:
    if not _SHELL:
        _SHELL.append("/bin/bash" if shutil.which("bash", path="/usr/bin:/bin") else "/bin/sh")
    return _SHELL[0]


async def run_process(spec: ProcessSpec) -> ExecResult:
    """Run ``spec`` to its end or its deadline and report what it did.

    Cancelling the call kills the process group before the cancellation propagates.

    A program that does not exist (or may not be run) gives exit code 127 (126), as in
    a shell.
    """
    started = time.monotonic()
    try:
        process = await _spawn(spec)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        # What a shell would say: the model reads it like any failed command.
        denied = isinstance(exc, PermissionError)
        return ExecResult(
            stdout="",
            stderr=f"{spec.argv[0]}: {'permission denied' if denied else 'command not found'}\n",
            exit_code=126 if denied else 127,
            duration=time.monotonic() - started,
        )
    out, err = _Capped(spec.max_output), _Capped(spec.max_output)
    stdout, stderr = process.stdout, process.stderr
    assert stdout is not None
    assert stderr is not None
    timed_out = finished = False
    try:
        async with asyncio.timeout(spec.timeout), asyncio.TaskGroup() as group:
            # Done when the command exited and every process holding its pipes closed them.
            group.create_task(out.drain(stdout))
            group.create_task(err.drain(stderr))
            if spec.stdin is not None:
                group.create_task(_feed(process, spec.stdin))
            await process.wait()
        finished = True
    except TimeoutError:
        timed_out = True
    finally:
        if not finished:  # timed out or cancelled: never leave the command running
            # Safe: the leader is unreaped, or a member still holds the group id.
            _kill_group(process.pid)
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await asyncio.shield(process.wait())
    returncode = process.returncode if process.returncode is not None else -signal.SIGKILL
    if timed_out:  # killed for its time, whatever a wrapper (bwrap) made of the signal
        returncode = -signal.SIGKILL
    return ExecResult(
        stdout=out.text(),
        stderr=err.text(),
        exit_code=128 - returncode if returncode < 0 else returncode,
        timed_out=timed_out,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        truncated=out.total > out.kept or err.total > err.kept,
        duration=time.monotonic() - started,
    )


async def _spawn(spec: ProcessSpec) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *spec.argv,
        cwd=spec.cwd,
        env=dict(spec.env),
        stdin=asyncio.subprocess.PIPE if spec.stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, killed as one
        pass_fds=spec.pass_fds,
    )


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    stdin.close()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
