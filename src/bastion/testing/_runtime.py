"""``InMemoryRuntime``: a runtime whose files live in a dict and whose commands are scripted.

For tests of tools and agents that use ``ctx.runtime`` without touching the disk or
starting processes. It keeps the real runtimes' path rules (``..`` and paths outside the
work dir are refused) and records every command with the sandbox it ran under, so a test
can assert what ran where.
"""

from __future__ import annotations

import inspect
import posixpath
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bastion.core import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DirEntry,
    ExecResult,
    Runtime,
    RuntimeAccessError,
    SandboxConfig,
    UserError,
)

__all__ = ["CommandHandler", "ExecCall", "InMemoryRuntime"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecCall:
    """One command an :class:`InMemoryRuntime` was asked to run.

    Attributes:
        command: The command as given (a string or an argv list).
        argv: The command split into words.
        cwd: The absolute directory it ran in.
        timeout: The timeout asked for, if any.
        env: Extra environment variables given.
        stdin: Bytes fed to standard input.
        sandbox: The sandbox config of the runtime it ran in (``None``: not sandboxed).
    """

    command: str | tuple[str, ...]
    argv: tuple[str, ...]
    cwd: str
    timeout: float | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    stdin: bytes | None = None
    sandbox: SandboxConfig | None = None


CommandHandler = Callable[
    [ExecCall, "InMemoryRuntime"], "ExecResult | str | Awaitable[ExecResult | str]"
]
"""Scripts a command: returns its result, or just its stdout (exit code 0)."""


class _State:
    __slots__ = ("calls", "commands", "files")

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.calls: list[ExecCall] = []
        self.commands: dict[str, CommandHandler] = {}


class InMemoryRuntime:
    """A fake runtime: files in memory, commands answered by handlers you register.

    Built in: ``echo``, ``cat``, ``pwd``, ``ls``, ``true`` and ``false``; anything else
    without a handler exits 127 ("command not found"). A ``with_sandbox`` view shares the
    files and the call log, and records its config on each call.

    Args:
        files: Initial files: path (relative to ``cwd`` or absolute inside it) to content.
        cwd: The work dir (absolute, POSIX).
        commands: Handlers by command name (the first word).
        max_output_bytes: Bytes of stdout and of stderr kept.
    """

    def __init__(
        self,
        files: Mapping[str, str | bytes] | None = None,
        *,
        cwd: str = "/work",
        commands: Mapping[str, CommandHandler] | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> None:
        if not cwd.startswith("/"):
            raise UserError(f"InMemoryRuntime cwd must be an absolute path, got {cwd!r}.")
        self._cwd = posixpath.normpath(cwd)
        self._state = _State()
        self.sandbox: SandboxConfig | None = None
        self.max_output_bytes = max_output_bytes
        for name, handler in (commands or {}).items():
            self.on(name, handler)
        for path, content in (files or {}).items():
            self._state.files[self._absolute(path)] = _bytes(content)

    @property
    def cwd(self) -> str:
        """The work dir."""
        return self._cwd

    @property
    def files(self) -> dict[str, str]:
        """Every file, by absolute path, decoded as UTF-8 (a snapshot)."""
        return {
            p: d.decode("utf-8", errors="replace") for p, d in sorted(self._state.files.items())
        }

    @property
    def calls(self) -> list[ExecCall]:
        """The commands run so far, in order (shared with sandboxed views)."""
        return list(self._state.calls)

    def on(self, name: str, handler: CommandHandler) -> None:
        """Answer the command ``name`` (its first word) with ``handler``."""
        self._state.commands[name] = handler

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the command's deadline, not ours
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
    ) -> ExecResult:
        """Run a scripted or built-in command and record it."""
        try:
            argv = tuple(shlex.split(command) if isinstance(command, str) else command)
        except ValueError as exc:  # unbalanced quotes: what a shell would report
            return ExecResult(stdout="", stderr=f"syntax error: {exc}\n", exit_code=2)
        call = ExecCall(
            command=command if isinstance(command, str) else tuple(command),
            argv=argv,
            cwd=self._absolute(cwd) if cwd is not None else self._cwd,
            timeout=timeout,
            env=dict(env or {}),
            stdin=stdin,
            sandbox=self.sandbox,
        )
        self._state.calls.append(call)
        handler = self._state.commands.get(argv[0]) if argv else None
        if handler is not None:
            result = handler(call, self)
            if inspect.isawaitable(result):
                result = await result
        else:
            result = self._builtin(call)
        if isinstance(result, str):
            result = ExecResult(stdout=result, stderr="", exit_code=0)
        return self._capped(result)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """Return a file's bytes (at most ``max_bytes``)."""
        key = self._absolute(path)
        if key not in self._state.files:
            if self._is_dir(key):
                raise IsADirectoryError(f"Is a directory: {path!r}")
            raise FileNotFoundError(f"No such file: {path!r}")
        data = self._state.files[key]
        return data if max_bytes is None else data[:max_bytes]

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file."""
        key = self._absolute(path)
        if key == self._cwd or self._is_dir(key):
            raise IsADirectoryError(f"Is a directory: {path!r}")
        self._state.files[key] = _bytes(data)

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        """Return a directory's entries, sorted by name."""
        return self._entries(path)

    def _entries(self, path: str) -> list[DirEntry]:
        base = self._absolute(path)
        if base != self._cwd and not self._is_dir(base):
            raise FileNotFoundError(f"No such directory: {path!r}")
        entries: dict[str, DirEntry] = {}
        prefix = base.rstrip("/") + "/"
        for name, data in self._state.files.items():
            if name.startswith(prefix):
                head, _, rest = name[len(prefix) :].partition("/")
                kind = "dir" if rest else "file"
                entries[head] = DirEntry(name=head, kind=kind, size=0 if rest else len(data))
        return [entries[k] for k in sorted(entries)]

    def with_sandbox(self, config: SandboxConfig | None) -> Runtime:
        """A view sharing files and calls whose commands record ``config``."""
        view = InMemoryRuntime.__new__(InMemoryRuntime)
        view._cwd = self._cwd
        view._state = self._state
        view.sandbox = config
        view.max_output_bytes = self.max_output_bytes
        return view

    def _absolute(self, path: str) -> str:
        if ".." in path.split("/"):
            raise RuntimeAccessError(
                f"Path {path!r} contains '..': name files inside the work dir without '..'."
            )
        full = posixpath.normpath(posixpath.join(self._cwd, path))
        if full != self._cwd and not full.startswith(self._cwd + "/"):
            raise RuntimeAccessError(
                f"Path {path!r} resolves to {full!r}, outside the work dir {self._cwd!r}: "
                "only files inside the work dir are reachable."
            )
        return full

    def _is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return any(name.startswith(prefix) for name in self._state.files)

    def _builtin(self, call: ExecCall) -> ExecResult:
        name, args = (call.argv[0], call.argv[1:]) if call.argv else ("", ())
        if name == "echo":
            return ExecResult(stdout=" ".join(args) + "\n", stderr="", exit_code=0)
        if name in ("true", "false"):
            return ExecResult(stdout="", stderr="", exit_code=0 if name == "true" else 1)
        if name == "pwd":
            return ExecResult(stdout=call.cwd + "\n", stderr="", exit_code=0)
        if name == "cat":
            out: list[str] = []
            for arg in args:
                data = self._state.files.get(self._absolute(posixpath.join(call.cwd, arg)))
                if data is None:
                    return ExecResult(
                        stdout="".join(out),
                        stderr=f"cat: {arg}: No such file or directory\n",
                        exit_code=1,
                    )
                out.append(data.decode("utf-8", errors="replace"))
            return ExecResult(stdout="".join(out), stderr="", exit_code=0)
        if name == "ls":
            try:
                names = [e.name for e in self._entries(args[0] if args else call.cwd)]
            except FileNotFoundError as exc:
                return ExecResult(stdout="", stderr=f"ls: {exc}\n", exit_code=2)
            return ExecResult(stdout="".join(n + "\n" for n in names), stderr="", exit_code=0)
        return ExecResult(stdout="", stderr=f"{name}: command not found\n", exit_code=127)

    def _capped(self, result: ExecResult) -> ExecResult:
        cap = self.max_output_bytes
        out, err = result.stdout.encode(), result.stderr.encode()
        cut = len(out) > cap or len(err) > cap
        return replace(
            result,
            stdout=out[:cap].decode("utf-8", errors="replace") if cut else result.stdout,
            stderr=err[:cap].decode("utf-8", errors="replace") if cut else result.stderr,
            stdout_bytes=len(out),
            stderr_bytes=len(err),
            truncated=result.truncated or cut,
        )


def _bytes(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else bytes(content)
