"""ADK agents run through ADK's own runner and recorded as ADK's evaluation records them.

The agent under test is ``adk_fixture``: a root agent with function tools, a booking sub-agent
reached by ``transfer_to_agent`` and a fact agent used as an ``AgentTool``, all on a scripted
model (no network, no key).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from _support import RunCli
from google.adk.apps.app import App
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from assay.agents.adk import NESTED_EVENTS_ENV, adk_agent_factory
from assay.agents.base import Agent, CaseContext, Session
from assay.agents.python import AgentLoadError
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, Part
from assay.evalset.invocation import Invocation, InvocationEvents
from assay.runner.inference import CaseInference, InferenceSettings, run_inference
from assay.simulation.static import StaticUserSimulator

from .adk_fixture import agent as fixture

FIXTURE_DIR = Path(__file__).resolve().parent / "adk_fixture"
WEATHER = "What is the weather in Paris?"
FACT = "Tell me a fact about Rome"
BOOKING = "Book a hotel in Rome"
STATE = {"user_name": "Alice", "units": "F"}


def _turn(text: str, **recorded: Any) -> dict[str, Any]:
    return {"user_content": {"role": "user", "parts": [{"text": text}]}, **recorded}


def _case_json(eval_id: str, *turns: dict[str, Any]) -> dict[str, Any]:
    return {
        "eval_id": eval_id,
        "conversation": list(turns),
        "session_input": {"app_name": "adk_fixture", "user_id": "alice", "state": STATE},
    }


def _case(eval_id: str, *turns: dict[str, Any]) -> EvalCase:
    return EvalCase.model_validate(_case_json(eval_id, *turns))


TRIP = _case("trip", _turn(WEATHER), _turn(FACT), _turn(BOOKING))


def _infer(
    cases: list[EvalCase], *, mock_tools: bool = False, timeout: float = 30.0, **options: Any
) -> list[CaseInference]:
    factory = adk_agent_factory(fixture.root_agent, source="adk_fixture", **options)
    settings = InferenceSettings(
        mock_tools=mock_tools, attempts=1, concurrency=2, turn_timeout_s=timeout
    )
    return asyncio.run(
        run_inference(
            cases,
            factory,
            lambda context, agent: StaticUserSimulator(context.case.conversation or []),
            settings,
        )
    )


def _invocations(case: EvalCase, **options: Any) -> list[Invocation]:
    [done] = _infer([case], **options)
    assert done.error is None, done.error
    return done.invocations


def _steps(invocation: Invocation) -> list[tuple[str, str]]:
    """Each step as (author, what it is): ``call NAME ARGS``, ``answer NAME RESPONSE``, text,
    or ``(final)`` for the final response's own event, recorded without its content."""
    assert isinstance(invocation.intermediate_data, InvocationEvents)
    steps: list[tuple[str, str]] = []
    for event in invocation.intermediate_data.invocation_events:
        if event.content is None:
            steps.append((event.author, "(final)"))
            continue
        for part in event.content.parts or []:
            if part.function_call is not None:
                call = part.function_call
                steps.append((event.author, f"call {call.name} {json.dumps(call.args)}"))
            elif part.function_response is not None:
                answer = part.function_response
                steps.append((event.author, f"answer {answer.name} {json.dumps(answer.response)}"))
            elif part.text:
                steps.append((event.author, part.text))
    return steps


def _final(invocation: Invocation) -> str:
    assert invocation.final_response is not None
    return "".join(p.text or "" for p in invocation.final_response.parts or [])


def _message(text: str) -> Content:
    return Content(role="user", parts=[Part(text=text)])


def _session(session_id: str = "s-1") -> Session:
    return Session(
        app_name="adk_fixture", user_id="alice", session_id=session_id, state=dict(STATE)
    )


async def _make(factory: Any, case: EvalCase = TRIP) -> Agent:
    made = factory(CaseContext(case=case))
    assert isinstance(made, Agent)
    return made


