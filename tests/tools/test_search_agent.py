"""Deferred tools and ``tool_search`` through the agent: catalogue, search, promotion.

SPEC T-26, G-19, G-33..G-36, §3.1 scenario 16.
"""

from __future__ import annotations

import json

import pytest

from bastion import Agent, tool
from bastion.agent import run_state_from_json, run_state_to_json
from bastion.core import ToolMessage, UserError
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive, Tool, ToolExample, ToolResult

# Fifty decoys a real catalogue might hold; a few share words with the query.
_DECOYS = [
    ("list_weather_stations", "List the weather stations a national service operates."),
    ("paris_metro_status", "Service status of the Paris metro lines."),
    ("get_air_quality", "Air quality index of a city."),
    ("get_stock_price", "Latest price of a stock ticker."),
    ("send_email", "Send an email to a recipient."),
    ("create_calendar_event", "Create an event in the user's calendar."),
    ("search_flights", "Search flights between two airports on a date."),
    ("book_hotel", "Book a hotel room in a city for given dates."),
    ("translate_text", "Translate text into another language."),
    ("convert_currency", "Convert an amount from one currency to another."),
    ("get_exchange_rate", "Exchange rate between two currencies."),
    ("read_file", "Read a text file from the workspace."),
    ("write_file", "Write a text file to the workspace."),
    ("list_directory", "List the files of a directory."),
    ("run_sql_query", "Run a read-only SQL query against the analytics database."),
    ("create_ticket", "Open a support ticket."),
    ("close_ticket", "Close a support ticket."),
    ("get_user_profile", "Profile of a user by id."),
    ("update_user_profile", "Update fields of a user's profile."),
    ("geocode_address", "Latitude and longitude of a street address."),
    ("reverse_geocode", "Street address nearest to a latitude and longitude."),
    ("get_time_zone", "Time zone of a location."),
    ("get_current_time", "Current local time in a time zone."),
    ("schedule_meeting", "Find a slot and schedule a meeting with attendees."),
    ("post_slack_message", "Post a message to a Slack channel."),
    ("get_news_headlines", "Top news headlines for a country."),
    ("summarize_document", "Summarize a long document."),
    ("resize_image", "Resize an image to given dimensions."),
    ("ocr_image", "Extract text from an image."),
    ("get_git_log", "Recent commits of a git repository."),
    ("open_pull_request", "Open a pull request on a repository."),
    ("run_tests", "Run the project's test suite."),
    ("deploy_service", "Deploy a service to production."),
    ("rollback_deploy", "Roll back the last deployment of a service."),
    ("get_cpu_usage", "CPU usage of a host over the last hour."),
    ("restart_container", "Restart a container by name."),
    ("list_invoices", "List the invoices of a customer."),
    ("refund_payment", "Refund a payment, fully or partly."),
    ("get_shipping_status", "Shipping status of an order."),
    ("cancel_order", "Cancel an order that has not shipped."),
    ("add_todo_item", "Add an item to the user's todo list."),
    ("get_recipe", "A recipe for a dish."),
    ("get_movie_showtimes", "Showtimes of a movie at cinemas near a city."),
    ("get_sports_scores", "Latest scores of a sports league."),
    ("define_word", "Dictionary definition of a word."),
    ("calculate_route", "Driving route between two places."),
    ("get_traffic_conditions", "Traffic conditions on a road."),
    ("get_tide_times", "Tide times for a coastal town."),
    ("get_uv_index", "UV index forecast for a location."),
    ("get_pollen_count", "Pollen count for a region."),
]


def _decoy(name: str, description: str) -> Tool:
    def run(target: str) -> str:
        return f"{name}({target})"

    return tool(
        run,
        name=name,
        description=description,
        side_effect_class="read_only",
        defer_loading=True,
    )


