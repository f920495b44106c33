"""``InMemoryRuntime``: the test double keeps the real runtimes' rules."""

from __future__ import annotations

import pytest

from bastion.core import ExecResult, Runtime, RuntimeAccessError, SandboxConfig
from bastion.testing import ExecCall, InMemoryRuntime


async def test_files_and_builtin_commands() -> None:  # covers S-24
    runtime = InMemoryRuntime({"notes/a.txt": "alpha\n"}, cwd="/work")
    assert isinstance(runtime, Runtime)

    await runtime.write_file("b.txt", "beta\n")
    assert await runtime.read_file("/work/b.txt") == b"beta\n"
    assert [(e.name, e.kind) for e in await runtime.list_dir()] == [
        ("b.txt", "file"),
        ("notes", "dir"),
    ]
    cat = await runtime.exec("cat notes/a.txt b.txt")
    assert (cat.stdout, cat.exit_code) == ("alpha\nbeta\n", 0)
    unbalanced = await runtime.exec("echo 'oops")
    assert (unbalanced.exit_code, unbalanced.stderr) == (2, "syntax error: No closing quotation\n")
    missing = await runtime.exec("make all")
    assert (missing.exit_code, missing.stderr) == (127, "make: command not found\n")
    assert runtime.files == {"/work/b.txt": "beta\n", "/work/notes/a.txt": "alpha\n"}


async def test_paths_outside_the_work_dir_are_refused() -> None:
    runtime = InMemoryRuntime(cwd="/work")
    with pytest.raises(RuntimeAccessError, match=r"contains '\.\.'"):
        await runtime.read_file("../etc/passwd")
    with pytest.raises(RuntimeAccessError, match="outside the work dir '/work'"):
        await runtime.write_file("/etc/passwd", "x")
    with pytest.raises(FileNotFoundError):
        await runtime.read_file("nope.txt")


async def test_handlers_and_sandboxed_views_share_the_log() -> None:
    def pytest_handler(call: ExecCall, rt: InMemoryRuntime) -> ExecResult:
        return ExecResult(stdout="1 passed\n", stderr="", exit_code=0)

    runtime = InMemoryRuntime(commands={"pytest": pytest_handler})
    config = SandboxConfig(timeout=3)
    sandboxed = runtime.with_sandbox(config)

    await runtime.exec("pytest -q")
    result = await sandboxed.exec(["pytest", "-x"], timeout=2)

    assert result.stdout == "1 passed\n"
    assert [(c.argv, c.sandbox, c.timeout) for c in runtime.calls] == [
        (("pytest", "-q"), None, None),
        (("pytest", "-x"), config, 2),
    ]


async def test_output_is_capped_like_a_real_runtime() -> None:
    runtime = InMemoryRuntime(commands={"yes": lambda call, rt: "y\n" * 100}, max_output_bytes=10)
    result = await runtime.exec("yes")
    assert (result.stdout, result.stdout_bytes, result.truncated) == ("y\ny\ny\ny\ny\n", 200, True)
