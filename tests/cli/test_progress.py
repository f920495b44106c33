"""Progress bars on a terminal: a fan-out tool's children, a graph's nodes and map items."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

from rich.console import Console

from bastion import Agent, tool
from bastion.cli._render import Renderer
from bastion.core import ModelRequest, ToolMessage, UserMessage
from bastion.multi import fan_out_stream
from bastion.testing import Call, FunctionModel, Turn
from bastion.tools import Progress, ToolResult

ROOT = Path(__file__).parents[2]
EXAMPLE = str(ROOT / "examples" / "graph_review.py") + ":graph"
_COLOR = re.compile(r"\x1b\[[0-9;]*m")
_MOVES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _shown(output: str) -> str:
    """The text a terminal showed: colors dropped, each cursor move a line break."""
    return _MOVES.sub("\n", _COLOR.sub("", output))


def _child(name: str) -> Agent[None, str]:
    def answer(request: ModelRequest) -> Turn:
        asked = next(m.text for m in request.messages if isinstance(m, UserMessage))
        return Turn(text=f"{name} on {asked}")

    return Agent(name, model=FunctionModel(answer, name=f"{name}-model"))


def _lead() -> Agent[None, str]:
    hub = Agent("hub", model=FunctionModel(lambda _: Turn(text="-")))
    children = [_child(f"reader{i}") for i in range(1, 4)]

    @tool(side_effect_class="read_only")
    async def research(topic: str) -> AsyncIterator[Progress | ToolResult]:
        """Ask three readers at once.

        Args:
            topic: About what.
        """
        done = 0
        fan = fan_out_stream(hub, [(child, topic) for child in children])
        async for event in fan:
            if event.type == "agent.fanout.child.end":
                done += 1
                yield Progress(
                    current=done, total=len(children), message=f"children ({event.child})"
                )
        yield ToolResult(output=str(fan.result.output))

    def turn(request: ModelRequest) -> Turn:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(text="All three answered.")
        return Turn(tool_calls=[Call("research", {"topic": "tides"})])

    return Agent("lead", model=FunctionModel(turn, name="lead-model"), tools=[research])


async def _watch(live: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=live, width=120, color_system=None)
    with Renderer(console, live=live) as renderer:
        async for event in _lead().stream("Research tides"):
            renderer.handle(event)
    return _shown(out.getvalue())


async def test_a_fan_out_tools_children_show_as_a_bar_on_a_terminal() -> None:
    shown = await _watch(live=True)
    bars = re.findall(r'research\(topic="tides"\) (━*╺?━*)  (\d)/3 children', shown)
    assert bars[0][1] == "1"
    assert bars[-1][1] == "3"  # the last frame before the result: every child is done
    assert len(bars[-1][0]) == 24
    assert "✓ research" in shown


async def test_piped_the_fan_out_prints_plain_lines_and_no_bar() -> None:
    shown = await _watch(live=False)
    assert "━" not in shown
    counts = re.findall(r"… research\(topic=\"tides\"\) running (\d)/3 children", shown)
    assert counts == ["1", "2", "3"]


def _env() -> dict[str, str]:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    return env


def _in_terminal(command: list[str], cwd: Path, exit_code: int) -> str:
    """What ``command`` shows on a pseudo-terminal (its stdout is a TTY)."""
    main, child = pty.openpty()
    process = subprocess.Popen(command, cwd=cwd, env=_env(), stdin=child, stdout=child,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(child)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal closed: the process exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert process.wait(timeout=120) == exit_code
    return _shown(b"".join(chunks).decode(errors="replace"))


def _graph_run(store: str, *, tty: bool, extra: tuple[str, ...] = ()) -> str:
    command = [sys.executable, "-m", "bastion.cli", "graph", "run", EXAMPLE, "--input",
               '"graphs"', "--store", store, *extra]  # fmt: skip
    if tty:
        return _in_terminal(command, ROOT, 1)
    done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr
    return done.stdout


def test_the_fan_out_example_of_cli_md_draws_its_bar_in_bastion_run(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## Progress bars")[1]
    (tmp_path / "lead.py").write_text(
        textwrap.dedent(text.split("```python\n", 1)[1].split("```", 1)[0]), encoding="utf-8"
    )
    command = [sys.executable, "-m", "bastion.cli", "run", "lead.py:lead", "Research tides"]
    shown = _in_terminal(command, tmp_path, 0)
    bars = re.findall(r'research\(topic="tides"\) (━*╺?━*)  (\d)/3 children', shown)
    assert bars, shown
    assert bars[-1][1] == "3"
    assert "✓ completed" in shown


def test_graph_run_on_a_terminal_shows_nodes_and_map_items_as_bars(tmp_path: Path) -> None:
    shown = _graph_run(f"sqlite:///{tmp_path / 'g.db'}", tty=True)
    items = re.findall(r"sections (━*╺?━*)  (\d)/3 items", shown)
    assert items, shown
    assert items[-1][1] == "3"
    nodes = re.findall(r"nodes (━*╺?━*)  (\d)/5", shown)
    assert nodes[0][1] == "0"
    assert nodes[-1][1] == "3"  # the editor waits for an approval: 3 of 5 nodes are done
    assert [int(done) for _, done in items] == sorted(int(done) for _, done in items)
    assert "■ review suspended" in shown


def test_graph_run_piped_or_json_has_no_bar(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'g.db'}"
    piped = _graph_run(store, tty=False)
    assert "━" not in piped
    assert "■ review suspended" in piped
    lines = _graph_run(store, tty=False, extra=("--json",)).splitlines()
    assert all(line.startswith("{") for line in lines)
