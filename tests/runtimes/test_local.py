"""``LocalRuntime.exec``: structured results, output cap, deadline, cancellation."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from bastion.core import RuntimeAccessError, UserError
from bastion.runtimes import LocalRuntime


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose; it is reaped by its parent.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ", 1)[1][0] != "Z"


async def test_exec_reports_stdout_stderr_and_exit_code(work: Path) -> None:  # covers S-21, S-22
    runtime = LocalRuntime(work)
    result = await runtime.exec("cat hello.txt; echo oops >&2; exit 3")
    assert (result.stdout, result.stderr, result.exit_code) == ("hello\n", "oops\n", 3)
    assert not result.ok
    argv = await runtime.exec(["printf", "%s|", "a b", "c"], stdin=b"")
    assert argv.stdout == "a b|c|"
    piped = await runtime.exec("tr a-z A-Z", stdin=b"shout")
    assert piped.stdout == "SHOUT"
    env = await runtime.exec("echo $GREETING", env={"GREETING": "hi"})
    assert env.stdout == "hi\n"


async def test_output_is_capped_at_one_mebibyte(work: Path) -> None:  # covers S-22
    runtime = LocalRuntime(work)
    result = await runtime.exec("head -c 3000000 /dev/zero | tr '\\0' a")
    assert len(result.stdout) == 1_048_576
    assert result.stdout_bytes == 3_000_000
    assert result.truncated
    assert result.exit_code == 0


async def test_timeout_kills_the_whole_process_group(work: Path) -> None:
    runtime = LocalRuntime(work)
    # The deadline leaves a loaded machine time to start the child and write its pid.
    result = await runtime.exec("sleep 60 & echo $! > child.pid; wait", timeout=3)
    assert result.timed_out
    assert result.exit_code == 137
    child = int((work / "child.pid").read_text())
    assert not _alive(child)


async def test_cancelling_the_call_kills_the_command(work: Path) -> None:
    runtime = LocalRuntime(work)
    os.mkfifo(work / "started")
    task = asyncio.create_task(runtime.exec("echo $$ > started; exec sleep 60"))
    # Opening the FIFO blocks (in a thread) until the command has written its pid.
    pid = int(await asyncio.to_thread((work / "started").read_text))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _alive(pid)


async def test_cwd_is_confined_and_arguments_checked(work: Path) -> None:
    (work / "sub").mkdir()
    runtime = LocalRuntime(work, inherit_env=False)
    assert (await runtime.exec("pwd", cwd="sub")).stdout == f"{work}/sub\n"
    with pytest.raises(RuntimeAccessError, match=r"contains '\.\.'"):
        await runtime.exec("pwd", cwd="..")
    with pytest.raises(UserError, match="timeout must be a number of seconds > 0, got 0"):
        await runtime.exec("true", timeout=0)
    with pytest.raises(UserError, match="non-empty list of strings"):
        await runtime.exec([])
    with pytest.raises(UserError, match="timeout must be a number of seconds > 0, got -1"):
        LocalRuntime(work, timeout=-1)  # checked at construction
    assert "HOME" in (await runtime.exec("env")).stdout
    assert "PYTEST_CURRENT_TEST" not in (await runtime.exec("env")).stdout


async def test_a_missing_program_exits_127_like_a_shell(work: Path) -> None:
    runtime = LocalRuntime(work)
    result = await runtime.exec(["no-such-program-xyz", "--help"])
    assert (result.exit_code, result.stderr) == (127, "no-such-program-xyz: command not found\n")
    shell = await runtime.exec("no-such-program-xyz")
    assert shell.exit_code == 127
    with pytest.raises(UserError, match="max_output_bytes must be an int >= 1, got 0"):
        LocalRuntime(work, max_output_bytes=0)