def test_each_user_turn_is_one_invocation_with_its_tool_calls_and_responses_in_order() -> None:
    weather, fact, booking = _invocations(TRIP)
    assert _steps(weather) == [
        ("travel_agent", 'call get_weather {"city": "Paris"}'),
        ("travel_agent", 'answer get_weather {"city": "Paris", "temperature": 70, "units": "F"}'),
        ("travel_agent", "(final)"),
    ]
    assert [_final(i) for i in (weather, fact, booking)] == [
        "It is sunny in Paris.",
        "Here is a fact: Rome was founded in 753 BC.",
        "Your hotel in Rome is booked for 2 nights.",
    ]
    [call] = weather.tool_calls()
    [answer] = weather.tool_responses()
    assert call.id and call.id == answer.id


def test_a_sub_agent_reached_by_transfer_keeps_its_own_author() -> None:
    booking = _invocations(TRIP)[2]
    assert _steps(booking) == [
        ("travel_agent", 'call transfer_to_agent {"agent_name": "booking_agent"}'),
        ("travel_agent", 'answer transfer_to_agent {"result": null}'),
        ("booking_agent", 'call book_hotel {"city": "Rome", "nights": 2}'),
        ("booking_agent", 'answer book_hotel {"status": "booked", "city": "Rome", "nights": 2}'),
        ("booking_agent", "(final)"),
    ]


def test_an_agent_tool_is_recorded_as_its_call_and_answer_as_adk_records_it() -> None:
    fact = _invocations(TRIP)[1]
    assert _steps(fact) == [
        ("travel_agent", 'call fact_agent {"request": "Rome"}'),
        ("travel_agent", 'answer fact_agent {"result": "Rome was founded in 753 BC."}'),
        ("travel_agent", "(final)"),
    ]
    assert fact.app_details is not None
    assert list(fact.app_details.agent_details) == ["travel_agent"]


