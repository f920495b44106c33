"""The ``bash`` built-in tool: a shell command through the call's runtime.

The model gets a structured result (exit code, stdout, stderr); output over the runtime's
cap (1 MiB by default) ends with a truncation line saying how much there was. A timeout is a
``timeout`` tool error that still carries what the command printed.
"""

from __future__ import annotations

from typing import Any

from bastion.core import ExecResult, RunContext, RuntimeAccessError
from bastion.tools._outcome import ToolError
from bastion.tools._tool import Tool, ToolResult, tool

from ._common import marker, runtime_of

__all__ = ["bash", "format_exec"]


def format_exec(result: ExecResult) -> dict[str, Any]:
    """The structured result the model reads, with truncation lines where output was cut."""
    stdout, stderr = result.stdout, result.stderr
    shown_out = len(stdout.encode())
    if result.stdout_bytes > shown_out:
        stdout += marker("stdout", shown_out, result.stdout_bytes, "Redirect it to a file.")
    shown_err = len(stderr.encode())
    if result.stderr_bytes > shown_err:
        stderr += marker("stderr", shown_err, result.stderr_bytes)
    return {"exit_code": result.exit_code, "stdout": stdout, "stderr": stderr}


async def _bash(
    ctx: RunContext[Any],
    command: str,
    timeout: float | None = None,  # noqa: ASYNC109 - the command's deadline, not ours
    cwd: str | None = None,
) -> ToolResult:
    """Run a bash command in the work dir and return its exit code, stdout and stderr.

    Args:
        ctx: The run context; its runtime runs the command.
        command: The command line, run by bash (pipes, redirects and && work).
        timeout: Seconds before the command is killed (at most the runtime's limit).
        cwd: Directory to run in, relative to the work dir (default: the work dir).
    """
    runtime = runtime_of(ctx)
    if timeout is not None and not timeout > 0:
        raise ToolError(f"timeout must be a number of seconds > 0, got {timeout!r}.")
    try:
        result = await runtime.exec(command, cwd=cwd, timeout=timeout)
    except RuntimeAccessError as exc:
        raise ToolError(str(exc), kind="sandbox_violation") from None
    output = format_exec(result)
    metadata: dict[str, Any] = {
        "exit_code": result.exit_code,
        "duration": result.duration,
        "truncated": result.truncated,
    }
    if result.timed_out:
        raise ToolError(
            f"The command timed out after {result.duration:.1f}s and was killed. "
            f"Output so far: {output}",
            kind="timeout",
            metadata=metadata,
            untrusted=True,
        )
    # What a command prints is data, not instructions.
    return ToolResult(output=output, metadata=metadata, untrusted=True)


bash: Tool = tool(
    _bash,
    name="bash",
    side_effect_class="side_effecting",
    trust_class="first_party_built_in",
    execution_mode="sequential",  # commands share the work dir; their order matters
    label="Run a shell command",
)
"""Run a shell command through ``ctx.runtime`` (sandboxed when the agent or tool says so)."""
