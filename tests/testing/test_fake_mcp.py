"""``fake_mcp_server``: an in-process MCP server for users' tests."""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from bastion import Agent
from bastion.core import ToolExecuteProgressEvent, ToolMessage
from bastion.testing import Call, ScriptedModel, Turn, fake_mcp_server


def weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    if city == "Atlantis":
        raise ToolError("no such city")
    return {"city": city, "celsius": 12}


async def forecast(days: int, ctx: Context) -> str:
    """A forecast, day by day."""
    for day in range(days):
        await ctx.report_progress(day + 1, days)
    return f"{days} days of rain"


async def test_a_fake_server_serves_tools_errors_progress_and_resources():
    server = fake_mcp_server(
        weather,
        forecast,
        name="meteo",
        resource_texts={"notes://today": "Bring an umbrella."},
        resources=True,
    )
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("weather", {"city": "Oslo"}),
                    Call("weather", {"city": "Atlantis"}),
                    Call("forecast", {"days": 2}),
                    Call("read_resource", {"uri": "notes://today"}),
                ]
            ),
            Turn(text="umbrella"),
        ]
    )
    async with Agent("a", model=model, tools=[server]) as agent:
        events = [e async for e in agent.stream("weather?")]
    result = events[-1]
    assert result.status == "completed"  # type: ignore[union-attr]
    assert [(e.current, e.total) for e in events if isinstance(e, ToolExecuteProgressEvent)] == [
        (1, 2),
        (2, 2),
    ]
    assert agent.config.tools.by_name["weather"].oracle_key == "tool:meteo:weather"
    replies = [e for e in events if e.type in ("tool.execute.end", "tool.execute.error")]
    oslo, atlantis, rain, note = replies
    assert '"celsius":12' in oslo.result  # type: ignore[union-attr]
    assert atlantis.type == "tool.execute.error"
    assert "no such city" in atlantis.message
    assert "2 days of rain" in rain.result  # type: ignore[union-attr]
    assert "Bring an umbrella." in note.result  # type: ignore[union-attr]


async def test_a_fake_servers_prompt_is_the_agents_instructions():
    server = fake_mcp_server(weather, prompt_texts={"forecaster": "You forecast the weather."})
    model = ScriptedModel([Turn(text="ok")])
    async with Agent(
        "a", model=model, tools=[server], instructions=server.instructions("forecaster")
    ) as agent:
        result = await agent.run("go")
    assert result.output == "ok"
    assert model.requests[0].messages[0].content == "You forecast the weather."  # type: ignore[union-attr]
    assert not [m for m in result.state.messages if isinstance(m, ToolMessage)]  # type: ignore[union-attr]
