"""A small eval set, its config, and agents that pass or fail it, for the testing-helper tests.

Every criterion is deterministic (tool trajectory and ROUGE), so no judge is involved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}

# eval_id -> (user message, expected answer, expected tool calls)
CASES: dict[str, tuple[str, str, list[dict[str, Any]]]] = {
    "weather": (
        "What's the weather in Paris tomorrow?",
        "Tomorrow in Paris expect light rain and 14 degrees.",
        [{"name": "get_forecast", "args": {"city": "Paris"}}],
    ),
    "flight": (
        "Find me a flight from Berlin to Lisbon on 12 May.",
        "Flight TP551 leaves Berlin at 07:10 and costs 129 EUR.",
        [{"name": "search_flights", "args": {"origin": "BER", "destination": "LIS"}}],
    ),
}

BY_MESSAGE = {message: (answer, tools) for message, answer, tools in CASES.values()}


def eval_set_data(eval_set_id: str = "travel", ids: tuple[str, ...] = ("weather", "flight")) -> Any:
    """An eval set in ADK's JSON shape with the cases ``ids``."""
    cases = []
    for eval_id in ids:
        message, answer, tools = CASES[eval_id]
        cases.append(
            {
                "eval_id": eval_id,
                "session_input": {"app_name": "travel", "user_id": "u1", "state": {}},
                "conversation": [
                    {
                        "invocation_id": f"{eval_id}-1",
                        "user_content": {"role": "user", "parts": [{"text": message}]},
                        "final_response": {"role": "model", "parts": [{"text": answer}]},
                        "intermediate_data": {"tool_uses": tools},
                    }
                ],
            }
        )
    return {"eval_set_id": eval_set_id, "eval_cases": cases}


def write_eval_set(
    folder: Path,
    name: str = "travel.evalset.json",
    config: Any = CONFIG,
    ids: tuple[str, ...] = ("weather", "flight"),
) -> Path:
    """Write the eval set (and, unless ``config`` is None, a ``test_config.json``) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(eval_set_data(name.split(".")[0], ids)))
    if config is not None:
        (folder / "test_config.json").write_text(json.dumps(config))
    return path


def good_agent(message: str, session: Any) -> dict[str, Any]:
    """Answers every case as expected."""
    answer, tools = BY_MESSAGE[message]
    return {"final_response": answer, "tool_calls": tools}


def wrong_about_flights(message: str, session: Any) -> dict[str, Any]:
    """Right about the weather; answers flights without searching, and wrongly."""
    if "flight" in message:
        return {"final_response": "Sorry, there are no trains today.", "tool_calls": []}
    return good_agent(message, session)


def broken_on_flights(message: str, session: Any) -> dict[str, Any]:
    """Raises on flights."""
    if "flight" in message:
        raise ValueError("the booking backend is down")
    return good_agent(message, session)


AGENT_MODULE = """
import json

BY_MESSAGE = {by_message!r}

def good(message, session):
    answer, tools = BY_MESSAGE[message]
    return {{"final_response": answer, "tool_calls": tools}}

def bad(message, session):
    if "flight" in message:
        return {{"final_response": "Sorry, there are no trains today.", "tool_calls": []}}
    return good(message, session)
"""


def agent_source() -> str:
    """A Python module with ``good`` and ``bad`` agents (``bad`` fails the flight case)."""
    return AGENT_MODULE.format(by_message=BY_MESSAGE)
