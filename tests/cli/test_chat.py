"""``bastion chat`` end to end: a real CLI process driven through pipes, a scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from .chat_main import assistant

MAIN = Path(__file__).with_name("chat_main.py")
ROOT = Path(__file__).parents[2]


class Repl:
    """The chat process: lines in, everything it printed so far out."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.seen = ""

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{line}\n".encode())
        await self.process.stdin.drain()

    async def until(self, text: str) -> str:
        """Read until ``text`` was printed; return what came since the last call."""
        assert self.process.stdout is not None
        start = len(self.seen)
        while text not in self.seen[start:]:
            chunk = await asyncio.wait_for(self.process.stdout.read(4096), timeout=60)
            if not chunk:
                raise AssertionError(f"the chat ended before {text!r}:\n{self.seen}")
            self.seen += chunk.decode()
        return self.seen[start:]


async def _chat(tmp_path: Path, *args: str) -> Repl:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "BASTION_CHAT_HISTORY": ""}
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(MAIN), "chat", *args,
        cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    return Repl(process)


async def test_a_chat_streams_asks_approvals_runs_commands_and_survives_ctrl_c(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'chat.db'}"
    repl = await _chat(tmp_path, f"{MAIN}:assistant", "--store", store)
    banner = await repl.until("you> ")
    assert "assistant on test:first" in banner
    session_id = banner.split("session ")[1].split(".")[0]

    await repl.send("hello")
    assert "[first] 1 user messages, last: hello" in await repl.until("you> ")

    await repl.send("delete notes.txt")  # the call needs approval: asked inline
    assert 'approve delete_file(path="notes.txt")? [y/N]' in await repl.until("[y/N] ")
    await repl.send("y")
    shown = await repl.until("you> ")
    assert "approved" in shown
    assert "tool delete_file" in shown  # the call's panel, with its result
    assert "deleted notes.txt" in shown
    assert "The call said: deleted notes.txt" in shown

    await repl.send("delete keep.txt")
    await repl.until("[y/N] ")
    await repl.send("n")
    assert "The call said: " in await repl.until("you> ")

    await repl.send("hang")  # streams, then waits for ever: Ctrl-C cancels the turn only
    await repl.until("Thinking about it")
    repl.process.send_signal(signal.SIGINT)
    assert "cancelled: the session goes on" in await repl.until("you> ")
    await repl.send("still there?")
    assert "[first] 5 user messages, last: still there?" in await repl.until("you> ")

    await repl.send("ponder")
    shown = await repl.until("you> ")
    assert "Both are fine." in shown
    assert "reasoning folded (6 words)" in shown
    assert "Let me weigh" not in shown
    await repl.send("/reasoning")
    assert "Let me weigh both sides carefully." in await repl.until("you> ")

    await repl.send("/tools")
    assert "delete_file  (side_effecting, needs approval)  Delete a file." in await repl.until(
        "you> "
    )
    await repl.send("/usage")
    assert "7 model calls: 70 input tokens, 35 output tokens" in await repl.until("you> ")
    await repl.send("/save saved.jsonl")
    assert f"saved session {session_id}" in await repl.until("you> ")
    header = json.loads((tmp_path / "saved.jsonl").read_text().splitlines()[0])
    assert header["session_id"] == session_id

    await repl.send("/model chat-test:second")
    assert "model: test:second" in await repl.until("you> ")
    await repl.send("next")
    assert "[second] 7 user messages, last: next" in await repl.until("you> ")
    await repl.send("/bogus")
    assert "unknown command /bogus" in await repl.until("you> ")
    assert repl.process.stdin is not None
    repl.process.stdin.close()  # Ctrl-D
    assert await asyncio.wait_for(repl.process.wait(), timeout=60) == 0

    # Another process goes on with the stored session: /resume ID.
    later = await _chat(tmp_path, f"{MAIN}:assistant", "--store", store)
    await later.until("you> ")
    await later.send(f"/resume {session_id}")
    assert f"resumed session {session_id}" in await later.until("you> ")
    await later.send("back again")
    assert "[first] 8 user messages, last: back again" in await later.until("you> ")
    await later.send("/exit")
    assert await asyncio.wait_for(later.process.wait(), timeout=60) == 0


async def test_compact_goes_on_in_a_shorter_session(tmp_path: Path) -> None:
    repl = await _chat(tmp_path, "--model", "chat-test:solo", "--store", "memory://")
    await repl.until("you> ")
    for word in ("one", "two", "three", "four"):
        await repl.send(word)
        await repl.until("you> ")
    await repl.send("/compact")
    assert "the chat goes on in session" in await repl.until("you> ")
    await repl.send("five")
    assert "[solo] 3 user messages, last: five" in await repl.until("you> ")  # 2 kept + five
    await repl.send("/exit")
    assert await asyncio.wait_for(repl.process.wait(), timeout=60) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "needs an agent"),
        (("--model", "nowhere:x"), "Unknown model provider 'nowhere'"),
        (("tests/cli/missing.py:agent",), "missing.py"),
    ],
)
async def test_usage_errors_exit_2_without_a_traceback(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    repl = await _chat(ROOT, *args)
    assert await asyncio.wait_for(repl.process.wait(), timeout=60) == 2
    assert repl.process.stdout is not None
    output = (await repl.process.stdout.read()).decode()
    assert message in output
    assert "Traceback" not in output


def test_the_scripted_agent_loads() -> None:
    assert assistant().name == "assistant"
