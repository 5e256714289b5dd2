"""Python agents: what a function may return, how a spec is resolved, what a bad spec gets."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from assay.agents import (
    Agent,
    AgentError,
    AgentLoadError,
    CaseContext,
    Session,
    TurnResult,
    resolve_agent,
    to_turn,
)
from assay.agents.python import load_python_target
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, Part


def _user(text: str) -> Content:
    return Content(role="user", parts=[Part(text=text)])


def _session() -> Session:
    return Session(app_name="a", user_id="u", session_id="s")


def test_a_string_is_the_final_response_with_no_steps() -> None:
    turn = to_turn("Hello!", "bot")
    assert turn.events == []
    assert turn.final_response is not None and turn.final_response.parts
    assert turn.final_response.parts[0].text == "Hello!"


def test_a_simple_result_becomes_call_and_response_events_in_order() -> None:
    result = TurnResult(
        final_response="Booked.",
        tool_calls=[
            {"name": "search", "args": {"city": "Lisbon"}, "response": {"flights": 2}},
            {"name": "book", "args": {"id": 7}, "response": "ok"},
            {"name": "notify", "args": {}},
        ],
    )
    turn = to_turn(result, "bot")
    calls = [p.function_call for e in turn.events for p in e.content.parts if p.function_call]  # type: ignore[union-attr]
    responses = [
        p.function_response
        for e in turn.events
        for p in e.content.parts
        if p.function_response  # type: ignore[union-attr]
    ]
    assert [(c.name, c.args) for c in calls] == [
        ("search", {"city": "Lisbon"}),
        ("book", {"id": 7}),
        ("notify", {}),
    ]
    assert [(r.name, r.response) for r in responses] == [
        ("search", {"flights": 2}),
        ("book", {"result": "ok"}),  # a non-object response is wrapped as ADK wraps it
    ]
    assert [c.id for c in calls][:2] == [r.id for r in responses]
    assert all(e.author == "bot" for e in turn.events)


def test_events_split_into_steps_and_the_last_text_only_event_as_final_response() -> None:
    events: list[dict[str, Any]] = [
        {"author": "bot", "content": {"role": "model", "parts": [{"text": "Let me look."}]}},
        {
            "author": "bot",
            "content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        },
        {"author": "bot", "content": {"role": "model", "parts": [{"text": "Done."}]}},
    ]
    turn = to_turn(events, "bot")
    assert turn.final_response is not None and turn.final_response.parts
    assert turn.final_response.parts[0].text == "Done."
    assert len(turn.events) == 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "returned int"),
        ({"final_response": "x", "tool_calls": [{"args": {}}]}, "tool_calls.0.name"),
        ([{"content": {}}], "0.author"),
    ],
)
def test_an_unusable_return_value_is_an_agent_error_that_says_where(
    value: Any, message: str
) -> None:
    with pytest.raises(AgentError, match=message):
        to_turn(value, "bot")


def _agent(spec: str) -> Any:
    case = EvalCase.model_validate(
        {"eval_id": "c", "conversation": [{"user_content": {"parts": [{"text": "x"}]}}]}
    )
    made = resolve_agent(spec, env={})(CaseContext(case=case))
    assert isinstance(made, Agent)
    return made


def test_a_spec_names_a_function_in_a_py_file_sync_or_async(tmp_path: Path) -> None:
    source = tmp_path / "my_agent.py"
    source.write_text(
        "async def answer(message, session):\n"
        "    session.state['seen'] = message\n"
        "    return {'final_response': message.upper()}\n"
        "answer.instructions = 'Shout.'\n"
        "answer.tool_declarations = [{'name': 'none'}]\n"
        "def plain(message, session):\n"
        "    return 'plain ' + message\n"
    )
    agent = _agent(f"{source}:answer")
    session = _session()
    turn = asyncio.run(agent.turn(_user("hi"), session))
    assert turn.final_response is not None and turn.final_response.parts
    assert turn.final_response.parts[0].text == "HI"
    assert session.state == {"seen": "hi"}
    details = agent.app_details()
    assert details is not None
    assert details.agent_details["answer"].instructions == "Shout."
    plain = _agent(f"{source}:plain")
    assert plain.app_details() is None
    assert asyncio.run(plain.turn(_user("x"), _session())).final_response is not None


def test_a_factory_gives_each_case_a_fresh_agent_object(tmp_path: Path) -> None:
    source = tmp_path / "factory_agent.py"
    source.write_text(
        "from assay.agents import AgentTurn\n"
        "class Counter:\n"
        "    name = 'counter'\n"
        "    def __init__(self):\n"
        "        self.turns = 0\n"
        "    async def turn(self, user, session):\n"
        "        self.turns += 1\n"
        "        return AgentTurn()\n"
        "    def app_details(self):\n"
        "        return None\n"
        "    async def aclose(self):\n"
        "        pass\n"
    )
    first, second = _agent(f"{source}:Counter"), _agent(f"{source}:Counter")
    assert first is not second
    asyncio.run(first.turn(_user("x"), _session()))
    assert vars(first)["turns"] == 1 and vars(second)["turns"] == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon_here", "expected module:attr"),
        ("missing/file.py:agent", "no such file"),
        ("assay_no_such_module_xyz:agent", "cannot import module"),
        ("json:no_such_attr", "has no attribute 'no_such_attr'"),
    ],
)
def test_a_bad_spec_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(AgentLoadError, match=message):
        load_python_target(spec)


AGENTS_FILE = """
from typing import Any, NamedTuple

from assay.agents.base import Session

LIMIT = 3


class Row(NamedTuple):
    name: str


def get_weather(city, units="C"):
    return {"city": city}


def lookup(topic):
    return topic


async def travel_agent(message: str, session: Session) -> str:
    return "hi"


def booking_agent(message, session):
    return "booked"


class Counter:
    async def turn(self, user, session):
        raise NotImplementedError
"""


def test_a_misspelt_attr_suggests_the_files_own_agents_closest_first_not_its_imports(
    tmp_path: Path,
) -> None:
    source = tmp_path / "agents.py"
    source.write_text(AGENTS_FILE)
    with pytest.raises(AgentLoadError) as failed:
        load_python_target(f"{source}:travel_agnt")
    message = str(failed.value)
    assert message.endswith(
        f"{source} has no attribute 'travel_agnt'; each agent it defines, closest first: "
        "travel_agent, booking_agent, Counter"
    )
    for not_an_agent in ("Any", "NamedTuple", "Session", "LIMIT", "Row", "get_weather", "lookup"):
        assert not_an_agent not in message.rsplit(";", 1)[1]


def test_without_agents_a_misspelt_attr_suggests_the_functions_that_take_two_arguments(
    tmp_path: Path,
) -> None:
    source = tmp_path / "tools.py"
    source.write_text("import json\n\ndef get_weather(city, units='C'):\n    return city\n")
    with pytest.raises(AgentLoadError, match=r"the one function that could take \(message, "
                       r"session\) it defines is get_weather$"):  # fmt: skip
        load_python_target(f"{source}:agent")
    source.write_text("import json\n\nLIMIT = 3\n")
    with pytest.raises(AgentLoadError, match=r"it defines no agent and no function of"):
        load_python_target(f"{source}:agent")
