"""A travel agent in ADK's layout, on scripted models: a root agent with function tools (one slow),
a booking sub-agent reached by ``transfer_to_agent``, and a fact agent used as an ``AgentTool``.

``TOOL_RUNS`` records each real tool run (tests check that mocked tools do not run).
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import ToolContext
from google.adk.tools.agent_tool import AgentTool

from .scripted import ScriptedLlm

TOOL_RUNS: list[str] = []


def get_weather(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The weather in a city, in the user's units (from the session state)."""
    TOOL_RUNS.append(f"get_weather({city})")
    if city == "Atlantis":
        raise ValueError("Atlantis has no weather station")
    units = tool_context.state.get("units", "C")
    return {"city": city, "temperature": 21 if units == "C" else 70, "units": units}


def convert_currency(amount: float, to: str) -> dict[str, Any]:
    """Convert an amount in euros to another currency."""
    TOOL_RUNS.append(f"convert_currency({amount}, {to})")
    return {"amount": round(amount * 1.1, 2), "currency": to}


async def check_trains(city: str) -> dict[str, Any]:
    """Train times to a city: slow (tests time it out)."""
    TOOL_RUNS.append(f"check_trains({city})")
    await asyncio.sleep(30)
    return {"city": city, "trains": []}


def book_hotel(city: str, nights: int, tool_context: ToolContext) -> dict[str, Any]:
    """Book a hotel (and note it in the session state)."""
    TOOL_RUNS.append(f"book_hotel({city}, {nights})")
    tool_context.state["booked"] = city
    return {"status": "booked", "city": city, "nights": nights}


def lookup_fact(topic: str) -> str:
    """A fact about a place."""
    TOOL_RUNS.append(f"lookup_fact({topic})")
    return f"{topic} was founded in 753 BC."


booking_agent = LlmAgent(
    name="booking_agent",
    description="Books hotels.",
    instruction="You book hotels for {user_name}.",
    model=ScriptedLlm(
        script={
            # after the transfer, the last message quotes the root agent's transfer
            "transfer_to_agent": {"call": "book_hotel", "args": {"city": "Rome", "nights": 2}},
            "after:book_hotel": "Your hotel in Rome is booked for 2 nights.",
        }
    ),
    tools=[book_hotel],
)

fact_agent = LlmAgent(
    name="fact_agent",
    description="Knows facts about places.",
    instruction="Answer with one fact.",
    model=ScriptedLlm(
        script={
            "Rome": {"call": "lookup_fact", "args": {"topic": "Rome"}},
            "after:lookup_fact": "Rome was founded in 753 BC.",
        }
    ),
    tools=[lookup_fact],
)

root_agent = LlmAgent(
    name="travel_agent",
    description="Plans trips.",
    instruction="You plan trips for {user_name}.",
    model=ScriptedLlm(
        script={
            "weather in Paris": {"call": "get_weather", "args": {"city": "Paris"}},
            "weather in Atlantis": {"call": "get_weather", "args": {"city": "Atlantis"}},
            "after:get_weather": "It is sunny in Paris.",
            "100 euros in dollars": {
                "call": "convert_currency",
                "args": {"amount": 100, "to": "USD"},
            },
            "after:convert_currency": "100 euros is 110 dollars.",
            "Book a hotel": {"call": "transfer_to_agent", "args": {"agent_name": "booking_agent"}},
            "fact about Rome": {"call": "fact_agent", "args": {"request": "Rome"}},
            "trains to Rome": {"call": "check_trains", "args": {"city": "Rome"}},
            "after:fact_agent": "Here is a fact: Rome was founded in 753 BC.",
        }
    ),
    tools=[get_weather, convert_currency, AgentTool(agent=fact_agent), check_trains],
    sub_agents=[booking_agent],
)
