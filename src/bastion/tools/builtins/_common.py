"""What the built-in tools share: reaching the runtime and turning its refusals into tool errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bastion.core import RunContext, Runtime, RuntimeAccessError
from bastion.tools._outcome import ToolError

__all__ = ["guarded", "marker", "runtime_of"]

T = TypeVar("T")


def runtime_of(ctx: RunContext[Any]) -> Runtime:
    """The call's runtime, or a tool error saying how to give the agent one."""
    runtime = ctx.runtime
    if runtime is None:
        raise ToolError(
            f"Tool {ctx.tool_name!r} needs a runtime and this agent has none: "
            "create the agent with runtime=LocalRuntime('<work dir>') or "
            "SandboxRuntime('<work dir>') (bastion.runtimes).",
            kind="capability_blocked",
        )
    return runtime


async def guarded(path: str, work: Callable[[], Awaitable[T]]) -> T:
    """Run a file operation; map refusals and missing files to errors the model can act on."""
    try:
        return await work()
    except RuntimeAccessError as exc:
        raise ToolError(str(exc), kind="sandbox_violation") from None
    except FileNotFoundError:
        raise ToolError(
            f"{path!r} does not exist in the work dir: list_dir shows what does."
        ) from None
    except IsADirectoryError:
        raise ToolError(f"{path!r} is a directory: use list_dir on it.") from None
    except NotADirectoryError:
        raise ToolError(f"A parent of {path!r} is a file, not a directory.") from None
    except PermissionError:
        raise ToolError(f"Permission denied: {path!r}.") from None
    except OSError as exc:
        raise ToolError(f"{path!r}: {exc.strerror or exc}.") from None


def marker(what: str, shown: int, total: int, hint: str = "") -> str:
    """The line appended where output was cut, so neither model nor human mistakes it for all."""
    tail = f" {hint}" if hint else ""
    return f"\n[{what} truncated: showing the first {shown:,} of {total:,} bytes.{tail}]"
