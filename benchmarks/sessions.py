"""S10: sessions at scale: many concurrent sessions on one event loop, sharing one store.

``python -m benchmarks.sessions [memory sqlite postgres redis]`` (default ``postgres``) runs,
for each backend and for ``--sessions`` (1,000) and ``--compare`` (100) sessions, a fresh
process that opens one isolated store (as ``benchmarks.stores`` does) and starts every session
at once. Each session is its own ``Agent(store=...)`` with a ``ScriptedModel`` and sends
``--messages`` (3) messages one after the other (``send``, then ``wait_for_idle``); every turn
is one tool call, then an answer (2 model steps). It prints a Markdown table:

* **steps/s**, **turns/s**: every step and turn of every session over the wall time from the
  first ``send`` to the last session idle;
* **step p50 / p95 / p99**: from the step's start (the agent's ``prepare_step`` hook, just
  before ``step.start``) to the session's ``step`` listener (the model's answer is complete
  and in the session's transcript, before the step's tools run);
* **turn p50 / p95**: from ``send`` to ``wait_for_idle`` returning;
* **peak RSS** (``VmHWM``) and the RSS after the warm-up.

Every session is checked after timing: no errors; its transcript holds the 4 messages of each
turn (the question sent, the call, the tool's result, the answer), chained by ``parent_id``;
its state was stored; and each turn's run is ``completed`` with the 6 journal entries of a
one-tool turn, the question in ``run_started``, the tool's result and the answer.
``python -m benchmarks.sessions --child postgres 1000 3`` prints one measurement as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import psutil

from bastion import Agent, Session, tool
from bastion.agent import AgentHooks, LoopHooks
from bastion.core import RunContext
from bastion.sessions import StepDone, TurnEnd
from bastion.stores import Stores
from bastion.testing import Call, ScriptedModel, Turn

from .s4 import _peak_rss
from .stores import _backend, _pct

SESSIONS = 1_000
COMPARE = 100
MESSAGES = 3
WARM_UP = 20
CHECKERS = 16
STEPS_PER_TURN = 2
ENTRIES_PER_TURN = 4  # question, assistant (call), tool result, answer
JOURNAL_KINDS = [
    "run_started",
    "model_response",
    "tool_call_started",
    "tool_result",
    "model_response",
    "run_ended",
]
ROOT = Path(__file__).resolve().parent.parent


@tool(side_effect_class="read_only")
async def lookup(topic: str) -> str:
    """Look a topic up in the notes."""
    return f"notes on {topic}"


def _question(session_id: str, turn: int) -> str:
    return f"What do the notes say about {session_id} q{turn}?"


def _topic(session_id: str, turn: int) -> str:
    return f"{session_id} q{turn}"


def _answer(session_id: str, turn: int) -> str:
    return f"The notes on {session_id} q{turn} are short."


def _script(session_id: str, turns: int) -> list[Turn | str]:
    script: list[Turn | str] = []
    for turn in range(turns):
        script.append(Turn(tool_calls=[Call("lookup", {"topic": _topic(session_id, turn)})]))
        script.append(_answer(session_id, turn))
    return script


class _Steps(LoopHooks):
    """Stamps each step's start; the session's ``step`` listener stamps its end."""

    def __init__(self) -> None:
        self.started = 0.0
        self.times: list[float] = []

    def prepare_step(self, ctx: RunContext[Any], step: int) -> None:
        self.started = time.perf_counter()

    def step_done(self, _: StepDone) -> None:
        self.times.append(time.perf_counter() - self.started)


class _Runs(AgentHooks):
    """Collects the run id of each turn."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def before_run(self, ctx: RunContext[Any]) -> None:
        self.ids.append(ctx.run_id)


@dataclass(slots=True)
class _Conversation:
    session_id: str
    steps: _Steps = field(default_factory=_Steps)
    runs: _Runs = field(default_factory=_Runs)
    turns: list[float] = field(default_factory=list[float])
    texts: list[str] = field(default_factory=list[str])


