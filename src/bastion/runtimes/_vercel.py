"""``VercelSandboxRuntime``: tools run commands and touch files in a Vercel Sandbox microVM.

The sandbox is a Firecracker microVM in Vercel's cloud: nothing a command does reaches this
machine. It is created on first use (or attached with ``sandbox_id=``) and stopped by
:meth:`VercelSandboxRuntime.aclose` (``async with`` does it). Paths are confined to the
sandbox's work dir like every runtime's; the network follows ``config.allow_network`` when
the sandbox is created (Vercel's ``deny-all`` or ``allow-all`` policy).
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import shlex
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import aclosing, suppress
from dataclasses import dataclass, field
from typing import Self

from bastion.core import (
    DirEntry,
    ExecResult,
    Runtime,
    RuntimeAccessError,
    SandboxConfig,
    UserError,
)

from ._vercel_api import CommandBody, CreateBody, SandboxInfo, VercelApi, VercelSandboxError

__all__ = ["VercelSandboxRuntime"]

DEFAULT_BASE_URL = "https://vercel.com/api"
DEFAULT_CWD = "/vercel/sandbox"
_KINDS = {"f": "file", "d": "dir", "l": "symlink"}


@dataclass(slots=True)
class _Session:
    """The sandbox all views of one runtime share, created once."""

    api: VercelApi
    create_body: CreateBody
    info: SandboxInfo | None = None
    owned: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def ready(self) -> SandboxInfo:
        if self.info is not None:
            return self.info
        async with self.lock:
            if self.info is None:
                self.info = await self.api.create(self.create_body)
                self.owned = True
            return self.info


class VercelSandboxRuntime:
    """A :class:`~bastion.core.Runtime` on a Vercel Sandbox (a cloud microVM).

    Example::

        async with VercelSandboxRuntime(project_id="prj_123") as runtime:
            agent = Agent("coder", model=..., tools=[bash, *file_tools], runtime=runtime)
            await agent.run("Run the test suite.")

    Args:
        token: A Vercel access token (default: ``VERCEL_TOKEN``). Sent only as a bearer
            header; never in an error, an event or a log.
        project_id: The project sandboxes are created in (default: ``VERCEL_PROJECT_ID``).
        team_id: The team (default: ``VERCEL_TEAM_ID``, else the token's own scope).
        image: The sandbox image (``"python3.13"``, ``"node24"``, ...).
        vcpus: Virtual CPUs of the VM (its memory follows: 2 GB per vCPU).
        lifetime: Seconds before Vercel stops the VM on its own.
        config: Per-command timeout, output cap, environment, and whether the VM may use
            the network. Memory, process and file-size limits are the VM's own.
        sandbox_id: Attach to a running sandbox instead of creating one (it is then not
            stopped by :meth:`aclose`).
        base_url: The API's base URL.

    Raises:
        UserError: No token, no project for a new sandbox, a bad number, or host paths
            (``config.allow_fs``: a cloud VM has no host paths to share).
    """

    __slots__ = ("_config", "_session")

    def __init__(
        self,
        *,
        token: str | None = None,
        project_id: str | None = None,
        team_id: str | None = None,
        image: str = "python3.13",
        vcpus: int = 2,
        lifetime: float = 300.0,
        config: SandboxConfig | None = None,
        sandbox_id: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
    ) -> None:
        token = token or os.environ.get("VERCEL_TOKEN")
        if not token:
            raise UserError("VercelSandboxRuntime needs a token: pass token= or set VERCEL_TOKEN.")
        project_id = project_id or os.environ.get("VERCEL_PROJECT_ID")
        if sandbox_id is None and not project_id:
            raise UserError(
                "VercelSandboxRuntime needs a project for a new sandbox: pass project_id= or "
                "set VERCEL_PROJECT_ID (or attach to one with sandbox_id=)."
            )
        config = _checked(config if config is not None else SandboxConfig(), vcpus, lifetime)
        api = VercelApi(
            base_url=base_url, token=token, team_id=team_id or os.environ.get("VERCEL_TEAM_ID")
        )
        body: CreateBody = {
            "projectId": project_id,
            "runtime": image,
            "timeout": round(lifetime * 1000),
            "resources": {"vcpus": vcpus},
            "networkPolicy": {"mode": "allow-all" if config.allow_network else "deny-all"},
        }
        session = _Session(api=api, create_body=body)
        if sandbox_id is not None:
            session.info = SandboxInfo(id=sandbox_id, cwd=DEFAULT_CWD, status="running")
        self._session = session
        self._config = config

    def __repr__(self) -> str:
        info = self._session.info
        return f"VercelSandboxRuntime({info.id if info else 'not started'!r})"

    @property
    def config(self) -> SandboxConfig:
        """The limits commands of this runtime run with."""
        return self._config

    @property
    def sandbox_id(self) -> str | None:
        """The sandbox's id, once it exists."""
        info = self._session.info
        return info.id if info is not None else None

    @property
    def cwd(self) -> str:
        """The work dir inside the VM."""
        info = self._session.info
        return info.cwd if info is not None else DEFAULT_CWD

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the sandbox this runtime created, and close the connections."""
        session = self._session
        try:
            if session.owned and session.info is not None:
                await session.api.stop(session.info.id)
                session.owned = False
        finally:
            await session.api.aclose()

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """The same VM with another command timeout, output cap and environment.

        ``None`` keeps this runtime's: commands run in the VM whatever a tool says. The
        network policy is the VM's, set when it was created.
        """
        if config is None or config == self._config:
            return self
        view = object.__new__(VercelSandboxRuntime)
        view._session = self._session
        view._config = config
        return view

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's deadline, not ours
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run a shell command (a string, by bash) or an argv list in the VM.

        Raises:
            RuntimeAccessError: ``cwd`` is outside the work dir.
            VercelSandboxError: The API refused or failed.
        """
        info = await self._session.ready()
        workdir = self._resolve(cwd or ".")
        argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
        if not argv:
            raise UserError("exec needs a command.")
        if stdin is not None:
            argv = await self._with_stdin(info, argv, stdin)
        body: CommandBody = {
            "command": argv[0],
            "args": argv[1:],
            "cwd": workdir,
            "env": {**self._config.env, **(env or {})},
            "sudo": False,
        }
        return await self._run(info, body, timeout or self._config.timeout)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """Return a file's bytes (at most ``max_bytes``).

        Raises:
            RuntimeAccessError: The path leaves the work dir.
            FileNotFoundError: No such file.
        """
        info = await self._session.ready()
        target = self._resolve(path)
        data = await self._session.api.read(info.id, target, self.cwd)
        if data is None:
            raise FileNotFoundError(path)
        return data if max_bytes is None else data[:max_bytes]

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (parents are created).

        Raises:
            RuntimeAccessError: The path leaves the work dir (or names the work dir).
        """
        info = await self._session.ready()
        target = self._resolve(path)
        if target == self.cwd:
            raise RuntimeAccessError(f"{path!r} is the work dir, not a file.")
        raw = data.encode() if isinstance(data, str) else bytes(data)
        relative = posixpath.relpath(target, self.cwd)
        await self._session.api.write(info.id, self.cwd, {relative: raw})

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        """Return a directory's entries, sorted by name.

        Raises:
            RuntimeAccessError: The path leaves the work dir.
            FileNotFoundError: No such directory.
        """
        relative = posixpath.relpath(self._resolve(path), self.cwd)  # find runs in the work dir
        script = f"find {shlex.quote(relative)} -mindepth 1 -maxdepth 1 -printf '%f\\t%y\\t%s\\n'"
        result = await self.exec(script)
        if not result.ok:
            raise FileNotFoundError(path)
        entries: list[DirEntry] = []
        for line in result.stdout.splitlines():
            name, kind, size = line.rsplit("\t", 2)
            entries.append(DirEntry(name=name, kind=_KINDS.get(kind, "other"), size=int(size)))  # pyright: ignore[reportArgumentType]
        return sorted(entries, key=lambda e: e.name)

    def _resolve(self, path: str) -> str:
        """The absolute path ``path`` names inside the work dir."""
        root = self.cwd
        if "\0" in path or ".." in path.split("/"):
            raise RuntimeAccessError(f"{path!r} leaves the work dir {root}.")
        target = posixpath.normpath(posixpath.join(root, path))
        if target != root and not target.startswith(root + "/"):
            raise RuntimeAccessError(f"{path!r} is outside the work dir {root}.")
        return target

    async def _with_stdin(self, info: SandboxInfo, argv: list[str], stdin: bytes) -> list[str]:
        """Write ``stdin`` to a file in the VM; a command reading it on standard input."""
        name = f"bastion-stdin-{uuid.uuid4().hex}"
        await self._session.api.write(info.id, "/tmp", {name: stdin})  # the VM's own /tmp
        return ["bash", "-c", 'exec "$@" < "$0"', f"/tmp/{name}", *argv]

    async def _run(self, info: SandboxInfo, body: CommandBody, seconds: float) -> ExecResult:
        api = self._session.api
        output = _Output(self._config.max_output_bytes)
        started = time.monotonic()
        command = await api.run(info.id, body)
        try:
            async with asyncio.timeout(seconds):
                async with aclosing(api.logs(info.id, command.id)) as pieces:
                    async for stream, data in pieces:
                        output.add(stream, data)
                exit_code = await api.wait(info.id, command.id)
        except TimeoutError:
            # It may have exited meanwhile; the result says it timed out either way.
            with suppress(VercelSandboxError):
                await api.kill(info.id, command.id)
            return output.result(137, time.monotonic() - started, timed_out=True)
        return output.result(exit_code, time.monotonic() - started)


class _Output:
    """A command's stdout and stderr, each kept up to a byte cap and counted in full."""

    __slots__ = ("_cap", "_kept", "_seen")

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._kept: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self._seen = {"stdout": 0, "stderr": 0}

    def add(self, stream: str, data: str) -> None:
        raw = data.encode()
        kept = self._kept.get(stream)
        if kept is None:
            return
        self._seen[stream] += len(raw)
        room = self._cap - len(kept)
        if room > 0:
            kept.extend(raw[:room])

    def result(self, exit_code: int, duration: float, *, timed_out: bool = False) -> ExecResult:
        seen = self._seen
        return ExecResult(
            stdout=self._kept["stdout"].decode(errors="replace"),
            stderr=self._kept["stderr"].decode(errors="replace"),
            exit_code=exit_code,
            timed_out=timed_out,
            stdout_bytes=seen["stdout"],
            stderr_bytes=seen["stderr"],
            truncated=any(seen[s] > len(self._kept[s]) for s in seen),
            duration=duration,
        )


def _checked(config: SandboxConfig, vcpus: object, lifetime: object) -> SandboxConfig:
    if not isinstance(config, SandboxConfig):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"VercelSandboxRuntime config must be a SandboxConfig, got {config!r}.")
    if config.allow_fs is not None:
        raise UserError(
            "VercelSandboxRuntime: config.allow_fs shares host paths, and a cloud VM has none; "
            "copy files in with write_file instead."
        )
    if isinstance(vcpus, bool) or not isinstance(vcpus, int) or vcpus < 1:
        raise UserError(f"VercelSandboxRuntime vcpus must be an int >= 1, got {vcpus!r}.")
    number = isinstance(lifetime, int | float) and not isinstance(lifetime, bool)
    if not number or not lifetime > 0:  # pyright: ignore[reportOperatorIssue]
        raise UserError(f"VercelSandboxRuntime lifetime must be seconds > 0, got {lifetime!r}.")
    return config