@tool(
    side_effect_class="read_only",
    defer_loading=True,
    examples=[ToolExample(input={"city": "Oslo"}, output="3 C, snow")],
)
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather and temperature for a city.

    Args:
        city: City name, e.g. "Paris".
        unit: "celsius" or "fahrenheit".
    """
    return f"18 degrees {unit} and sunny in {city}"


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _catalogue() -> list[Tool]:
    decoys = [_decoy(n, d) for n, d in _DECOYS]
    return [add, *decoys[:25], get_weather, *decoys[25:]]


def _names(model: ScriptedModel, step: int) -> list[str]:
    return [d.name for d in model.requests[step].tools]


async def test_deferred_tool_is_found_promoted_and_called_next_step() -> None:
    # covers T-26, G-19, G-33, G-34, G-35, G-36
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "weather in paris", "k": 3})]),
            Turn(tool_calls=[Call("get_weather", {"city": "Paris"})]),
            "It is 18 degrees and sunny in Paris.",
        ]
    )
    agent = Agent("travel", model=model, tools=_catalogue())

    result = await agent.run("What's the weather in Paris?")

    result.raise_for_status()
    assert result.output == "It is 18 degrees and sunny in Paris."
    # Step 1: eager tools and the search, nothing deferred.
    assert _names(model, 0) == ["add", "tool_search"]
    # Step 2: the three matches, best first, after the eager tools.
    assert _names(model, 1) == [
        "add",
        "tool_search",
        "get_weather",
        "paris_metro_status",
        "list_weather_stations",
    ]
    tool_messages = [m for m in result.messages if isinstance(m, ToolMessage)]
    found = json.loads(tool_messages[0].text)
    assert found["tools"][0] == {
        "name": "get_weather",
        "description": "Current weather and temperature for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": 'City name, e.g. "Paris".'},
                "unit": {
                    "type": "string",
                    "description": '"celsius" or "fahrenheit".',
                    "default": "celsius",
                },
            },
            "required": ["city"],
        },
    }
    assert [t["name"] for t in found["tools"]] == [
        "get_weather",
        "paris_metro_status",
        "list_weather_stations",
    ]
    assert tool_messages[1].text == "18 degrees celsius and sunny in Paris"
    # A deferred tool's worked examples never reach the model, even once promoted (G-36).
    weather = next(d for d in model.requests[1].tools if d.name == "get_weather")
    assert weather.description == "Current weather and temperature for a city."
    assert result.state is not None
    assert result.state.promoted_tools == [
        "get_weather",
        "paris_metro_status",
        "list_weather_stations",
    ]


async def test_tool_search_is_a_read_only_first_party_built_in() -> None:
    # covers G-19, G-34
    agent = Agent("a", model=ScriptedModel([]), tools=[add, get_weather])
    search = agent.config.tools.by_name["tool_search"]
    assert search.trust_class == "first_party_built_in"
    assert search.side_effect_class == "read_only"
    assert search.parameters["required"] == ["query"]
    assert [d.name for d in agent.config.tools.advertised] == ["add", "tool_search"]


async def test_without_deferred_tools_there_is_no_search_and_the_catalogue_is_shared() -> None:
    # covers G-19, G-34
    model = ScriptedModel([Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]), "3"])
    agent = Agent("a", model=model, tools=[add])
    result = await agent.run("1+2?")
    result.raise_for_status()
    assert "tool_search" not in agent.config.tools.by_name
    assert agent.config.tools.deferred == {}
    # No promotion: every step sends the agent's own tuple, not a copy.
    assert all(r.tools is agent.config.tools.advertised for r in model.requests)


async def test_repeated_searches_promote_each_tool_once_in_order() -> None:
    # covers G-35
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "stock price", "k": 1})]),
            Turn(
                tool_calls=[
                    Call("tool_search", {"query": "current weather", "k": 1}),
                    Call("tool_search", {"query": "stock ticker", "k": 1}),
                ]
            ),
            "done",
        ]
    )
    agent = Agent("a", model=model, tools=_catalogue())
    result = await agent.run("go")
    result.raise_for_status()
    assert _names(model, 1) == ["add", "tool_search", "get_stock_price"]
    assert _names(model, 2) == ["add", "tool_search", "get_stock_price", "get_weather"]


async def test_no_match_explains_and_promotes_nothing() -> None:
    # covers G-35
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "zzqx"})]),
            "nothing",
        ]
    )
    agent = Agent("a", model=model, tools=_catalogue())
    result = await agent.run("go")
    result.raise_for_status()
    message = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert message.text == (
        "No tool matches 'zzqx'. Try other words: what the tool does or acts on."
    )
    assert _names(model, 1) == ["add", "tool_search"]


async def test_name_fallback_finds_a_tool_by_part_of_its_name() -> None:
    # covers T-26
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "geocod", "k": 5})]),
            "ok",
        ]
    )
    agent = Agent("a", model=model, tools=_catalogue())
    result = await agent.run("go")
    result.raise_for_status()
    assert _names(model, 1) == ["add", "tool_search", "geocode_address", "reverse_geocode"]


async def test_a_deferred_tool_may_be_called_before_it_is_promoted() -> None:
    # covers G-33
    # Deferral keeps a tool out of the context; it does not forbid it (deny_tools does).
    model = ScriptedModel([Turn(tool_calls=[Call("get_weather", {"city": "Rome"})]), "ok"])
    agent = Agent("a", model=model, tools=[add, get_weather])
    result = await agent.run("go")
    result.raise_for_status()
    assert result.tool_calls[0].result == "18 degrees celsius and sunny in Rome"
    assert _names(model, 1) == ["add", "tool_search"]  # calling does not promote


async def test_only_deferred_tools_of_the_agent_are_promoted() -> None:
    # covers G-35
    def reveal() -> ToolResult:
        return ToolResult(output="ok", promote_tools=["add", "nope", "get_weather", "add"])

    model = ScriptedModel([Turn(tool_calls=[Call("reveal")]), "ok"])
    revealer = tool(reveal, side_effect_class="pure")
    agent = Agent("a", model=model, tools=[add, revealer, get_weather])
    result = await agent.run("go")
    result.raise_for_status()
    assert _names(model, 1) == ["add", "reveal", "tool_search", "get_weather"]


def test_a_user_tool_named_tool_search_conflicts_with_deferred_tools() -> None:
    # covers G-34
    def tool_search(query: str) -> str:
        return query

    mine = tool(tool_search, side_effect_class="pure")
    with pytest.raises(UserError, match="a tool is named 'tool_search'"):
        Agent("a", model=ScriptedModel([]), tools=[mine, get_weather])
    # Without deferred tools the name is free.
    assert "tool_search" in Agent("b", model=ScriptedModel([]), tools=[mine]).config.tools.by_name


async def test_promotion_survives_suspend_json_round_trip_and_resume() -> None:
    @tool(side_effect_class="side_effecting", defer_loading=True, needs_approval=True)
    # covers G-35
    def book_table(restaurant: str) -> str:
        """Book a table at a restaurant."""
        return f"booked {restaurant}"

    def agent_with(model: ScriptedModel) -> Agent[None, str]:
        return Agent("diner", model=model, tools=[add, book_table])

    first = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "book a restaurant table"})]),
            Turn(tool_calls=[Call("book_table", {"restaurant": "Chez Nous"}, id="c1")]),
        ]
    )
    suspended = await agent_with(first).run("Book Chez Nous")
    assert suspended.status == "awaiting_approval"
    assert suspended.state is not None
    saved = run_state_to_json(suspended.state)

    second = ScriptedModel(["Booked."])
    resumed = await agent_with(second).run(
        run_state_from_json(saved),
        directive=Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=True)]),
    )
    resumed.raise_for_status()
    assert [c.result for c in resumed.tool_calls if c.name == "book_table"] == ["booked Chez Nous"]
    assert _names(second, 0) == ["add", "tool_search", "book_table"]
