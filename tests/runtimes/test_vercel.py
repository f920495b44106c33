"""``VercelSandboxRuntime`` against a local double of the Vercel Sandbox API (real HTTP)."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from bastion import Agent
from bastion.core import FsAccess, RuntimeAccessError, SandboxConfig, UserError
from bastion.runtimes import VercelSandboxError, VercelSandboxRuntime
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools.builtins import bash, file_tools

from .vercel_api_double import TEAM, TOKEN, VercelDouble, serve


@pytest.fixture
def double(tmp_path: Path) -> Iterator[VercelDouble]:
    state = VercelDouble(root=tmp_path)
    server = serve(state)
    yield state
    server.shutdown()
    server.server_close()
    for process in state.processes.values():
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
async def runtime(double: VercelDouble) -> AsyncIterator[VercelSandboxRuntime]:
    async with make_runtime(double) as opened:
        yield opened


def make_runtime(double: VercelDouble, **kwargs: Any) -> VercelSandboxRuntime:
    return VercelSandboxRuntime(
        token=TOKEN,
        project_id="prj_123",
        team_id=TEAM,
        base_url=double.base_url,
        **kwargs,
    )


async def test_an_agent_works_in_the_vm_with_the_built_in_tools(double: VercelDouble) -> None:
    # covers S-23
    script = 'cat notes.txt; echo "to stderr" >&2; exit 3'
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[Call("write_file", {"path": "docs/notes.txt", "content": "hello vm"})]
            ),
            Turn(tool_calls=[Call("bash", {"command": script, "cwd": "docs"})]),
            Turn(tool_calls=[Call("read_file", {"path": "docs/notes.txt"})]),
            Turn(tool_calls=[Call("list_dir", {"path": "docs"})]),
            "Done.",
        ]
    )
    async with make_runtime(double) as runtime:
        agent = Agent("coder", model=model, tools=[bash, *file_tools], runtime=runtime)
        events = [e async for e in agent.stream("Write a note and check it.")]
        assert runtime.sandbox_id == "sbx_001"
    results = [getattr(e, "result", "") for e in events if e.type == "tool.execute.end"]
    assert (double.root / "docs" / "notes.txt").read_text() == "hello vm"
    bash_result = json.loads(results[1])
    assert bash_result == {"exit_code": 3, "stdout": "hello vm", "stderr": "to stderr\n"}
    assert "hello vm" in results[2]
    assert "notes.txt" in results[3]
    assert double.created == 1  # created once, on first use
    assert double.stopped == 1  # stopped by the context manager


async def test_requests_follow_the_reference_field_by_field(
    double: VercelDouble, runtime: VercelSandboxRuntime
) -> None:
    # covers S-23
    await runtime.write_file("a/b.txt", "x")
    result = await runtime.exec(["printf", "%s", "$HOME"], env={"GREETING": "hi"})
    assert result.stdout == "$HOME"  # an argv list is not run by a shell
    create, write, run, logs, wait = double.requests
    assert (create.method, create.path) == ("POST", "/v1/sandboxes")
    assert json.loads(create.body) == {
        "projectId": "prj_123",
        "runtime": "python3.13",
        "timeout": 300000,
        "resources": {"vcpus": 2},
        "networkPolicy": {"mode": "deny-all"},
    }
    assert (write.path, write.headers["x-cwd"]) == (
        "/v1/sandboxes/sbx_001/fs/write",
        "/vercel/sandbox",
    )
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(write.body))) as tar:
        assert tar.getnames() == ["a/b.txt"]
    assert json.loads(run.body) == {
        "command": "printf",
        "args": ["%s", "$HOME"],
        "cwd": "/vercel/sandbox",
        "env": {"GREETING": "hi"},
        "sudo": False,
    }
    assert logs.path == "/v1/sandboxes/sbx_001/cmd/cmd_1/logs"
    assert (wait.path, wait.query["wait"]) == ("/v1/sandboxes/sbx_001/cmd/cmd_1", ["true"])
    assert all(r.query["teamId"] == [TEAM] for r in double.requests)
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in double.requests)


async def test_output_is_capped_and_counted_and_stdin_reaches_the_command(
    double: VercelDouble,
) -> None:
    async with make_runtime(double, config=SandboxConfig(max_output_bytes=10)) as runtime:
        result = await runtime.exec("head -c 25 /dev/zero | tr '\\0' x")
        assert (result.stdout, result.stdout_bytes, result.truncated) == ("x" * 10, 25, True)
        piped = await runtime.exec(["wc", "-c"], stdin=b"12345")
        assert piped.stdout.strip() == "5"


async def test_a_command_past_its_timeout_is_killed(
    double: VercelDouble, runtime: VercelSandboxRuntime
) -> None:
    result = await runtime.exec("sleep 30", timeout=0.3)
    assert result.timed_out
    assert result.exit_code == 137
    assert double.killed == ["cmd_1"]


async def test_paths_stay_in_the_work_dir(runtime: VercelSandboxRuntime) -> None:
    for path in ("../etc/passwd", "/etc/passwd", "a/../../x", "nul\0l"):
        with pytest.raises(RuntimeAccessError):
            await runtime.read_file(path)
    with pytest.raises(RuntimeAccessError):
        await runtime.exec("pwd", cwd="/")
    with pytest.raises(FileNotFoundError):
        await runtime.read_file("missing.txt")
    with pytest.raises(FileNotFoundError):
        await runtime.list_dir("missing")


async def test_api_errors_name_the_endpoint_and_status_never_the_token(
    double: VercelDouble, runtime: VercelSandboxRuntime
) -> None:
    double.failures.append(
        (429, {"error": {"code": "rate_limited", "message": "Slow down"}}, {"retry-after": "0"})
    )
    assert (await runtime.exec("true")).ok  # a rate limit is retried
    double.failures.append((403, {"error": {"code": "forbidden", "message": "Not allowed"}}, {}))
    with pytest.raises(VercelSandboxError) as caught:
        await runtime.exec("true")
    error = caught.value
    assert (error.status, error.code) == (403, "forbidden")
    assert str(error) == (
        "Vercel Sandbox API POST /v1/sandboxes/sbx_001/cmd failed (403 forbidden): Not allowed"
    )
    assert TOKEN not in repr(error.__dict__) + str(error)


async def test_a_wrong_token_is_a_clear_error(double: VercelDouble) -> None:
    async with VercelSandboxRuntime(
        token="wrong",
        project_id="prj_123",
        team_id=TEAM,
        base_url=double.base_url,
    ) as runtime:
        with pytest.raises(
            VercelSandboxError, match=r"POST /v1/sandboxes failed \(401 forbidden\)"
        ):
            await runtime.exec("true")


async def test_attaching_to_a_sandbox_does_not_create_or_stop_it(double: VercelDouble) -> None:
    async with make_runtime(double, sandbox_id="sbx_001") as runtime:
        assert (await runtime.exec("echo hi")).stdout == "hi\n"
    assert (double.created, double.stopped) == (0, 0)


def test_bad_configuration_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERCEL_TOKEN", raising=False)
    monkeypatch.delenv("VERCEL_PROJECT_ID", raising=False)
    with pytest.raises(UserError, match="needs a token"):
        VercelSandboxRuntime(project_id="p")
    with pytest.raises(UserError, match="needs a project"):
        VercelSandboxRuntime(token="t")
    with pytest.raises(UserError, match="vcpus must be an int >= 1, got 0"):
        VercelSandboxRuntime(token="t", project_id="p", vcpus=0)
    host_paths = SandboxConfig(allow_fs=FsAccess(read_only=("/d",)))
    with pytest.raises(UserError, match="a cloud VM has none"):
        VercelSandboxRuntime(token="t", project_id="p", config=host_paths)
