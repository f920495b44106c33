"""Revealed secrets in a tool's live output: progress, partial pieces, metadata, audit."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import Agent, tool
from bastion.core import RunContext, SubagentEvent, TextDeltaEvent, ToolExecutePartialEvent
from bastion.security import SecretRef, SecretScope, SecurityConfig, Vault, callable_secret
from bastion.stores import open_store
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Progress, ToolResult
from bastion.tools._invoke import ProgressQueue, ProgressSink

KEY = "sk-live-9e8d7c6b5a41"


def dump(value: Any) -> str:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, default=repr)


@tool(side_effect_class="read_only", secrets_allowed=["stripe"])
async def chatty_status(ctx: RunContext[None]) -> ToolResult:
    """Report progress and stream pieces that carry the key (as a careless tool may)."""
    key = SecretRef("stripe").reveal()
    ctx.report_progress(1, 2, f"authenticating with {key}")
    ctx.stream_content(f"token={key};")
    ctx.report_progress(2, 2, "done")
    return ToolResult(output=f"status ok for {key}", metadata={"auth": f"Bearer {key}"})


@tool(side_effect_class="read_only", secrets_allowed=["stripe"])
def threaded_status(ctx: RunContext[None]) -> None:
    """A sync tool (run in a worker thread) that streams its whole result with the key."""
    key = SecretRef("stripe").reveal()
    ctx.report_progress(1, 1, f"thread has {key}")
    ctx.stream_content(f"thread output {key}")


@tool(side_effect_class="read_only", secrets_allowed=["stripe"])
async def streamed_status() -> AsyncIterator[str | Progress]:
    """An async-generator tool that yields the key in progress and output."""
    key = SecretRef("stripe").reveal()
    yield Progress(current=1, total=2, message=f"key {key} accepted")
    yield f"first piece {key} "
    yield "second piece"


async def test_a_secret_a_tool_streams_reaches_no_event_row_result_or_audit_record() -> None:
    # covers G-23, T-08
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("chatty_status", {}, id="c1"),
                    Call("streamed_status", {}, id="c2"),
                    Call("threaded_status", {}, id="c3"),
                ]
            ),
            "done",
        ]
    )
    async with open_store("memory://") as stores:
        agent = Agent(
            "payer",
            model=model,
            tools=[chatty_status, streamed_status, threaded_status],
            store=stores,
            security=SecurityConfig(vault=Vault({"stripe": callable_secret(lambda: KEY)})),
        )
        audit: list[Any] = []
        agent.audit.subscribe(audit.append)
        events = [e async for e in agent.stream("How is the payment API?")]
        journal = await stores.journal.read(events[0].run_id)
    live = [e for e in events if e.type in ("tool.execute.progress", "tool.execute.partial")]
    messages = [getattr(e, "message", None) for e in live if e.type == "tool.execute.progress"]
    assert "authenticating with [secret:stripe]" in messages
    assert "key [secret:stripe] accepted" in messages
    assert "thread has [secret:stripe]" in messages
    pieces = [getattr(e, "content", None) for e in live if e.type == "tool.execute.partial"]
    assert pieces.count("token=[secret:stripe];") == 1
    assert "first piece [secret:stripe] " in pieces
    ends = {e.tool_call_id: e for e in events if e.type == "tool.execute.end"}
    assert ends["c1"].result == "status ok for [secret:stripe]"
    assert ends["c2"].result == "first piece [secret:stripe] second piece"
    assert ends["c3"].result == "thread output [secret:stripe]"
    assert len(audit) == 3
    everything = [
        *map(dump, events),
        *(dump(e.payload) for e in journal),
        *map(dump, model.requests),
        *map(dump, audit),
    ]
    assert all(KEY not in text for text in everything)


def test_redaction_reaches_into_a_forwarded_sub_agent_event_and_spares_the_rest() -> None:
    vault = Vault({"stripe": callable_secret(lambda: KEY)})
    quiet = SubagentEvent(
        run_id="r", tool_call_id="c", agent_name="child",
        event=TextDeltaEvent(run_id="child", delta="nothing secret"),
    )  # fmt: skip
    with SecretScope(vault=vault, tool="t", allowed=frozenset({"stripe"})).active():
        SecretRef("stripe").reveal()
    loud = dataclasses.replace(quiet, event=TextDeltaEvent(run_id="child", delta=f"k={KEY}"))
    assert vault.redact_within(quiet) is quiet
    scrubbed = vault.redact_within(loud)
    assert isinstance(scrubbed.event, TextDeltaEvent)
    assert scrubbed.event.delta == "k=[secret:stripe]"
    assert vault.redact_within({"a": [KEY, (1, KEY)]}) == {
        "a": ["[secret:stripe]", (1, "[secret:stripe]")]
    }


def split_key_tool(cut: int) -> Any:
    @tool(side_effect_class="read_only", secrets_allowed=["stripe"], name=f"split_{cut}")
    async def split_status() -> AsyncIterator[str]:
        """Stream the key cut in two pieces (a tokenizer or a chunked reader may do that)."""
        key = SecretRef("stripe").reveal()
        yield f"auth {key[:cut]}"
        yield f"{key[cut:]} ok"

    return split_status


async def test_a_secret_split_across_two_streamed_pieces_never_reaches_a_partial_event() -> None:
    # covers G-23
    cuts = range(1, len(KEY))
    model = ScriptedModel(
        [Turn(tool_calls=[Call(f"split_{cut}", {}, id=f"c{cut}") for cut in cuts]), "done"]
    )
    agent = Agent(
        "payer",
        model=model,
        tools=[split_key_tool(cut) for cut in cuts],
        security=SecurityConfig(vault=Vault({"stripe": callable_secret(lambda: KEY)})),
    )
    events = [e async for e in agent.stream("Status?")]
    for cut in cuts:
        pieces = [
            e.content
            for e in events
            if e.type == "tool.execute.partial" and e.tool_call_id == f"c{cut}"
        ]
        # Nothing is lost or reordered: the pieces join to the redacted output.
        assert "".join(pieces) == "auth [secret:stripe] ok"
    assert all(KEY not in dump(e) for e in events)
    assert all(KEY[:4] not in dump(e) for e in events)  # not even the start of the key


async def test_streamed_text_that_only_starts_like_a_secret_is_sent_once_the_call_ends() -> None:
    @tool(side_effect_class="read_only", secrets_allowed=["stripe"])
    async def teaser() -> AsyncIterator[str]:
        """Stream text whose end looks like the start of the key, then stop."""
        SecretRef("stripe").reveal()
        yield "prefix sk-live"
        yield "-9e8"

    model = ScriptedModel([Turn(tool_calls=[Call("teaser", {}, id="c1")]), "done"])
    agent = Agent(
        "payer",
        model=model,
        tools=[teaser],
        security=SecurityConfig(vault=Vault({"stripe": callable_secret(lambda: KEY)})),
    )
    events = [e async for e in agent.stream("Status?")]
    pieces = [e.content for e in events if e.type == "tool.execute.partial"]
    assert "".join(pieces) == "prefix sk-live-9e8"
    assert pieces[0] == "prefix "  # the possible key start waited for the end of the call
    end = next(e for e in events if e.type == "tool.execute.end")
    assert end.result == "prefix sk-live-9e8"


@settings(max_examples=150, deadline=None)
@given(
    before=st.text(alphabet="ab-sk9 ", max_size=12),
    after=st.text(alphabet="ab-sk9 ", max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=60), max_size=6),
)
def test_any_split_of_streamed_text_joins_to_its_redaction(
    before: str, after: str, cuts: list[int]
) -> None:
    text = f"{before}{KEY}{after}{KEY[:7]}"
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[i:j] for i, j in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    vault = Vault({"stripe": callable_secret(lambda: KEY)})
    with SecretScope(vault=vault, tool="t", allowed=frozenset({"stripe"})).active():
        SecretRef("stripe").reveal()

    async def stream() -> list[str]:
        queue = ProgressQueue(depth=1000)
        sink = ProgressSink(queue, "r", "c", None, vault)
        for piece in pieces:
            sink.partial(piece)
        sink.flush()
        out: list[str] = []
        while queue.qsize():
            event = await queue.get()
            assert isinstance(event, ToolExecutePartialEvent)
            out.append(event.content)
        return out

    emitted = asyncio.run(stream())
    assert "".join(emitted) == vault.redact(text)
    assert all(KEY not in piece for piece in emitted)