@pytest.mark.parametrize("by_env", [False, True])
def test_nested_events_record_the_agent_tools_own_steps_between_call_and_answer(
    by_env: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if by_env:
        monkeypatch.setenv(NESTED_EVENTS_ENV, "1")
    options = {} if by_env else {"nested_events": True}
    fact = _invocations(_case("fact", _turn(FACT)), **options)[0]
    assert _steps(fact) == [
        ("travel_agent", 'call fact_agent {"request": "Rome"}'),
        ("fact_agent", 'call lookup_fact {"topic": "Rome"}'),
        ("fact_agent", 'answer lookup_fact {"result": "Rome was founded in 753 BC."}'),
        ("fact_agent", "Rome was founded in 753 BC."),
        ("travel_agent", 'answer fact_agent {"result": "Rome was founded in 753 BC."}'),
        ("travel_agent", "(final)"),
    ]
    assert _final(fact) == "Here is a fact: Rome was founded in 753 BC."
    assert fact.app_details is not None
    assert list(fact.app_details.agent_details) == ["travel_agent", "fact_agent"]


def _declared(details: Any) -> list[str]:
    return [d["name"] for tool in details.tool_declarations for d in tool["function_declarations"]]


def test_app_details_list_each_agent_of_the_turn_with_its_instructions_and_tools() -> None:
    booking = _invocations(TRIP)[2]
    assert booking.app_details is not None
    agents = booking.app_details.agent_details
    assert list(agents) == ["travel_agent", "booking_agent"]
    root, sub = agents["travel_agent"], agents["booking_agent"]
    assert root.instructions.startswith("You plan trips for Alice.")  # {user_name} filled in
    assert sub.instructions.startswith("You book hotels for Alice.")
    assert _declared(root) == [
        "transfer_to_agent",
        "get_weather",
        "convert_currency",
        "fact_agent",
        "check_trains",
    ]
    assert _declared(sub) == ["transfer_to_agent", "book_hotel"]
    assert root.tool_declarations[0]["function_declarations"][1]["parameters_json_schema"][
        "required"
    ] == ["city"]


def test_session_state_reaches_the_agent_and_its_changes_come_back() -> None:
    async def run() -> tuple[Session, Any]:
        agent = await _make(adk_agent_factory(fixture.root_agent, source="adk_fixture"))
        session = _session()
        try:
            weather = await agent.turn(_message(WEATHER), session)
            await agent.turn(_message(BOOKING), session)
        finally:
            await agent.aclose()
        return session, weather

    session, weather = asyncio.run(run())
    [answer] = [
        part.function_response.response
        for event in weather.events
        for part in (event.content.parts or [] if event.content else [])
        if part.function_response is not None
    ]
    assert answer is not None
    assert answer["temperature"] == 70  # units "F" read from the state by the tool
    assert session.state == {**STATE, "booked": "Rome"}  # written by book_hotel


def test_each_case_gets_a_fresh_agent_and_session() -> None:
    factory = adk_agent_factory(fixture.root_agent, source="adk_fixture")

    async def run() -> tuple[Agent, Agent, Session]:
        first, second = await _make(factory), await _make(factory)
        try:
            await first.turn(_message(BOOKING), _session(session_id="same-id"))
            later = _session(session_id="same-id")
            await second.turn(_message(WEATHER), later)
        finally:
            await first.aclose()
            await second.aclose()
        return first, second, later

    first, second, later = asyncio.run(run())
    assert first is not second
    assert "booked" not in later.state
    assert first.app_details() != second.app_details()


RECORDED = _case(
    "mocked",
    _turn(
        WEATHER,
        intermediate_data={
            "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}],
            "tool_responses": [{"name": "get_weather", "response": {"temperature": -3}}],
        },
    ),
    _turn(
        FACT,
        intermediate_data={
            "tool_uses": [{"name": "fact_agent", "args": {"request": "Rome"}}],
            "tool_responses": [{"name": "fact_agent", "response": {"result": "Rome is old."}}],
        },
    ),
    _turn(
        BOOKING,
        intermediate_data={
            "tool_uses": [{"name": "book_hotel", "args": {"city": "Rome", "nights": 2}}],
            "tool_responses": [{"name": "book_hotel", "response": {"status": "recorded"}}],
        },
    ),
)


def test_mock_tools_answer_from_the_recorded_responses_and_no_tool_runs() -> None:
    runs_before = list(fixture.TOOL_RUNS)
    weather, fact, booking = _invocations(RECORDED, mock_tools=True)
    assert runs_before == fixture.TOOL_RUNS  # get_weather, lookup_fact, book_hotel: none ran
    assert [r.response for r in weather.tool_responses()] == [{"temperature": -3}]
    assert [r.response for r in fact.tool_responses()] == [{"result": "Rome is old."}]
    assert [(r.name, r.response) for r in booking.tool_responses()] == [
        ("transfer_to_agent", {"result": None}),  # ADK's own control tools still run
        ("book_hotel", {"status": "recorded"}),
    ]


def test_a_mocked_call_with_no_recorded_response_gets_an_error_answer() -> None:
    [convert] = _invocations(
        _case("unrecorded", _turn("What are 100 euros in dollars?")), mock_tools=True
    )
    [answer] = convert.tool_responses()
    assert answer.response is not None
    assert "no recorded response for tool 'convert_currency'" in answer.response["error"]


def test_a_tool_that_raises_makes_the_turn_raise() -> None:
    async def run() -> None:
        agent = await _make(adk_agent_factory(fixture.root_agent, source="adk_fixture"))
        try:
            await agent.turn(_message("What is the weather in Atlantis?"), _session())
        finally:
            await agent.aclose()

    with pytest.raises(ValueError, match="Atlantis has no weather station"):
        asyncio.run(run())
    [done] = _infer([_case("atlantis", _turn("What is the weather in Atlantis?"), _turn(FACT))])
    assert done.invocations == []
    assert done.error is not None and "Atlantis has no weather station" in done.error


def test_a_model_error_makes_the_turn_raise() -> None:
    [done] = _infer([_case("unscripted", _turn(WEATHER), _turn("Sing me a song"))])
    assert len(done.invocations) == 1
    assert done.error is not None
    assert done.error.startswith("turn 2: the agent raised LookupError")
    assert "no reply for 'Sing me a song'" in done.error


def test_a_turn_past_its_time_limit_is_stopped_and_the_case_not_evaluated() -> None:
    [done] = _infer([_case("slow", _turn("Any trains to Rome?"))], timeout=0.3)
    assert done.error == "turn 1: the agent did not answer within 0.3 s"


def test_the_modules_reset_data_runs_before_each_conversation() -> None:
    resets: list[int] = []
    factory = adk_agent_factory(
        fixture.root_agent, source="adk_fixture", reset=lambda: resets.append(1)
    )

    async def run() -> None:
        for _ in range(2):
            await (await _make(factory)).aclose()

    asyncio.run(run())
    assert resets == [1, 1]


class _Watching(BasePlugin):
    """A plugin of the agent's own App: counts the tool calls it sees, and its closing."""

    def __init__(self) -> None:
        super().__init__(name="watching")
        self.tools: list[str] = []
        self.closed = 0

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self.tools.append(tool.name)
        return None

    async def close(self) -> None:
        self.closed += 1


def test_the_modules_app_takes_part_and_aclose_closes_the_runner() -> None:
    watching = _Watching()
    app = App(name="adk_fixture", root_agent=fixture.root_agent, plugins=[watching])
    factory = adk_agent_factory(fixture.root_agent, source="adk_fixture", app=app)

    async def run() -> None:
        agent = await _make(factory)
        await agent.turn(_message(WEATHER), _session())
        assert watching.closed == 0
        await agent.aclose()

    asyncio.run(run())
    assert watching.tools == ["get_weather"]
    assert watching.closed == 1
    assert app.plugins == [watching]  # the App itself is left as it was


def test_adk_logs_are_kept_out_of_the_output_and_the_logger_is_restored(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_DEBUG", raising=False)
    failing = _case("atlantis", _turn("What is the weather in Atlantis?"))
    with caplog.at_level(logging.DEBUG):
        [done] = _infer([failing])
    assert done.error is not None
    assert [r for r in caplog.records if r.name.startswith("google_adk")] == []
    assert logging.getLogger("google_adk").level == logging.NOTSET
    caplog.clear()
    monkeypatch.setenv("ASSAY_DEBUG", "1")
    with caplog.at_level(logging.DEBUG):
        _infer([failing])
    assert any("Atlantis" in r.getMessage() or r.exc_info for r in caplog.records)


def test_without_google_adk_the_factory_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.adk", None)
    with pytest.raises(AgentLoadError, match=r"pip install 'assay\[adk\]'"):
        adk_agent_factory(fixture.root_agent, source="my_agent")


def test_an_object_that_is_not_an_adk_agent_is_refused() -> None:
    with pytest.raises(AgentLoadError, match="not an ADK agent"):
        adk_agent_factory(object(), source="my_agent:thing")
    with pytest.raises(AgentLoadError, match=r"expected a google\.adk App"):
        adk_agent_factory(fixture.root_agent, source="my_agent", app="not an app")


def _comparable(invocation: Invocation) -> dict[str, Any]:
    """An invocation's JSON without what differs from run to run: ids and timings."""
    data = invocation.model_dump(
        mode="json",
        exclude_none=True,
        exclude={
            "invocation_id",
            "creation_timestamp",
            "duration",
            "model_duration",
            "tool_duration",
        },
    )

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip({i: j for i, j in v.items() if i != "id"})
                if k in {"function_call", "function_response"} and isinstance(v, dict)
                else strip(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return dict(strip(data))


async def _adk_inference(case: EvalCase) -> list[Invocation]:
    """The case run by ADK 2.13's own inference, as ``LocalEvalService`` runs it (importing
    that service itself would load Vertex AI's SDK: 20 s)."""
    from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.simulation.user_simulator_provider import UserSimulatorProvider

    adk_case = AdkEvalCase.model_validate(case.model_dump(exclude_none=True))
    inferences = await EvaluationGenerator._generate_inferences_from_root_agent(
        root_agent=fixture.root_agent,
        user_simulator=UserSimulatorProvider().provide(adk_case),
        initial_session=adk_case.session_input,
        session_id=f"___eval___session___{uuid.uuid4()}",
    )
    return [
        Invocation.model_validate(i.model_dump(mode="json", exclude_none=True)) for i in inferences
    ]


@pytest.mark.filterwarnings("ignore:.*EXPERIMENTAL.*:UserWarning")  # ADK's user simulator
def test_invocations_equal_what_adks_own_inference_records() -> None:
    theirs = asyncio.run(_adk_inference(TRIP))
    ours = _invocations(TRIP)
    assert len(ours) == len(theirs) == 3
    for mine, adks in zip(ours, theirs, strict=True):
        assert _comparable(mine) == _comparable(adks)
    assert ours[0].usage_metadata()  # token counts came through too


def _answer(text: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"text": text}]}


EVALSET = {
    "eval_set_id": "adk_fixture_set",
    "eval_cases": [
        _case_json(
            "weather",
            _turn(
                WEATHER,
                final_response=_answer("It is sunny in Paris."),
                intermediate_data={
                    "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]
                },
            ),
        ),
        _case_json(
            "booking",
            _turn(
                BOOKING,
                final_response=_answer("Your hotel in Rome is booked for 2 nights."),
                intermediate_data={
                    "tool_uses": [
                        {"name": "transfer_to_agent", "args": {"agent_name": "booking_agent"}},
                        {"name": "book_hotel", "args": {"city": "Rome", "nights": 2}},
                    ]
                },
            ),
        ),
    ],
}


@pytest.mark.parametrize("form", ["folder", "module:attr"])
def test_assay_eval_runs_an_adk_agent_given_as_a_folder_or_module_attr(
    form: str, run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evalset = tmp_path / "trips.evalset.json"
    evalset.write_text(json.dumps(EVALSET))
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}})
    )
    if form == "folder":
        spec = str(FIXTURE_DIR)
    else:
        monkeypatch.syspath_prepend(str(FIXTURE_DIR.parent))
        spec = "adk_fixture.agent:root_agent"
    run = run_cli("eval", evalset, "--config", config, "--agent", spec)
    assert run.code == 0, run.output
    assert "2 passed, 0 failed, 0 not evaluated" in run.out
    rows = [line for line in run.out.splitlines() if "│" in line]
    for metric in ("tool_trajectory_avg_score", "response_match_score"):
        passed = [row for row in rows if metric in row and "1.00" in row and "PASSED" in row]
        assert len(passed) == 2, run.out
    assert "google_adk" not in run.err and "Traceback" not in run.output


