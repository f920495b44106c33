"""A tool that stops mid-call to ask a person: the run suspends, the answer resumes it."""

from __future__ import annotations

import pytest

from bastion import Agent, RunContext, tool
from bastion.core import ToolMessage
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Directive, InputAnswer, InputRequest, InputRequired

_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _agent(runs: list[object]) -> Agent:
    @tool(side_effect_class="external_stateful")
    async def wire_money(ctx: RunContext[None], amount: int) -> str:
        """Send money, once the amount is confirmed by a person."""
        answer = ctx.input_answer
        runs.append(answer)
        if not isinstance(answer, InputAnswer):
            raise InputRequired(InputRequest(message=f"Send {amount} EUR?", schema=_SCHEMA))
        return "sent" if answer.content == {"ok": True} else f"kept ({answer.action})"

    @tool(side_effect_class="read_only")
    def balance() -> int:
        """The balance."""
        return 100

    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("wire_money", {"amount": 5}), Call("balance")]),
            Turn(text="done"),
        ]
    )
    return Agent("bank", model=model, tools=[wire_money, balance])


@pytest.mark.parametrize(
    ("answer", "result"),
    [
        (InputAnswer(tool_call_id="", content={"ok": True}), "sent"),
        (InputAnswer(tool_call_id="", action="cancel"), "kept (cancel)"),
    ],
)
async def test_the_asking_call_waits_while_the_others_finish_then_reruns_with_the_answer(
    answer: InputAnswer, result: str
):
    runs: list[object] = []
    agent = _agent(runs)
    stream = agent.stream("pay")
    kinds = [(event.type, getattr(event, "tool_name", None)) async for event in stream]
    suspended = stream.result
    assert suspended.status == "awaiting_approval"
    assert ("tool.approval.requested", "wire_money") in kinds
    assert ("tool.execute.end", "balance") in kinds
    assert ("tool.execute.end", "wire_money") not in kinds
    (pending,) = suspended.pending_approvals
    assert pending.input == InputRequest(message="Send 5 EUR?", schema=_SCHEMA)
    assert pending.reason == "tool 'wire_money' asks: Send 5 EUR?"
    assert suspended.state is not None
    given = InputAnswer(
        tool_call_id=pending.tool_call_id, action=answer.action, content=answer.content
    )
    done = await agent.run(suspended.state, directive=Directive(inputs=[given]))
    assert done.status == "completed"
    assert done.state is not None
    texts = [m.content for m in done.state.messages if isinstance(m, ToolMessage)]
    assert texts == [result, "100"]  # in call order, the asking call's result first
    assert runs[0] is None
    assert isinstance(runs[1], InputAnswer)
    assert runs[1].request == pending.input  # the answer knows the question it answers
