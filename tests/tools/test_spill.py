"""The spill store on its own: layout, modes, atomic writes, handle resolution (SPEC T-15, G-41).

Reading through the agent (``read_result``) is in ``test_limits_agent.py``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from bastion import ToolOptions
from bastion.agent import Agent
from bastion.core import ToolMessage
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ResultReadError, SpillStore, tool, truncate_text

RUN = "run_0123456789abcdef"


def test_the_default_root_is_under_the_temporary_directory() -> None:
    # covers T-15
    assert SpillStore().root == Path(tempfile.gettempdir(), "bastion-spill")


async def test_files_are_0600_and_directories_0700_whatever_the_umask(tmp_path: Path) -> None:
    # covers T-15
    store = SpillStore(tmp_path / "spill")
    previous = os.umask(0)
    try:
        handle = await store.write(RUN, "body")
    finally:
        os.umask(previous)

    assert re.fullmatch(rf"spill:{RUN}/[A-Za-z0-9_-]{{24}}", handle)
    token = handle.rsplit("/", 1)[1]
    stored = tmp_path / "spill" / RUN / f"{token}.txt"
    assert stored.read_text() == "body"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "spill" / RUN).stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "spill").stat().st_mode & 0o777 == 0o700


async def test_each_write_gets_its_own_unguessable_handle(tmp_path: Path) -> None:
    # covers T-15, G-41
    store = SpillStore(tmp_path)
    handles = {await store.write(RUN, f"body {i}") for i in range(20)}

    assert len(handles) == 20
    assert sorted(p.name for p in (tmp_path / RUN).iterdir()) == sorted(
        f"{h.rsplit('/', 1)[1]}.txt" for h in handles
    )  # one file per handle, no temporary left behind
    for handle in handles:
        with store.open(handle, RUN) as file:
            assert file.read().startswith(b"body ")


async def test_text_that_is_not_valid_unicode_round_trips(tmp_path: Path) -> None:
    store = SpillStore(tmp_path)
    handle = await store.write(RUN, "a\udc80b é")

    with store.open(handle, RUN) as file:
        assert file.read() == b"a\xed\xb2\x80b \xc3\xa9"


async def test_a_removed_result_is_an_unknown_handle(tmp_path: Path) -> None:
    # covers G-41
    store = SpillStore(tmp_path)
    handle = await store.write(RUN, "gone soon")
    token = handle.rsplit("/", 1)[1]
    (tmp_path / RUN / f"{token}.txt").unlink()

    with pytest.raises(ResultReadError, match="No stored result has the handle"):
        store.open(handle, RUN)


async def test_a_directory_at_the_handle_is_refused(tmp_path: Path) -> None:
    # covers G-41
    store = SpillStore(tmp_path)
    handle = await store.write(RUN, "x")
    token = handle.rsplit("/", 1)[1]
    (tmp_path / RUN / f"{token}.txt").unlink()
    (tmp_path / RUN / f"{token}.txt").mkdir()

    with pytest.raises(ResultReadError):
        store.open(handle, RUN)


async def test_a_run_id_that_cannot_name_a_directory_is_not_written(tmp_path: Path) -> None:
    # covers T-15
    with pytest.raises(OSError, match="cannot name a spill directory"):
        await SpillStore(tmp_path).write("../escape", "x")
    assert os.listdir(tmp_path) == []


async def test_a_shared_writable_run_directory_is_refused(tmp_path: Path) -> None:
    # covers T-15
    (tmp_path / RUN).mkdir()
    (tmp_path / RUN).chmod(0o777)

    with pytest.raises(PermissionError, match="writable by other users"):
        await SpillStore(tmp_path).write(RUN, "x")
    assert list((tmp_path / RUN).iterdir()) == []


async def test_when_the_store_cannot_write_the_agent_cuts_in_the_middle(tmp_path: Path) -> None:
    root = tmp_path / "not-a-directory"
    root.write_text("occupied")
    body = "y" * 2000

    @tool(side_effect_class="read_only", truncation_strategy="spill_to_file", max_result_tokens=128)
    def dump() -> str:
        """Return a large result."""
        return body

    model = ScriptedModel([Turn(tool_calls=[Call("dump")]), "done"])
    agent = Agent("a", model=model, tools=[dump], tool_options=ToolOptions(spill_dir=root))

    result = await agent.run("go")

    assert result.status == "completed"
    message = model.requests[1].messages[-1]
    assert isinstance(message, ToolMessage)
    note = "full result not stored (FileExistsError)"
    assert message.text == truncate_text(body, 128, note=note)
    assert f"[... 1,566 characters omitted; {note} ...]" in message.text
    assert root.read_text() == "occupied"