async def _converse(stores: Stores, session_id: str, turns: int) -> _Conversation:
    """One session sending ``turns`` messages in turn; its timings."""
    seen = _Conversation(session_id)
    model = ScriptedModel(_script(session_id, turns), record_requests=False)
    agent = Agent("s10", model=model, tools=[lookup], store=stores, hooks=[seen.runs, seen.steps])
    session = Session(agent, session_id)
    session.on("step", seen.steps.step_done)

    def turn_end(event: TurnEnd) -> None:
        seen.texts.append(event.text)

    session.on("turn_end", turn_end)
    for turn in range(turns):
        start = time.perf_counter()
        session.send(_question(session_id, turn))
        await session.wait_for_idle()
        seen.turns.append(time.perf_counter() - start)
    return seen


def _obj(value: object) -> dict[str, Any]:
    assert isinstance(value, dict), value
    return cast("dict[str, Any]", value)


def _text(message: Mapping[str, Any]) -> str:
    """A stored message's text: ``content`` (user, tool) or its text ``parts`` (assistant)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = message.get("parts") or content or []
    return "".join(str(p.get("text", "")) for p in parts)


async def _check(stores: Stores, seen: _Conversation, turns: int) -> None:
    """Raise AssertionError unless the store holds exactly what the session did."""
    sid = seen.session_id
    assert seen.texts == [_answer(sid, t) for t in range(turns)], seen.texts
    assert len(seen.steps.times) == turns * STEPS_PER_TURN
    entries = await stores.sessions.entries(sid)
    assert len(entries) == turns * ENTRIES_PER_TURN, (sid, len(entries))
    parent: str | None = None
    for entry in entries:
        assert entry.kind == "message", (sid, entry)
        assert entry.parent_id == parent, (sid, entry)
        parent = entry.entry_id
    messages = [_obj(e.payload["message"]) for e in entries]
    for turn in range(turns):
        user, call, result, answer = messages[turn * 4 : turn * 4 + 4]
        assert (user["role"], _text(user)) == ("user", _question(sid, turn)), user
        assert (call["role"], call["tool_calls"][0]["name"]) == ("assistant", "lookup"), call
        assert (result["role"], _text(result)) == ("tool", f"notes on {_topic(sid, turn)}")
        assert (answer["role"], _text(answer)) == ("assistant", _answer(sid, turn)), answer
    assert await stores.sessions.get_state(sid) is not None
    assert len(seen.runs.ids) == turns
    for turn, run_id in enumerate(seen.runs.ids):
        record = await stores.journal.get_run(run_id)
        assert record is not None, run_id
        assert record.status == "completed", (run_id, record)
        journal = await stores.journal.read(run_id)
        assert [e.kind for e in journal] == JOURNAL_KINDS, (run_id, [e.kind for e in journal])
        state = _obj(journal[0].payload["state"])
        assert state["session_id"] == sid
        assert _text(state["messages"][-1]) == _question(sid, turn)
        assert journal[3].payload["content"] == f"notes on {_topic(sid, turn)}"
        assert _text(_obj(journal[4].payload["message"])) == _answer(sid, turn)


async def _check_all(stores: Stores, done: list[_Conversation], turns: int) -> None:
    queue = list(done)

    async def worker() -> None:
        while queue:
            await _check(stores, queue.pop(), turns)

    async with asyncio.TaskGroup() as group:
        for _ in range(CHECKERS):
            group.create_task(worker())


async def _sessions(stores: Stores, prefix: str, n: int, turns: int) -> list[_Conversation]:
    """Run ``n`` sessions at once; raise the first failure (all of them are counted)."""
    results = await asyncio.gather(
        *(_converse(stores, f"{prefix}-{i}", turns) for i in range(n)), return_exceptions=True
    )
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        kinds = sorted({f"{type(e).__name__}: {e}" for e in errors})
        raise RuntimeError(f"{len(errors)} of {n} sessions failed: {kinds[:3]}") from errors[0]
    return [r for r in results if not isinstance(r, BaseException)]


async def _child(backend: str, n: int, turns: int) -> dict[str, Any]:
    async with _backend(backend) as stores:
        warm = await _sessions(stores, "warm", WARM_UP, turns)
        await _check_all(stores, warm, turns)
        gc.collect()
        base_rss = psutil.Process().memory_info().rss
        start, cpu = time.perf_counter(), time.process_time()
        done = await _sessions(stores, "bench", n, turns)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        load = os.getloadavg()[0]
        peak = _peak_rss()
        await _check_all(stores, done, turns)
    steps = [t for seen in done for t in seen.steps.times]
    turn_times = [t for seen in done for t in seen.turns]
    return {
        "backend": backend,
        "sessions": n,
        "messages": turns,
        "wall": wall,
        "cpu": cpu,
        "load": load,
        "steps": len(steps),
        "turns": len(turn_times),
        "step_p50": _pct(steps, 0.50),
        "step_p95": _pct(steps, 0.95),
        "step_p99": _pct(steps, 0.99),
        "turn_p50": _pct(turn_times, 0.50),
        "turn_p95": _pct(turn_times, 0.95),
        "base_rss_mb": base_rss / 2**20,
        "peak_rss_mb": peak / 2**20,
    }


@dataclass(frozen=True, slots=True)
class Figures:
    """One measurement (times in seconds)."""

    backend: str
    sessions: int
    messages: int
    wall: float
    cpu: float
    load: float
    steps: int
    turns: int
    step_p50: float
    step_p95: float
    step_p99: float
    turn_p50: float
    turn_p95: float
    base_rss_mb: float
    peak_rss_mb: float


def measure(backend: str, n: int, turns: int) -> Figures:
    """Run ``n`` sessions on ``backend`` in a fresh interpreter; return its figures."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.sessions", "--child", backend, str(n), str(turns)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"S10 {backend} x{n} failed: {tail}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return Figures(**figures)


