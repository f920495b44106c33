"""The pydantic-monty sandbox that runs code mode's scripts.

One :class:`CodeSandbox` per agent owns one ``AsyncMonty`` worker pool. The pool starts on
the first script (so an agent that never runs code costs nothing, and ``import bastion``
never imports monty) and stays warm for every later script; :meth:`CodeSandbox.aclose`
(called by ``Agent.aclose()``) stops its worker process. Each script gets a fresh checkout
(a clean session, so no state leaks between scripts and a session hit by a time limit is
never fed again) with the configured limits. Called by ``_code_mode.py`` only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from bastion.core import JsonValue, RunError, UserError

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty, ResourceLimits

__all__ = ["CodeExecutionError", "CodeSandbox", "HostFunction", "ScriptRun"]

HostFunction = Callable[..., Awaitable[JsonValue]]
"""A tool as a script calls it: script values in, the tool's JSON result out."""

# pydantic-monty 1.4.0 finishes reaping its workers on a background thread after the pool
# has closed; an interpreter that exits within those few milliseconds aborts (observed
# about one exit in four after a script failed). Waiting this long after closing avoids it.
_CLOSE_SETTLE = 0.02


class CodeExecutionError(RunError):
    """A code-mode script failed: a syntax error, an uncaught exception, or a limit hit.

    The message is the sandbox's traceback, ending in ``ExceptionType: message``; the
    model reads it as the ``code_execute`` error.
    """


@dataclass(kw_only=True, slots=True)
class ScriptRun:
    """What a finished script produced.

    Attributes:
        value: The value of the script's trailing expression (``None`` without one).
        stdout: What the script printed (never shown to the model).
    """

    value: object
    stdout: str


class _ToolsNamespace:
    """The ``tools`` object scripts see; only the allow-listed methods cross."""

    def __init__(self, functions: dict[str, HostFunction]) -> None:
        self._functions = functions

    def __getattr__(self, name: str) -> HostFunction:
        try:
            return self._functions[name]
        except KeyError:
            raise AttributeError(name) from None


# Scripts see this name in errors: "'tools' object has no attribute 'x'".
_ToolsNamespace.__name__ = _ToolsNamespace.__qualname__ = "tools"


def _import_monty() -> ModuleType:
    try:
        import pydantic_monty
    except ImportError:
        raise UserError("Code mode needs pydantic-monty: pip install 'bastion[code]'.") from None
    return pydantic_monty


class CodeSandbox:
    """A lazily started, reused pool of monty workers.

    Args:
        timeout: Seconds a script may compute (time spent awaiting tools is not counted).
        max_memory: Bytes of heap a script may use.
        max_suspensions: Host round trips (tool calls, name lookups) a script may make.
    """

    def __init__(self, *, timeout: float, max_memory: int, max_suspensions: int) -> None:
        self._limits: ResourceLimits = {
            "max_feed_duration_secs": timeout,
            "max_memory": max_memory,
            "max_suspensions": max_suspensions,
        }
        self._pool: AsyncMonty | None = None
        self._started: asyncio.Future[None] | None = None

    @property
    def started(self) -> bool:
        """True while the worker pool is up."""
        return self._pool is not None

    async def run(self, source: str, functions: dict[str, HostFunction]) -> ScriptRun:
        """Run ``source`` with ``tools.<name>`` bound to ``functions``.

        Raises:
            CodeExecutionError: The script did not parse, raised, or hit a limit.
            UserError: pydantic-monty is not installed.
        """
        monty = _import_monty()
        pool = await self._ensure_pool(monty)
        namespace = monty.ClassInstance(
            _ToolsNamespace(functions), allowed_methods=sorted(functions)
        )
        out = monty.CollectString(max_bytes=1 << 20)
        try:
            async with pool.checkout(limits=self._limits) as session:
                value = await session.feed_run(
                    source, inputs={"tools": namespace}, print_callback=out
                )
        except (monty.MontyRuntimeError, monty.MontySyntaxError) as exc:
            raise CodeExecutionError(exc.display("traceback")) from None
        except monty.MontyError as exc:  # crashed worker, conversion or typing errors
            raise CodeExecutionError(f"{type(exc).__name__}: {exc}") from None
        return ScriptRun(value=value, stdout=out.output)

    async def _ensure_pool(self, monty: ModuleType) -> AsyncMonty:
        if self._started is not None and not self._started.done():
            await asyncio.shield(self._started)  # another script is starting the pool
        if self._pool is not None:
            return self._pool
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._started = started
        pool: AsyncMonty = monty.AsyncMonty(min_processes=1)
        try:
            await pool.__aenter__()
        except BaseException as exc:
            self._started = None
            started.set_exception(CodeExecutionError(f"The sandbox did not start: {exc}"))
            started.exception()  # retrieved: concurrent waiters re-raise it themselves
            raise
        self._pool = pool
        started.set_result(None)
        return pool

    async def aclose(self) -> None:
        """Stop the worker pool (a later script starts a new one)."""
        pool, self._pool, self._started = self._pool, None, None
        if pool is None:
            return
        await pool.__aexit__(None, None, None)
        await asyncio.sleep(_CLOSE_SETTLE)
