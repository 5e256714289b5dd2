"""The example's travel agent: its tools and policy, and the README's run of it end to end.

End to end, the agent runs through ``assay eval --agent`` over the example's eval set; the judges
and the simulated user of the scenario case are the stub judge of ``tests/_judges.py`` over real
HTTP on 127.0.0.1 (the autouse ``judge_env`` fixture).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _judge_server import JudgeServer
from _judges import approve, reject
from _support import EXAMPLE_DIR, Example, RunCli

from assay.agents.base import Session, TurnResult
from assay.metrics.base import EvalStatus

AGENT = f"{EXAMPLE_DIR / 'agent.py'}:travel_agent"
SCENARIO = "book_cheapest_and_convert"
STATIC = ["forecast_paris", "book_flight_lisbon", "convert_currency", "greeting"]
CRITERIA = [
    "tool_trajectory_avg_score",
    "response_match_score",
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
    "safety_v1",
    "per_turn_user_simulator_quality_v1",
]
NEEDS_EXPECTED = {"tool_trajectory_avg_score", "response_match_score", "final_response_match_v2"}
JUDGES_THE_USER = {"per_turn_user_simulator_quality_v1"}
TO_LISBON = {"origin": "BER", "destination": "LIS", "date": "2027-05-12"}
STARTING_PROMPT = "Please book me the cheapest flight from Berlin to Lisbon on 12 May."
HALF_ANSWERED = "convert_currency"  # asks for two currencies; the agent converts into one


@pytest.fixture(scope="module")
def travel() -> ModuleType:
    """``examples/travel/agent.py``, imported from its path (it is not a package)."""
    spec = importlib.util.spec_from_file_location("travel_example_agent", EXAMPLE_DIR / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Chat:
    """A conversation with the agent in one session, as the runner would hold it."""

    def __init__(self, travel: ModuleType, user_id: str = "u-17", **state: Any) -> None:
        self.agent = travel.travel_agent
        self.session = Session("travel_assistant", user_id, "s-1", state=dict(state))

    def say(self, message: str) -> TurnResult:
        result = asyncio.run(self.agent(message, self.session))
        assert isinstance(result, TurnResult)
        return result


def tools(result: TurnResult) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.args) for call in result.tool_calls]


def results(path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {case["eval_id"]: case for case in data["eval_case_results"]}


def metrics(case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["metric_name"]: m for m in case["overall_eval_metric_results"]}


def simulator_requests(server: JudgeServer) -> list[dict[str, Any]]:
    """The simulated user's requests: the ones that ask for no JSON schema."""
    return [r.body for r in server.completions if not r.body.get("response_format")]


# --- end to end through the CLI -----------------------------------------------------------------


def test_the_readme_run_fails_only_the_half_answered_conversion_and_runs_every_criterion(
    run_cli: RunCli, example: Example, tmp_path: Path, judge_env: JudgeServer
) -> None:
    """The agent converts into the first currency asked for and forgets the second: the one
    failure the example is there to show, caught by the trajectory (the stub judge approves
    everything, so every judged criterion passes here)."""
    out = tmp_path / "results.json"
    run = run_cli("eval", example.evalset, "--agent", AGENT, "--output", out)

    assert run.code == 1, run.output
    assert "4 passed, 1 failed, 0 not evaluated" in run.out
    cases = results(out)
    assert list(cases) == [*STATIC, SCENARIO]
    for eval_id, case in cases.items():
        applies_not = NEEDS_EXPECTED if eval_id == SCENARIO else JUDGES_THE_USER
        assert sorted(case["assay"]["not_applicable"]) == sorted(applies_not), eval_id
        for name, metric in metrics(case).items():
            if name not in CRITERIA:
                continue
            expected = EvalStatus.NOT_EVALUATED if name in applies_not else EvalStatus.PASSED
            if (eval_id, name) == (HALF_ANSWERED, "tool_trajectory_avg_score"):
                expected = EvalStatus.FAILED
            assert metric["eval_status"] == expected, (eval_id, name)
            assert (metric.get("score") is None) == (name in applies_not), (eval_id, name)
        assert sorted(n for n in metrics(case) if n in CRITERIA) == sorted(CRITERIA)
    assert cases[HALF_ANSWERED]["final_eval_status"] == EvalStatus.FAILED
    [row] = cases[HALF_ANSWERED]["eval_metric_result_per_invocation"]
    assert row["actual_invocation"]["final_response"]["parts"][0]["text"] == (
        "100 EUR is about 96 CHF at today's rate."
    )
    assert "sk-test-not-a-real-key" not in run.output + out.read_text(encoding="utf-8")


