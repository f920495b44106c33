"""Result limits through the agent: what the model reads after an oversized tool result.

Each test runs an agent on a scripted model and asserts the exact tool message the model
receives next, and, for spills, the files on disk and what ``read_result`` returns.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bastion import ToolOptions
from bastion.agent import Agent, ModelOptions
from bastion.core import ModelRequest, ModelTimeout, ToolMessage, UserError
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn, TurnLike
from bastion.tools import ResultReadError, Tool, UnlimitedResultWarning, tool, truncate_text

HANDLE = re.compile(r"spill:[A-Za-z0-9_-]+/[A-Za-z0-9_-]+")
BODY = "\n".join(f"line {i:03}" for i in range(1, 301))  # 300 lines, 2,699 bytes


def scripted(*steps: Callable[[ModelRequest], TurnLike]) -> FunctionModel:
    """A model answering request ``i`` with ``steps[i](request)``."""
    count = 0

    def answer(request: ModelRequest) -> TurnLike:
        nonlocal count
        count += 1
        return steps[count - 1](request)

    return FunctionModel(answer)


def call(name: str, args: dict[str, Any] | None = None) -> Callable[[ModelRequest], TurnLike]:
    return lambda _: Turn(tool_calls=[Call(name, args or {})])


def done(_: ModelRequest) -> TurnLike:
    return "done"


def tool_message(request: ModelRequest) -> ToolMessage:
    message = request.messages[-1]
    assert isinstance(message, ToolMessage)
    return message


def big(text: str = BODY, **options: Any) -> Tool:
    def produce() -> str:
        """Return a large result."""
        return text

    options.setdefault("side_effect_class", "read_only")
    return tool(produce, name=options.pop("name", "produce"), **options)


async def run(agent: Agent[Any, Any], model: FunctionModel) -> list[ModelRequest]:
    result = await agent.run("go")
    assert result.status == "completed", result
    return model.requests


async def test_middle_is_the_default_and_the_model_reads_head_and_tail() -> None:
    # covers T-18, G-25
    text = "a" * 300 + "b" * 400 + "c" * 300
    model = scripted(call("produce"), done)
    agent = Agent("a", model=model, tools=[big(text, max_result_tokens=128)])

    requests = await run(agent, model)

    assert tool_message(requests[1]).text == (
        "a" * 238 + "\n[... 524 characters omitted ...]\n" + "c" * 238
    )
    assert agent.audit.counters.get("tool.result.truncated.total{strategy=middle}") == 1


async def test_a_result_within_the_limit_is_untouched() -> None:
    # covers T-18
    model = scripted(call("produce"), done)
    agent = Agent("a", model=model, tools=[big("small", max_result_tokens=128)])

    requests = await run(agent, model)

    assert tool_message(requests[1]).text == "small"
    assert agent.audit.counters.get("tool.result.truncated.total{strategy=middle}") == 0


async def test_builtin_code_execution_keeps_the_tail() -> None:
    # covers T-19
    text = "a" * 300 + "b" * 400 + "c" * 300
    model = scripted(call("bash"), done)
    shell = big(text, name="bash", max_result_tokens=128, trust_class="first_party_built_in")
    agent = Agent("a", model=model, tools=[shell])

    requests = await run(agent, model)

    assert (
        tool_message(requests[1]).text
        == "[... 523 characters omitted ...]\n" + "b" * 177 + "c" * 300
    )


async def test_json_smart_sends_valid_json_with_the_remainder_noted() -> None:
    # covers C10
    rows = [{"id": i, "name": f"item {i}"} for i in range(200)]
    model = scripted(call("produce"), done)
    agent = Agent(
        "a",
        model=model,
        tools=[big(json.dumps(rows), max_result_tokens=128, truncation_strategy="json_smart")],
    )

    requests = await run(agent, model)

    seen = json.loads(tool_message(requests[1]).text)
    assert seen == [*rows[:16], "[... 184 more items omitted ...]"]


async def test_json_smart_cuts_text_that_is_not_json_in_the_middle() -> None:
    # covers C10
    model = scripted(call("produce"), done)
    agent = Agent(
        "a",
        model=model,
        tools=[big("z" * 1000, max_result_tokens=128, truncation_strategy="json_smart")],
    )

    requests = await run(agent, model)

    assert (
        tool_message(requests[1]).text
        == "z" * 238 + "\n[... 524 characters omitted ...]\n" + "z" * 238
    )


def spill_tool(**options: Any) -> Tool:
    return big(BODY, max_result_tokens=128, truncation_strategy="spill_to_file", **options)


def read_with(args: dict[str, Any]) -> Callable[[ModelRequest], TurnLike]:
    """Call read_result with the handle found in the previous tool message, plus ``args``."""

    def step(request: ModelRequest) -> TurnLike:
        texts = [m.text for m in request.messages if isinstance(m, ToolMessage)]
        found = next(filter(None, (HANDLE.search(t) for t in texts)), None)
        assert found is not None
        return Turn(tool_calls=[Call("read_result", {"handle": found.group(0), **args})])

    return step


async def test_spill_inlines_a_preview_and_the_model_pages_it_by_lines(tmp_path: Path) -> None:
    # covers G-37, G-38, G-39, G-40
    model = scripted(call("produce"), read_with({"start_line": 10, "end_line": 12}), done)
    agent = Agent(
        "a", model=model, tools=[spill_tool()], tool_options=ToolOptions(spill_dir=tmp_path)
    )

    requests = await run(agent, model)

    preview = tool_message(requests[1]).text
    handle = HANDLE.search(preview)
    assert handle is not None
    marker = (
        f"\n[... {2699 - 267:,} characters omitted; full result (2,699 bytes, 300 lines) "
        f"stored as {handle.group(0)}; read_result returns byte ranges (offset, length) or "
        "line ranges (start_line, end_line) of it ...]"
    )
    assert preview == BODY[:267] + marker
    assert tool_message(requests[2]).text == "[lines 10-12 of 300]\nline 010\nline 011\nline 012\n"
    assert "read_result" in [d.name for d in requests[0].tools]


async def test_spill_paged_by_bytes(tmp_path: Path) -> None:
    # covers G-40
    model = scripted(
        call("produce"),
        read_with({"offset": 9, "length": 18}),
        read_with({"offset": 2690}),
        done,
    )
    agent = Agent(
        "a", model=model, tools=[spill_tool()], tool_options=ToolOptions(spill_dir=tmp_path)
    )

    requests = await run(agent, model)

    assert (
        tool_message(requests[2]).text
        == "[bytes 9-26 of 2,699; next offset 27]\nline 002\nline 003\n"
    )


async def test_spill_file_is_private_atomic_and_holds_the_full_result(tmp_path: Path) -> None:
    # covers T-15, G-37
    model = scripted(call("produce"), done)
    agent = Agent(
        "a", model=model, tools=[spill_tool()], tool_options=ToolOptions(spill_dir=tmp_path)
    )

    requests = await run(agent, model)

    handle = HANDLE.search(tool_message(requests[1]).text)
    assert handle is not None
    run_id, token = handle.group(0).removeprefix("spill:").split("/")
    run_dir = tmp_path / run_id
    assert [p.name for p in run_dir.iterdir()] == [f"{token}.txt"]  # no temporary left
    stored = run_dir / f"{token}.txt"
    assert stored.read_text() == BODY
    assert stored.stat().st_mode & 0o777 == 0o600
    assert run_dir.stat().st_mode & 0o777 == 0o700


def failed(message: str) -> str:
    return f"Tool 'read_result' failed: ResultReadError: {message}"


@pytest.mark.parametrize(
    ("handle", "message"),
    [
        (
            "../../etc/passwd",
            "Unknown result handle '../../etc/passwd': handles are the opaque names shown with "
            "a shortened result (like 'spill:<run>/<token>'), not file paths.",
        ),
        (
            "/etc/passwd",
            "Unknown result handle '/etc/passwd': handles are the opaque names shown with "
            "a shortened result (like 'spill:<run>/<token>'), not file paths.",
        ),
        (
            "spill:../../etc/passwd",
            "'spill:../../etc/passwd' is not a valid result handle: spill handles read "
            "'spill:<run>/<token>', exactly as shown with the truncated result.",
        ),
        (
            "spill:run_1/../../../etc/passwd",
            "'spill:run_1/../../../etc/passwd' is not a valid result handle: spill handles "
            "read 'spill:<run>/<token>', exactly as shown with the truncated result.",
        ),
        (
            "spill:run_1/AAAAAAAAAAAAAAAAAAAA\x00",
            "'spill:run_1/AAAAAAAAAAAAAAAAAAAA\\x00' is not a valid result handle: spill "
            "handles read 'spill:<run>/<token>', exactly as shown with the truncated result.",
        ),
        (
            "spill:run_other/AAAAAAAAAAAAAAAAAAAA",
            "Handle 'spill:run_other/AAAAAAAAAAAAAAAAAAAA' belongs to another run; only "
            "results stored in this run can be read.",
        ),
    ],
)
async def test_handles_that_are_paths_or_foreign_are_refused(
    tmp_path: Path, handle: str, message: str
) -> None:
    # covers G-41
    model = scripted(call("read_result", {"handle": handle}), done)
    agent = Agent(
        "a", model=model, tools=[spill_tool()], tool_options=ToolOptions(spill_dir=tmp_path)
    )

    requests = await run(agent, model)

    result = tool_message(requests[1])
    assert result.is_error
    assert result.text == failed(message)


@pytest.mark.parametrize("planted", ["file", "run_dir"])
async def test_a_symlink_out_of_the_spill_root_is_not_followed(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, planted: str
) -> None:
    # covers G-41
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("TOP SECRET")

    def plant(request: ModelRequest) -> TurnLike:
        found = HANDLE.search(tool_message(request).text)
        assert found is not None
        run_id, token = found.group(0).removeprefix("spill:").split("/")
        run_dir = tmp_path / run_id
        if planted == "file":
            (run_dir / f"{token}.txt").unlink()
            (run_dir / f"{token}.txt").symlink_to(outside / "secret.txt")
        else:
            (outside / f"{token}.txt").write_text("TOP SECRET")
            for child in run_dir.iterdir():
                child.unlink()
            run_dir.rmdir()
            run_dir.symlink_to(outside)
        return Turn(tool_calls=[Call("read_result", {"handle": found.group(0)})])

    model = scripted(call("produce"), plant, done)
    agent = Agent(
        "a", model=model, tools=[spill_tool()], tool_options=ToolOptions(spill_dir=tmp_path)
    )

    requests = await run(agent, model)

    result = tool_message(requests[2])
    assert result.is_error
    handle = HANDLE.search(tool_message(requests[1]).text)
    assert handle is not None
    assert result.text == failed(
        f"Handle {handle.group(0)!r} does not resolve to a stored result inside the spill "
        "store; the read was refused."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"start_line": 301},
            "start_line 301 is past the end of the result (300 lines); "
            "give a start_line from 1 to 300.",
        ),
        (
            {"offset": 2699},
            "offset 2699 is past the end of the result (2,699 bytes); give an offset below 2699.",
        ),
        (
            {"offset": 0, "start_line": 1},
            "Give a byte range (offset, length) or a line range (start_line, end_line), not both.",
        ),
        (
            {"start_line": 5, "end_line": 2},
            "end_line (2) is before start_line (5); give end_line >= start_line.",
        ),
        ({"length": 0}, "length must be >= 1, got 0."),
    ],
)
async def test_bad_ranges_say_what_to_send(
    tmp_path: Path, args: dict[str, Any], message: str
) -> None:
    # covers G-40
    model = scripted(call("produce"), read_with(args), done)
    agent = Agent(
        "a", model=model, tools=[spill_tool()], tool_options=ToolOptions(spill_dir=tmp_path)
    )

    requests = await run(agent, model)

    result = tool_message(requests[2])
    assert result.is_error
    assert result.text == failed(message)


async def test_a_secret_tool_never_spills(tmp_path: Path) -> None:
    # covers G-42
    model = scripted(call("produce"), done)
    agent = Agent(
        "a",
        model=model,
        tools=[spill_tool(sensitivity="secret")],
        tool_options=ToolOptions(spill_dir=tmp_path),
    )

    requests = await run(agent, model)

    note = "full result not stored (sensitivity 'secret')"
    seen = tool_message(requests[1]).text
    assert seen == truncate_text(BODY, 128, note=note)
    assert f"line 024\n[... 2,270 characters omitted; {note} ...]\nine 277\n" in seen
    assert os.listdir(tmp_path) == []
    assert "read_result" not in [d.name for d in requests[0].tools]  # nothing can spill


async def test_summarize_asks_the_cheaper_model() -> None:
    # covers T-18
    summarizer = ScriptedModel(["300 numbered lines, line 001 to line 300."])
    model = scripted(call("produce"), done)
    agent = Agent(
        "a",
        model=model,
        tools=[big(max_result_tokens=128, truncation_strategy="summarize")],
        tool_options=ToolOptions(summary_model=summarizer),
    )

    requests = await run(agent, model)

    assert tool_message(requests[1]).text == (
        "[summary of a 2,699-character result]\n300 numbered lines, line 001 to line 300."
    )
    sent = summarizer.requests[0]
    assert sent.messages[-1].text == truncate_text(BODY, 4 * 128)  # type: ignore[union-attr]
    assert "summarize the text in the user message in at most 118 tokens" in (
        sent.messages[0].content.lower()  # type: ignore[union-attr]
    )
    assert sent.settings.max_tokens == 118


async def test_the_summary_call_counts_in_the_runs_usage() -> None:
    summarizer = ScriptedModel(["a summary"], name="summarizer")
    model = scripted(call("produce"), done)
    agent = Agent(
        "a",
        model=model,
        tools=[big(max_result_tokens=128, truncation_strategy="summarize")],
        tool_options=ToolOptions(summary_model=summarizer),
    )
    result = await agent.run("go")
    summary_usage = result.usage_by_model["test:summarizer"]
    assert summary_usage.requests == 1
    assert result.usage.requests == 3  # two steps and the summary
    assert result.usage.total_tokens == sum(u.total_tokens for u in result.usage_by_model.values())


async def test_web_search_tools_are_summarized_by_the_fast_tier() -> None:
    # covers T-19
    fast = ScriptedModel(["Three results about spills."])
    model = scripted(call("produce"), done)
    search = big(
        max_result_tokens=128, trust_class="web_search", inbound_sanitization="pass-through"
    )
    agent = Agent(
        "a", model=model, tools=[search], model_options=ModelOptions(tiers={"fast": fast})
    )

    requests = await run(agent, model)

    assert tool_message(requests[1]).text == (
        "[summary of a 2,699-character result]\nThree results about spills."
    )


async def test_a_failed_summary_falls_back_to_middle_and_says_so() -> None:
    # covers T-18
    summarizer = ScriptedModel([Turn(error=ModelTimeout("slow"))])
    model = scripted(call("produce"), done)
    agent = Agent(
        "a",
        model=model,
        tools=[big(max_result_tokens=128, truncation_strategy="summarize")],
        tool_options=ToolOptions(summary_model=summarizer),
    )

    requests = await run(agent, model)

    seen = tool_message(requests[1]).text
    assert seen == truncate_text(BODY, 128, note="summary unavailable (ModelTimeout)")
    assert "\n[... 2,259 characters omitted; summary unavailable (ModelTimeout) ...]\n" in seen


def test_max_result_tokens_zero_warns_once_per_tool_name() -> None:
    # covers T-18
    unlimited = big(name="unlimited_probe", max_result_tokens=0)
    with pytest.warns(UnlimitedResultWarning, match="'unlimited_probe' has max_result_tokens=0"):
        Agent("a", model=ScriptedModel([]), tools=[unlimited])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Agent("b", model=ScriptedModel([]), tools=[unlimited])


async def test_max_result_tokens_zero_sends_the_whole_result() -> None:
    # covers T-18
    text = "x" * 200_000
    model = scripted(call("unlimited_whole"), done)
    with pytest.warns(UnlimitedResultWarning):
        agent = Agent(
            "a", model=model, tools=[big(text, name="unlimited_whole", max_result_tokens=0)]
        )

    requests = await run(agent, model)

    assert tool_message(requests[1]).text == text


def test_a_limit_too_small_for_the_markers_is_refused() -> None:
    with pytest.raises(
        UserError, match=r"max_result_tokens=10; use 0 \(no limit\) or at least 128"
    ):
        Agent("a", model=ScriptedModel([]), tools=[big(max_result_tokens=10)])


def test_a_user_tool_named_read_result_collides_with_the_built_in() -> None:
    clash = big("x", name="read_result")
    with pytest.raises(UserError, match="a tool is named 'read_result'"):
        Agent("a", model=ScriptedModel([]), tools=[spill_tool(), clash])


class MemoryReader:
    """A result reader for ``mem:`` handles (stands in for MCP resources)."""

    def __init__(self, documents: dict[str, str]) -> None:
        self.documents = documents
        self.reads: list[tuple[str, int | None, int | None]] = []

    def owns(self, handle: str) -> bool:
        return handle.startswith("mem:")

    async def read(
        self,
        handle: str,
        *,
        offset: int | None,
        length: int | None,
        start_line: int | None,
        end_line: int | None,
    ) -> str:
        self.reads.append((handle, start_line, end_line))
        if handle not in self.documents:
            raise ResultReadError(f"No document {handle!r}.")
        lines = self.documents[handle].splitlines()
        return "\n".join(lines[(start_line or 1) - 1 : end_line])


async def test_result_readers_register_read_result_and_serve_their_handles() -> None:
    # covers G-44, G-45
    reader = MemoryReader({"mem:doc": "alpha\nbeta\ngamma"})
    model = scripted(
        call("read_result", {"handle": "mem:doc", "start_line": 2, "end_line": 3}),
        call("read_result", {"handle": "mem:missing"}),
        call("read_result", {"handle": "other:doc"}),
        done,
    )
    agent = Agent("a", model=model, tool_options=ToolOptions(result_readers=[reader]))

    requests = await run(agent, model)

    assert [d.name for d in requests[0].tools] == ["read_result"]
    assert tool_message(requests[1]).text == "beta\ngamma"
    assert tool_message(requests[2]).text == failed("No document 'mem:missing'.")
    assert tool_message(requests[3]).text == failed(
        "Unknown result handle 'other:doc': handles are the opaque names shown with a "
        "shortened result (like 'spill:<run>/<token>'), not file paths."
    )
    assert reader.reads == [("mem:doc", 2, 3), ("mem:missing", None, None)]


def test_no_read_result_without_spilling_tools_or_readers() -> None:
    # covers G-39
    agent = Agent("a", model=ScriptedModel([]), tools=[big()])
    assert "read_result" not in agent.config.tools.by_name
