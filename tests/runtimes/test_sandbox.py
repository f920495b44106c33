"""``SandboxRuntime``: what a command inside sees, and the escape suite.

Every case runs real bubblewrap; a missing ``bwrap`` fails these tests (``make install``
installs it). Each escape attempt must be contained with a clear error, and the host
directory beside the work dir must be unchanged afterwards (the ``host`` fixture).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from bastion.core import FsAccess, SandboxConfig, UserError
from bastion.runtimes import LocalRuntime, SandboxRuntime, bwrap_argv, find_bwrap

FAST = SandboxConfig(timeout=5)


def test_bwrap_is_installed() -> None:
    """Not a skip condition: the project's set-up installs bubblewrap."""
    assert os.access(find_bwrap(), os.X_OK)


async def test_runs_commands_in_the_work_dir(work: Path) -> None:  # covers S-21
    runtime = SandboxRuntime(work, FAST)
    result = await runtime.exec("pwd; cat hello.txt; echo made > new.txt; python3 -c 'print(6*7)'")
    assert result.ok, result.stderr
    assert result.stdout == f"{work}\nhello\n42\n"
    assert (work / "new.txt").read_text() == "made\n"


async def test_host_files_outside_the_work_dir_are_invisible(work: Path, host: Path) -> None:
    runtime = SandboxRuntime(work, FAST)
    result = await runtime.exec(
        f"cat {host}/secret.txt; ls /root /home; cat /etc/shadow; ls {Path.cwd()}"
    )
    assert "TOP-SECRET" not in result.stdout
    assert result.stderr.count("No such file or directory") == 5
    assert result.exit_code != 0


async def test_writes_outside_the_work_dir_fail(work: Path, host: Path) -> None:
    runtime = SandboxRuntime(work, FAST)
    result = await runtime.exec(
        f"echo x > /etc/evil; echo x > /usr/evil; echo x > /evil; echo x > {host}/secret.txt"
    )
    assert result.stderr.count("Read-only file system") == 3
    assert "No such file or directory" in result.stderr  # the host dir does not exist inside
    assert "evil" not in os.listdir("/etc")
    # /tmp is a private tmpfs: writes there vanish with the sandbox.
    await runtime.exec("echo x > /tmp/bastion-sandbox-probe")
    assert "bastion-sandbox-probe" not in os.listdir("/tmp")


async def test_symlink_and_hardlink_tricks_stay_inside(work: Path, host: Path) -> None:
    runtime = SandboxRuntime(work, FAST)
    # A link made inside the sandbox points to a path that does not exist there ...
    result = await runtime.exec(f"ln -s {host}/secret.txt leak; cat leak; ln /etc/passwd hard")
    assert "TOP-SECRET" not in result.stdout
    assert "No such file or directory" in result.stderr
    # ... a hard link across the bind mount is refused by the kernel ...
    assert (
        "Invalid cross-device link" in result.stderr or "Operation not permitted" in result.stderr
    )
    assert not (work / "hard").exists()
    # ... and the host-side file methods refuse to follow it out.
    with pytest.raises(Exception, match="outside the work dir"):
        await runtime.read_file("leak")


async def test_no_setuid_or_setgid_file_can_be_made(work: Path) -> None:
    """As root, a file made inside is root's on the host: its setuid bit must never stick."""
    runtime = SandboxRuntime(work, FAST)
    result = await runtime.exec(
        "cp /usr/bin/id tool; chmod 755 tool && echo plain-ok; chmod u+s tool; chmod g+s tool;"
        "python3 -c \"import os; os.open('made', os.O_CREAT | os.O_WRONLY, 0o4755)\";"
        "cp -p /usr/bin/passwd copy"
    )
    assert result.stdout == "plain-ok\n"
    assert result.stderr.count("Operation not permitted") == 4
    for name in ("tool", "copy"):
        assert (work / name).stat().st_mode & 0o6000 == 0
    assert not (work / "made").exists()


async def test_proc_shows_only_the_sandbox(work: Path) -> None:
    os.environ["BASTION_SANDBOX_CANARY"] = "leaked-env-secret"
    try:
        runtime = SandboxRuntime(work, FAST)
        result = await runtime.exec(
            "cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'; ls /proc | grep -c '^[0-9]';"
            "ls /proc/1/root/; cat /proc/1/root/root/.bashrc"
        )
    finally:
        del os.environ["BASTION_SANDBOX_CANARY"]
    assert "leaked-env-secret" not in result.stdout
    assert "BASTION_SANDBOX_CANARY" not in result.stdout
    lines = result.stdout.splitlines()
    assert "HOME=/tmp" in lines
    # A fresh PID namespace: bwrap's init, the shell and the pipeline, not the host's.
    process_count = next(int(line) for line in lines if line.isdigit())
    assert process_count < 10
    assert "root" not in lines  # /proc/1/root is the sandbox's own root: no /root there
    assert "No such file or directory" in result.stderr