def test_the_scenario_is_played_by_the_simulated_user_until_it_writes_the_stop_signal(
    run_cli: RunCli, example: Example, tmp_path: Path, judge_env: JudgeServer
) -> None:
    saved = tmp_path / "traces.json"
    before = len(simulator_requests(judge_env))
    run = run_cli("eval", example.evalset, "--agent", AGENT, "--save-traces", saved)

    assert run.code == 1, run.output  # the half-answered conversion
    conversation = json.loads(saved.read_text(encoding="utf-8"))[SCENARIO]
    users = [inv["user_content"]["parts"][0]["text"] for inv in conversation]
    answers = [inv["final_response"]["parts"][0]["text"] for inv in conversation]
    assert users == [STARTING_PROMPT, "How much is that in pounds?"]
    assert answers == [
        "Done: FR1234 from Berlin to Lisbon on 12 May at 18:45 is booked for 89 EUR. "
        "Your confirmation code is QX7P2L.",
        "89 EUR is about 75.65 GBP at today's rate.",
    ]
    # Two LLM calls for the two messages after the starting prompt; the second was the stop
    # signal, so the conversation ended with two turns, below the limit of three messages.
    asked = simulator_requests(judge_env)[before:]
    assert [approve(body) for body in asked] == ["How much is that in pounds?", "</finished>"]
    assert "</finished>" in asked[-1]["messages"][-1]["content"]


