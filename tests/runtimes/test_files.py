"""File access of the real runtimes: confined to the work dir against ``..`` and symlink tricks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import RuntimeAccessError, UserError
from bastion.runtimes import LocalRuntime, SandboxRuntime
from bastion.runtimes._workdir import WorkDir


@pytest.fixture(params=["local", "sandbox"])
def runtime(request: pytest.FixtureRequest, work: Path) -> LocalRuntime | SandboxRuntime:
    return LocalRuntime(work) if request.param == "local" else SandboxRuntime(work)


async def test_read_write_list_inside_the_work_dir(
    runtime: LocalRuntime, work: Path
) -> None:  # covers S-21
    await runtime.write_file("src/app/main.py", "print('hi')\n")

    assert (work / "src/app/main.py").read_text() == "print('hi')\n"
    assert await runtime.read_file("src/app/main.py") == b"print('hi')\n"
    assert await runtime.read_file(str(work / "hello.txt"), max_bytes=4) == b"hell"
    assert [(e.name, e.kind) for e in await runtime.list_dir()] == [
        ("hello.txt", "file"),
        ("src", "dir"),
    ]
    leftovers = [n for _, _, names in os.walk(work) for n in names if n.endswith(".tmp")]
    assert not leftovers, "the atomic write left a temporary file"


@pytest.mark.parametrize(
    "path",
    ["../host/secret.txt", "src/../../host/secret.txt", "..", "a/../../x"],
)
async def test_dot_dot_is_refused(runtime: LocalRuntime, host: Path, path: str) -> None:
    with pytest.raises(RuntimeAccessError, match=r"contains '\.\.'"):
        await runtime.read_file(path)
    with pytest.raises(RuntimeAccessError, match=r"contains '\.\.'"):
        await runtime.write_file(path, "pwned")


async def test_absolute_paths_outside_are_refused(runtime: LocalRuntime, host: Path) -> None:
    for path in (str(host / "secret.txt"), "/etc/passwd", "/proc/self/root/etc/passwd"):
        with pytest.raises(RuntimeAccessError, match="outside the work dir"):
            await runtime.read_file(path)
    with pytest.raises(RuntimeAccessError, match="outside the work dir"):
        await runtime.write_file(str(host / "secret.txt"), "pwned")
    with pytest.raises(RuntimeAccessError, match="outside the work dir"):
        await runtime.list_dir(str(host))


async def test_symlinks_leading_out_are_refused(
    runtime: LocalRuntime, work: Path, host: Path
) -> None:
    (work / "link.txt").symlink_to(host / "secret.txt")
    (work / "linkdir").symlink_to(host)
    (work / "inside.txt").symlink_to(work / "hello.txt")

    with pytest.raises(RuntimeAccessError, match="outside the work dir"):
        await runtime.read_file("link.txt")
    with pytest.raises(RuntimeAccessError, match="outside the work dir"):
        await runtime.write_file("link.txt", "pwned")
    with pytest.raises(RuntimeAccessError, match="outside the work dir"):
        await runtime.write_file("linkdir/new.txt", "pwned")
    assert not (host / "new.txt").exists()
    # A link that stays inside is followed.
    assert await runtime.read_file("inside.txt") == b"hello\n"
    listing = {e.name: e.kind for e in await runtime.list_dir()}
    assert listing["link.txt"] == "symlink"


async def test_rewriting_a_file_keeps_its_mode(runtime: LocalRuntime, work: Path) -> None:
    script = work / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    await runtime.write_file("run.sh", "#!/bin/sh\necho new\n")
    assert script.stat().st_mode & 0o777 == 0o755
    assert (await runtime.exec("./run.sh")).stdout == "new\n"


async def test_special_files_are_refused(runtime: LocalRuntime, work: Path) -> None:
    os.mkfifo(work / "pipe")  # reading it would block for ever
    with pytest.raises(RuntimeAccessError, match="not a regular file"):
        await runtime.read_file("pipe")
    with pytest.raises(IsADirectoryError):
        await runtime.write_file(".", "x")


def test_a_component_swapped_for_a_symlink_is_refused(work: Path, host: Path) -> None:
    """The check resolves, then the open walks with O_NOFOLLOW: a swap in between fails."""
    workdir = WorkDir(work)
    (work / "sub").mkdir()
    parts = workdir._parts("sub/file.txt")  # checked while 'sub' is a directory
    (work / "sub").rmdir()
    (work / "sub").symlink_to(host)  # ... then swapped by an attacker
    with (
        pytest.raises(RuntimeAccessError, match="changed into a symbolic link"),
        workdir._dir_fd(parts[:-1]),
    ):
        pass


def test_missing_work_dir_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is not an existing directory"):
        LocalRuntime(tmp_path / "nope")


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from(["..", ".", "a", "b", "link", "out", "", "/", "//", "hello.txt", "\\.."]),
        max_size=6,
    ).map("/".join)
)
def test_no_path_resolves_outside(work: Path, path: str) -> None:
    """Fuzz: every path is refused or lands inside the work dir, whatever the symlinks."""
    if not (work / "link").exists():
        (work / "link").symlink_to(work.parent)
        (work / "a").mkdir()
    workdir = WorkDir(work)
    try:
        resolved = workdir.resolve(path)
    except RuntimeAccessError:
        return
    assert resolved == str(work) or resolved.startswith(str(work) + os.sep)