WRAPPED_AGENT = """
import sys

from google.adk.apps.app import App
from google.adk.plugins.base_plugin import BasePlugin

fixture = next(m for n, m in sys.modules.items() if n.endswith("adk_fixture.agent"))
root_agent = fixture.root_agent
SEEN = []
RESETS = []


class Watch(BasePlugin):
    def __init__(self):
        super().__init__(name="watch")

    async def before_tool_callback(self, *, tool, tool_args, tool_context):
        SEEN.append(tool.name)
        return None


app = App(name="wrapped", root_agent=root_agent, plugins=[Watch()])


def reset_data():
    RESETS.append(1)
"""


def test_a_folder_s_app_and_reset_data_take_part_as_adk_eval_uses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.agents.spec import resolve_agent

    folder = tmp_path / "wrapped_adk_app"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(WRAPPED_AGENT)
    factory = resolve_agent(str(folder), env={})
    module = sys.modules["wrapped_adk_app.agent"]

    async def run() -> None:
        agent = await _make(factory)
        try:
            await agent.turn(_message(WEATHER), _session())
        finally:
            await agent.aclose()

    asyncio.run(run())
    assert module.SEEN == ["get_weather"]  # the App's own plugin saw the tool call
    assert module.RESETS == [1]  # reset_data ran before the conversation


def test_a_model_without_a_key_fails_the_case_once_not_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from google.adk.agents import LlmAgent

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    keyless = LlmAgent(name="keyless", model="gemini-2.5-flash", instruction="Answer briefly.")
    factory = adk_agent_factory(keyless, source="keyless")
    settings = InferenceSettings(attempts=3, backoff_s=0.01)

    [done] = asyncio.run(
        run_inference(
            [_case("no_key", _turn(WEATHER))],
            factory,
            lambda context, agent: StaticUserSimulator(context.case.conversation or []),
            settings,
        )
    )

    assert done.attempts == 1 and not done.retryable
    assert done.error is not None
    assert done.error.startswith("turn 1: the agent's model has no usable credentials (")
    assert "GOOGLE_API_KEY" in done.error and "not retried" in done.error