def report(rows: list[Figures]) -> str:
    """The Markdown table of ``rows``."""
    turns = rows[0].messages if rows else MESSAGES
    lines = [
        f"**S10 sessions** (each session sends {turns} messages in turn; a turn is one tool "
        f"call and an answer: {STEPS_PER_TURN} steps; one store, one event loop)",
        "",
        "| store | sessions | wall s | steps/s | turns/s | CPU ms/step | step p50 ms "
        "| step p95 ms | step p99 ms | turn p50 ms | turn p95 ms | RSS MB after warm-up / peak "
        "| load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {r.backend} | {r.sessions:,} | {r.wall:,.1f} | {r.steps / r.wall:,.0f} | "
        f"{r.turns / r.wall:,.0f} | {r.cpu / r.steps * 1e3:,.2f} | {r.step_p50 * 1e3:,.0f} | "
        f"{r.step_p95 * 1e3:,.0f} | {r.step_p99 * 1e3:,.0f} | {r.turn_p50 * 1e3:,.0f} | "
        f"{r.turn_p95 * 1e3:,.0f} | {r.base_rss_mb:,.0f} / {r.peak_rss_mb:,.0f} | {r.load:.1f} |"
        for r in rows
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure each backend at both sizes and print the report."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sessions", description=__doc__)
    parser.add_argument("backends", nargs="*", default=["postgres"])
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="concurrent sessions")
    parser.add_argument("--compare", type=int, default=COMPARE, help="the smaller run (0: none)")
    parser.add_argument("--messages", type=int, default=MESSAGES, help="messages per session")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        backend, n, turns = args.backends
        figures = asyncio.run(_child(backend, int(n), int(turns)))
        print(json.dumps(figures))
        return 0
    sizes = [s for s in (args.compare, args.sessions) if s > 0]
    rows: list[Figures] = []
    for backend in args.backends:
        for n in sizes:
            print(f"measuring {backend} with {n:,} sessions…", file=sys.stderr)
            rows.append(measure(backend, n, args.messages))
            print(f"  {json.dumps(asdict(rows[-1]))}", file=sys.stderr)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