def test_mocked_tools_answer_from_the_eval_set_and_give_the_same_result(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    real, mocked = tmp_path / "real.json", tmp_path / "mocked.json"
    run_cli("eval", example.evalset, "--agent", AGENT, "--output", real)
    run = run_cli("eval", example.evalset, "--agent", AGENT, "--mock-tools", "--output", mocked)

    assert run.code == 1, run.output
    assert "4 passed, 1 failed, 0 not evaluated" in run.out

    def verdicts(path: Path) -> dict[str, list[tuple[str, Any]]]:
        return {
            eval_id: [
                (m["metric_name"], m["eval_status"]) for m in case["overall_eval_metric_results"]
            ]
            for eval_id, case in results(path).items()
        }

    def replies(path: Path) -> dict[str, list[Any]]:
        return {
            eval_id: [
                row["actual_invocation"]["final_response"]
                for row in case["eval_metric_result_per_invocation"]
            ]
            for eval_id, case in results(path).items()
            if eval_id in STATIC
        }

    assert verdicts(mocked) == verdicts(real)
    assert replies(mocked) == replies(real)


def test_mocked_tools_give_the_agent_the_recorded_response_not_the_real_one(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    data = json.loads(example.evalset.read_text(encoding="utf-8"))
    forecast = data["eval_cases"][0]["conversation"][0]["intermediate_data"]
    forecast["tool_responses"][0]["response"] = {"summary": "heavy snow", "high": -2, "low": -9}
    data["eval_cases"] = data["eval_cases"][:1]
    evalset = tmp_path / "snow.evalset.json"
    evalset.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "results.json"

    run = run_cli(
        "eval", evalset, "--config", example.config, "--agent", AGENT, "--mock-tools",
        "--output", out,
    )  # fmt: skip

    [row] = results(out)["forecast_paris"]["eval_metric_result_per_invocation"]
    assert row["actual_invocation"]["final_response"]["parts"][0]["text"] == (
        "Tomorrow in Paris expect heavy snow, with a high of -2°C and a low of -9°C."
    )
    # stderr holds only the progress lines: no warning, no traceback
    assert all(line.startswith("[") for line in run.err.splitlines()), run.err


def test_a_judge_that_rejects_everything_fails_every_judged_criterion_where_it_applies(
    run_cli: RunCli, example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "results.json"
    with JudgeServer(reply=reject) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = run_cli("eval", example.evalset, "--agent", AGENT, "--output", out)

    assert run.code == 1, run.output
    assert "0 passed, 5 failed, 0 not evaluated" in run.out
    judged = set(CRITERIA) - {"tool_trajectory_avg_score", "response_match_score"}
    for eval_id, case in results(out).items():
        for name, metric in metrics(case).items():
            if name in case["assay"]["not_applicable"]:
                assert metric["eval_status"] == EvalStatus.NOT_EVALUATED
            elif name in judged:
                assert metric["eval_status"] == EvalStatus.FAILED, (eval_id, name)
            elif (eval_id, name) == (HALF_ANSWERED, "tool_trajectory_avg_score"):
                assert metric["eval_status"] == EvalStatus.FAILED
            elif name in CRITERIA:  # the deterministic ones still pass
                assert metric["eval_status"] == EvalStatus.PASSED, (eval_id, name)


# --- the tools ----------------------------------------------------------------------------------


def test_the_forecast_tool_reads_its_table_in_either_unit(travel: ModuleType) -> None:
    assert travel.get_forecast("Paris", 1, "metric") == {
        "summary": "light rain",
        "high": 14,
        "low": 8,
    }
    assert travel.get_forecast("Paris", 1, "imperial") == {
        "summary": "light rain",
        "high": 57,
        "low": 46,
    }
    assert "error" in travel.get_forecast("Paris", 9)
    assert "error" in travel.get_forecast("Atlantis")


def test_the_flight_search_keeps_direct_flights_only_when_asked(travel: ModuleType) -> None:
    direct = travel.search_flights("BER", "LIS", "2027-05-12", {"direct_only": True})
    every = travel.search_flights("BER", "LIS", "2027-05-12", {"direct_only": False})

    assert [f["id"] for f in direct["flights"]] == ["TP551", "FR1234"]
    assert [f["id"] for f in every["flights"]] == ["TP551", "LH1166", "FR1234"]
    assert travel.search_flights("PAR", "LIS", "2027-05-12", {})["flights"] == []


def test_fares_and_bookings_know_their_flights(travel: ModuleType) -> None:
    assert travel.get_fare("FR1234") == {"flight_id": "FR1234", "price": 89, "currency": "EUR"}
    booked = travel.book_flight("FR1234", [{"name": "Ada Lovelace", "seat": None}])
    assert booked == {
        "confirmation": "QX7P2L",
        "flight_id": "FR1234",
        "passengers": ["Ada Lovelace"],
    }
    assert "error" in travel.get_fare("XX1")
    assert "error" in travel.book_flight("XX1", [])


def test_currency_conversion_goes_through_the_euro(travel: ModuleType) -> None:
    assert travel.convert_currency(100, **{"from": "EUR", "to": "JPY"}) == {
        "amount": 16250.4,
        "currency": "JPY",
    }
    assert travel.convert_currency(108, **{"from": "USD", "to": "EUR"})["amount"] == 100.0


def test_every_tool_is_declared_to_the_judges(travel: ModuleType) -> None:
    declared = {d["name"]: d for d in travel.TOOL_DECLARATIONS}
    assert set(declared) == set(travel.TOOLS)
    assert declared["convert_currency"]["parameters"]["required"] == ["amount", "from", "to"]
    assert all(d["description"] for d in declared.values())
    assert travel.travel_agent.name == "travel_assistant"
    assert "travel assistant" in travel.travel_agent.instructions


# --- the policy ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "calls"),
    [
        ("What's the weather in Paris tomorrow?", [("get_forecast", {"city": "Paris", "days": 1})]),
        ("Will it rain in London the day after tomorrow?", [("get_forecast", {"days": 2})]),
        ("forecast for lisbon in 2 days please", [("get_forecast", {"city": "Lisbon"})]),
        ("I'd like to fly to Lisbon from Berlin on May 12th", [("search_flights", TO_LISBON)]),
        ("Any flights Berlin -> Lisbon, 12th of May?", [("search_flights", TO_LISBON)]),
        ("flights from berlin to lisbon on 12 may 2027", [("search_flights", TO_LISBON)]),
        (
            "Can you find flights to Paris from Berlin tomorrow",
            [("search_flights", {"origin": "BER", "destination": "PAR", "date": "2027-05-02"})],
        ),
        ("How much is 100 euros in yen?", [("convert_currency", {"amount": 100})]),
        ("convert $250 to EUR", [("convert_currency", {"from": "USD", "to": "EUR"})]),
        ("How many yen is 100 euros?", [("convert_currency", {"from": "EUR", "to": "JPY"})]),
        ("what's 1,000 JPY in british pounds", [("convert_currency", {"amount": 1000})]),
        ("Hello!", []),
        ("thanks, bye", []),
    ],
)
def test_varied_phrasings_lead_to_the_right_tool(
    travel: ModuleType, message: str, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    made = tools(Chat(travel).say(message))

    assert [name for name, _ in made] == [name for name, _ in calls]
    for (_, args), (_, expected) in zip(made, calls, strict=True):
        assert expected.items() <= args.items()


def test_the_static_conversations_get_the_recorded_answers_but_one(
    travel: ModuleType, example: Example
) -> None:
    data = json.loads(example.evalset.read_text(encoding="utf-8"))
    for case in data["eval_cases"]:
        if "conversation" not in case or case["eval_id"] == HALF_ANSWERED:
            continue
        chat = Chat(travel, **case.get("session_input", {}).get("state", {}))
        for invocation in case["conversation"]:
            result = chat.say(invocation["user_content"]["parts"][0]["text"])
            assert result.final_response == invocation["final_response"]["parts"][0]["text"]
            expected = invocation["intermediate_data"]["tool_uses"]
            assert tools(result) == [(use["name"], use["args"]) for use in expected]


def test_the_half_answered_conversion_makes_the_first_of_the_two_expected_calls(
    travel: ModuleType, example: Example
) -> None:
    data = json.loads(example.evalset.read_text(encoding="utf-8"))
    [case] = [c for c in data["eval_cases"] if c["eval_id"] == HALF_ANSWERED]
    [invocation] = case["conversation"]
    result = Chat(travel).say(invocation["user_content"]["parts"][0]["text"])
    expected = [(u["name"], u["args"]) for u in invocation["intermediate_data"]["tool_uses"]]
    assert len(expected) == 2
    assert tools(result) == expected[:1]


def test_state_carries_the_search_and_the_fare_across_turns(travel: ModuleType) -> None:
    chat = Chat(travel)
    chat.say("Find me a flight from Berlin to Lisbon on 12 May.")
    booked = chat.say("Book the earliest one")
    converted = chat.say("What is that in dollars?")

    assert tools(booked)[-1] == (
        "book_flight",
        {"flight_id": "TP551", "passengers": [{"name": "Ada Lovelace", "seat": None}]},
    )
    assert tools(converted) == [("convert_currency", {"amount": 129, "from": "EUR", "to": "USD"})]
    assert converted.final_response == "129 EUR is about 139.32 USD at today's rate."


def test_missing_details_are_asked_for_and_completed_in_later_messages(
    travel: ModuleType,
) -> None:
    chat = Chat(travel)
    first = chat.say("I want to fly to Lisbon")
    second = chat.say("From Berlin")
    third = chat.say("on the 12th of May")

    assert first.final_response is not None and second.final_response is not None
    assert "where from and on which date" in first.final_response
    assert "on which date" in second.final_response and "where from" not in second.final_response
    assert tools(first) == tools(second) == []
    assert tools(third) == [
        (
            "search_flights",
            {
                "origin": "BER",
                "destination": "LIS",
                "date": "2027-05-12",
                "filters": {"direct_only": True, "cabin": "economy"},
            },
        )
    ]


def test_an_ambiguous_booking_and_a_missing_city_are_questions_not_guesses(
    travel: ModuleType,
) -> None:
    chat = Chat(travel)
    chat.say("Find me a flight from Berlin to Lisbon on 12 May.")
    which = chat.say("Book one for me")
    picked = chat.say("FR1234 please")
    weather = Chat(travel)
    city = weather.say("What's the weather like?")
    answered = weather.say("Lisbon")

    assert which.final_response == (
        "Which one shall I book: TP551 at 07:10 for 129 EUR or FR1234 at 18:45 for 89 EUR?"
    )
    assert tools(which) == []
    assert [name for name, _ in tools(picked)] == ["get_fare", "book_flight"]
    assert city.final_response is not None and "Which city" in city.final_response
    assert tools(answered) == [("get_forecast", {"city": "Lisbon", "days": 0, "units": "metric"})]


def test_a_tool_that_fails_is_reported_politely_and_nonsense_gets_help(
    travel: ModuleType,
) -> None:
    async def broken(name: str, args: dict[str, Any], function: Any) -> Any:
        return {"error": f"no recorded response for tool {name!r}"}

    chat = Chat(travel)
    chat.session.tool_runner = broken
    failed = chat.say("Book me the cheapest flight from Berlin to Lisbon on 12 May")
    lost = Chat(travel).say("purple elephants")
    stranger = Chat(travel, user_id="u-99")
    stranger.say("Find me a flight from Berlin to Lisbon on 12 May.")
    refused = stranger.say("Book the cheapest one")

    assert failed.final_response is not None and failed.final_response.startswith("Sorry")
    assert lost.final_response is not None and "I can check forecasts" in lost.final_response
    assert refused.final_response is not None and "profile" in refused.final_response
    assert tools(refused) == []