async def test_no_network_by_default(work: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        runtime = SandboxRuntime(work, FAST)
        script = (
            "import socket\n"
            "s = socket.socket()\n"
            "s.settimeout(2)\n"
            f"s.connect(('127.0.0.1', {port}))\n"
        )
        result = await runtime.exec(["python3", "-c", script])
        assert result.exit_code == 1
        assert "ConnectionRefusedError" in result.stderr  # the sandbox's own loopback is empty
        dns = await runtime.exec(
            ["python3", "-c", "import socket; socket.getaddrinfo('pypi.org', 443)"]
        )
        assert "gaierror" in dns.stderr
        ip = await runtime.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1")
        assert ip.stdout.split() == ["lo"]
        # allow_network shares the host's network: the host's listener is reachable.
        shared = SandboxRuntime(work, SandboxConfig(timeout=5, allow_network=True))
        connected = await shared.exec(["python3", "-c", script])
        assert connected.ok, connected.stderr
    finally:
        server.close()


async def test_fork_bomb_is_contained(work: Path) -> None:
    runtime = SandboxRuntime(work, SandboxConfig(timeout=5, max_processes=32))
    result = await runtime.exec(
        'python3 -c "\nimport os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n'
        "            import time; time.sleep(30)\n        n += 1\nexcept OSError as e:\n"
        "    print('stopped after', n, type(e).__name__)\n\""
    )
    assert "stopped after" in result.stdout, result.stderr
    forks = int(result.stdout.split()[2])
    assert forks < 32
    assert result.duration < 5


async def test_memory_bomb_is_contained(work: Path) -> None:
    runtime = SandboxRuntime(work, SandboxConfig(timeout=10, max_memory_mb=128))
    result = await runtime.exec(["python3", "-c", "x = bytearray(512 << 20)"])
    assert result.exit_code == 1
    assert "MemoryError" in result.stderr


async def test_infinite_loop_hits_the_cpu_limit(work: Path) -> None:
    runtime = SandboxRuntime(work, SandboxConfig(timeout=10, cpu_seconds=1))
    result = await runtime.exec("while :; do :; done")
    assert result.exit_code == 137  # SIGKILL at the hard CPU limit
    assert not result.timed_out


async def test_wall_clock_timeout_kills_everything_inside(work: Path) -> None:
    runtime = SandboxRuntime(work, SandboxConfig(timeout=0.5))
    result = await runtime.exec("sleep 30 & sleep 30; echo never")
    assert result.timed_out
    assert result.exit_code == 137
    assert "never" not in result.stdout
    assert result.duration < 5


async def test_huge_output_is_cut_and_counted(work: Path) -> None:
    runtime = SandboxRuntime(work, SandboxConfig(timeout=10))
    result = await runtime.exec("head -c 5000000 /dev/zero | tr '\\0' y")
    assert result.truncated
    assert result.stdout_bytes == 5_000_000
    assert len(result.stdout) == 1_048_576


async def test_file_size_limit(work: Path) -> None:
    runtime = SandboxRuntime(work, SandboxConfig(timeout=5, max_file_size_mb=1))
    result = await runtime.exec("head -c 3000000 /dev/zero > big.bin")
    assert "File too large" in result.stderr or result.exit_code != 0
    assert (work / "big.bin").stat().st_size == 1 << 20


async def test_allow_fs_mounts_extra_paths(work: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.csv").write_text("a,b\n")
    out = tmp_path / "out"
    out.mkdir()
    config = SandboxConfig(
        timeout=5, allow_fs=FsAccess(read_only=(str(data),), read_write=(str(out),))
    )
    result = await SandboxRuntime(work, config).exec(
        f"cat {data}/in.csv; echo x > {data}/in.csv; echo done > {out}/r.txt"
    )
    assert result.stdout == "a,b\n"
    assert "Read-only file system" in result.stderr
    assert (data / "in.csv").read_text() == "a,b\n"
    assert (out / "r.txt").read_text() == "done\n"
    with pytest.raises(UserError, match="does not exist"):
        SandboxRuntime(work, SandboxConfig(allow_fs=FsAccess(read_only=("/no/such/dir",))))


def test_with_sandbox_switches_between_runtimes(work: Path) -> None:
    local = LocalRuntime(work)
    config = SandboxConfig(timeout=3)
    sandboxed = local.with_sandbox(config)
    assert isinstance(sandboxed, SandboxRuntime)
    assert sandboxed.config == config
    assert sandboxed.with_sandbox(config) is sandboxed
    assert isinstance(sandboxed.with_sandbox(None), LocalRuntime)
    assert local.with_sandbox(None) is local


def test_command_line_has_no_host_home_and_no_network(work: Path) -> None:
    argv = bwrap_argv("/usr/bin/bwrap", str(work), SandboxConfig(), str(work), ["true"])
    joined = " ".join(argv)
    assert "--unshare-all" in argv
    assert "--share-net" not in argv
    assert "--clearenv" in argv
    assert "/root" not in joined
    assert "/home" not in joined
    assert f"--bind {work} {work}" in joined


def test_missing_bwrap_is_a_user_error(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    find_bwrap.cache_clear()
    monkeypatch.setenv("PATH", str(work))
    try:
        with pytest.raises(UserError, match="apt-get install -y bubblewrap"):
            SandboxRuntime(work)
    finally:
        find_bwrap.cache_clear()
