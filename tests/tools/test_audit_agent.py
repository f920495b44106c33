"""Audit records and counters of tool executions, observed through the agent (T-14)."""

from __future__ import annotations

from bastion import Agent, tool
from bastion.core import RunContext
from bastion.observability import AuditRecord
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock


@tool(side_effect_class="read_only", cache_ttl=60)
async def measure(ctx: RunContext[None], seconds: int) -> str:
    """Take a measurement that lasts a while."""
    await ctx.clock.sleep(seconds)
    return f"measured for {seconds} s"


@tool(side_effect_class="side_effecting")
def boom() -> str:
    """Always fails."""
    raise RuntimeError("exploded")


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            Turn(tool_calls=[Call("measure", {"seconds": 2}, id="m")]),
            Turn(
                tool_calls=[
                    Call("boom", id="b"),
                    Call("measure", {"seconds": "long"}, id="bad"),
                    Call("nope", id="u"),
                ]
            ),
            Turn(tool_calls=[Call("measure", {"seconds": 2}, id="m2")]),
            "done",
        ]
    )


async def test_one_audit_record_per_executed_call_with_its_outcome() -> None:
    # covers T-14
    clock = VirtualClock()
    agent = Agent("a", model=script(), tools=[measure, boom], clock=clock)
    rows: list[AuditRecord] = []
    agent.audit.subscribe(rows.append)
    result = await agent.run("go")
    assert [(r.tool_call_id, r.tool_name, r.outcome, r.duration, r.cached) for r in rows] == [
        ("m", "measure", "ok", 2.0, False),
        ("b", "boom", "execution_failed", 0.0, False),
        ("bad", "measure", "invalid_input", 0.0, False),
        ("u", "nope", "unknown_tool", 0.0, False),
        ("m2", "measure", "ok", 0.0, True),  # a cache hit: the tool did not run
    ]
    assert {r.run_id for r in rows} == {result.run_id}
    assert rows[0].classification == measure.classification()
    assert rows[0].classification["side_effect_class"] == "read_only"
    assert rows[1].classification["side_effect_class"] == "side_effecting"
    assert rows[1].classification["idempotent"] is False
    assert rows[3].classification == {}  # no such tool
    assert {r.timestamp for r in rows} == {clock.now()}
    assert [c.result for c in result.tool_calls][::4] == [
        "measured for 2 s",
        "measured for 2 s",
    ]


async def test_counters_are_kept_whether_or_not_anyone_subscribes() -> None:
    # covers T-14
    agent = Agent("a", model=script(), tools=[measure, boom], clock=VirtualClock())
    await agent.run("go")
    snapshot = agent.audit.counters.snapshot()
    assert {k: v for k, v in snapshot.items() if k.startswith("tool.executor.")} == {
        "tool.executor.calls.total": 5,
        "tool.executor.errors.total{kind=execution_failed}": 1,
        "tool.executor.errors.total{kind=invalid_input}": 1,
        "tool.executor.errors.total{kind=unknown_tool}": 1,
    }
    assert snapshot["tool.cache.hits.total"] == 1
    assert snapshot["tool.cache.misses.total"] == 1
    assert list(snapshot) == sorted(snapshot)


async def test_unsubscribing_stops_delivery_and_a_failing_sink_breaks_nothing() -> None:
    # covers T-14
    agent = Agent("a", model=script(), tools=[measure, boom], clock=VirtualClock())
    rows: list[AuditRecord] = []

    def broken(_: AuditRecord) -> None:
        raise ValueError("sink down")

    agent.audit.subscribe(broken)
    unsubscribe = agent.audit.subscribe(rows.append)
    result = await agent.run("go")
    assert result.status == "completed"
    assert len(rows) == 5  # the healthy sink got every record
    assert agent.audit.counters.get("tool.audit.sink_errors.total") == 5
    unsubscribe()
    again = agent.with_model(ScriptedModel([Turn(tool_calls=[Call("boom", id="again")]), "done"]))
    await again.run("go")  # the copy shares the agent's audit
    assert len(rows) == 5
    assert agent.audit.counters.get("tool.executor.calls.total") == 6
