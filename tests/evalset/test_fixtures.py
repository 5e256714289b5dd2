"""Every real ADK eval-set file in tests/fixtures/adk loads, and as google-adk 2.13.0 loads it.

ADK itself reads these files two ways: ``load_eval_set_from_file`` (``adk eval`` / ``adk web``)
for EvalSet objects and lists of named cases, and ``AgentEvaluator``'s conversion for per-turn
``.test.json`` lists (which ``load_eval_set_from_file`` cannot read: KeyError 'data').
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.local_eval_sets_manager import (
    convert_eval_set_to_pydantic_schema,
    load_eval_set_from_file,
)

from assay.evalset import EvalSet, LoadedEvalSet, content_text, load_eval_set, write_eval_set

from ._helpers import FIXTURES

NOT_EVAL_SETS = {"test_config.json", "initial.session.json"}
EVAL_SET_FILES = sorted(path for path in FIXTURES.rglob("*.json") if path.name not in NOT_EVAL_SETS)
IDS = [str(path.relative_to(FIXTURES)) for path in EVAL_SET_FILES]

TRIP_PLANNER = FIXTURES / "tests/integration/fixture/trip_planner_agent"
BRAND_SEARCH = (
    FIXTURES
    / "adk-samples/python/agents/brand-search-optimization/eval/data/eval_data1.evalset.json"
)


def _adk_load(loaded: LoadedEvalSet) -> AdkEvalSet:
    """What ADK loads from the file (with the initial session ADK's tests pass beside it)."""
    path = loaded.path
    if loaded.format != "legacy_turns":
        return load_eval_set_from_file(str(path), path.name)
    session_file = path.parent / "initial.session.json"
    session = json.loads(session_file.read_text()) if session_file.is_file() else {}
    turns = json.loads(path.read_text(encoding="utf-8"))
    return convert_eval_set_to_pydantic_schema(
        str(path), [{"name": str(path), "data": turns, "initial_session": session}]
    )


def _tool_calls(inv: Any) -> list[tuple[str | None, dict[str, Any] | None]]:
    calls = (
        inv.tool_calls()
        if hasattr(inv, "tool_calls")
        else get_all_tool_calls(inv.intermediate_data)
    )
    return [(call.name, call.args) for call in calls]


def _summary(eval_set: EvalSet | AdkEvalSet) -> list[dict[str, Any]]:
    """What must agree with ADK: per case its session, per invocation its texts and tool calls."""
    return [
        {
            "session": case.session_input and case.session_input.model_dump(exclude_none=True),
            "turns": [
                {
                    "user": [part.text for part in inv.user_content.parts or []],
                    "final": inv.final_response
                    and [part.text for part in inv.final_response.parts or []],
                    "tools": _tool_calls(inv),
                }
                for inv in case.conversation or []
            ],
        }
        for case in eval_set.eval_cases
    ]


def _without_ids(data: dict[str, Any]) -> dict[str, Any]:
    """An eval set dump without the ids and timestamps ADK makes up on every load."""
    data = {**data, "eval_set_id": "", "name": "", "creation_timestamp": 0}
    data["eval_cases"] = [
        {
            **case,
            "eval_id": "",
            "creation_timestamp": 0,
            "conversation": [
                {**inv, "invocation_id": "", "creation_timestamp": 0}
                for inv in case["conversation"]
            ],
        }
        for case in data["eval_cases"]
    ]
    return data


def test_fixture_folder_holds_every_eval_set_file() -> None:
    assert len(EVAL_SET_FILES) == 26
    assert (FIXTURES / "README.md").is_file()


@pytest.mark.parametrize("path", EVAL_SET_FILES, ids=IDS)
def test_fixture_loads_with_at_least_one_invocation(path: Path) -> None:
    loaded = load_eval_set(path)

    assert loaded.eval_set.eval_cases
    assert all(case.conversation for case in loaded.eval_set.eval_cases)


@pytest.mark.parametrize("path", EVAL_SET_FILES, ids=IDS)
def test_fixture_gives_the_cases_turns_texts_and_tool_calls_adk_gives(path: Path) -> None:
    loaded = load_eval_set(path)
    adk = _adk_load(loaded)

    assert _summary(loaded.eval_set) == _summary(adk)


@pytest.mark.parametrize("path", EVAL_SET_FILES, ids=IDS)
def test_fixture_equals_adk_load_apart_from_made_up_ids(path: Path) -> None:
    loaded = load_eval_set(path)
    adk = _adk_load(loaded).model_dump(mode="json", exclude_none=True)
    ours = loaded.eval_set.model_dump(mode="json", exclude_none=True)

    if loaded.format == "evalset":
        assert ours == adk
    else:
        assert _without_ids(ours) == _without_ids(adk)


@pytest.mark.parametrize("path", EVAL_SET_FILES, ids=IDS)
@pytest.mark.parametrize("suffix", [".json", ".yaml", ".jsonl"])
def test_fixture_round_trips_through_every_written_format(
    path: Path, suffix: str, tmp_path: Path
) -> None:
    original = load_eval_set(path).eval_set
    out = tmp_path / f"copy{suffix}"

    write_eval_set(original, out)

    assert load_eval_set(out).eval_set == original


def test_eval_set_fixtures_are_read_as_eval_sets_and_lists_as_legacy() -> None:
    formats = {str(p.relative_to(FIXTURES)): load_eval_set(p).format for p in EVAL_SET_FILES}

    assert list(formats.values()).count("evalset") == 13
    assert list(formats.values()).count("legacy_turns") == 12
    assert formats[str(BRAND_SEARCH.relative_to(FIXTURES))] == "legacy_cases"


def test_per_turn_legacy_file_takes_its_session_from_initial_session_json_beside_it() -> None:
    loaded = load_eval_set(TRIP_PLANNER / "trip_inquiry.test.json")

    (case,) = loaded.eval_set.eval_cases
    assert case.session_input is not None
    assert case.session_input.app_name == "trip_planner_agent"
    assert case.session_input.user_id == "test_user"
    assert case.session_input.state == {
        "origin": "San Francisco",
        "interests": "Food, Shopping, Museums",
        "range": "1000 miles",
        "cities": "",
    }
    assert loaded.warnings == ()


def test_per_turn_legacy_ids_are_the_file_stem_and_turn_number() -> None:
    loaded = load_eval_set(TRIP_PLANNER / "trip_inquiry.test.json")

    assert loaded.eval_set.eval_set_id == "trip_inquiry"
    (case,) = loaded.eval_set.eval_cases
    assert case.eval_id == "trip_inquiry"
    assert [inv.invocation_id for inv in case.conversation or []] == [
        "trip_inquiry-0",
        "trip_inquiry-1",
    ]


def test_legacy_fixture_loads_identically_twice_unlike_adk() -> None:
    path = TRIP_PLANNER / "trip_inquiry.test.json"

    assert load_eval_set(path).eval_set == load_eval_set(path).eval_set


def test_brand_search_initial_state_key_is_ignored_with_a_warning() -> None:
    loaded = load_eval_set(BRAND_SEARCH)

    assert [(w.file, w.path, w.message) for w in loaded.warnings] == [
        (
            str(BRAND_SEARCH),
            "[0].initial_state",
            "unknown key 'initial_state' ignored (ADK ignores it too)",
        )
    ]
    (case,) = loaded.eval_set.eval_cases
    assert case.eval_id == "eval_data_set_google_shopping"
    assert case.session_input is None
    assert len(case.conversation or []) == 6


def test_no_other_fixture_has_ignored_keys() -> None:
    with_warnings = [path for path in EVAL_SET_FILES if load_eval_set(path).warnings]

    assert with_warnings == [BRAND_SEARCH]


def test_reference_part_with_null_text_reads_as_empty_response() -> None:
    path = FIXTURES / "tests/integration/fixture/hello_world_agent/roll_die.test.json"

    (case,) = load_eval_set(path).eval_set.eval_cases
    third = (case.conversation or [])[2]
    assert third.final_response is not None
    assert [part.text for part in third.final_response.parts or []] == [None]
    assert content_text(third.final_response) == ""
