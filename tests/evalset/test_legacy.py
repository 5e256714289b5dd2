"""ADK's legacy per-turn and named-case lists: conversion, unknown keys, initial sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema

from assay.evalset import (
    Content,
    FunctionCall,
    IntermediateData,
    Invocation,
    Part,
    load_eval_set,
    write_eval_set,
)

from ._helpers import WriteFile, load_problems, paths_and_messages

TURNS: list[dict[str, Any]] = [
    {"query": "hello"},
    {
        "query": "switch it on",
        "expected_tool_use": [
            {"tool_name": "find", "tool_input": {"room": "hall"}, "mock_tool_output": "id-3"},
            {"tool_name": "switch", "tool_input": None},
            {"tool_name": "log", "tool_input": {}},
        ],
        "expected_intermediate_agent_responses": [{"author": "helper", "text": "looking"}],
        "reference": "done",
    },
    {"query": "bye", "expected_tool_use": [], "reference": None},
]

SESSION = {"app_name": "home", "user_id": "u1", "state": {"mode": "eco"}}


def test_per_turn_list_becomes_one_case_named_after_the_file(write_file: WriteFile) -> None:
    path = write_file("home.test.json", TURNS)

    loaded = load_eval_set(path)

    assert loaded.format == "legacy_turns"
    assert (loaded.eval_set.eval_set_id, loaded.eval_set.name) == ("home", "home")
    (case,) = loaded.eval_set.eval_cases
    assert case.eval_id == "home"
    assert case.session_input is None
    assert [inv.invocation_id for inv in case.conversation or []] == ["home-0", "home-1", "home-2"]


def test_per_turn_fields_become_invocations(write_file: WriteFile) -> None:
    (case,) = load_eval_set(write_file("home.test.json", TURNS)).eval_set.eval_cases

    first, second, third = case.conversation or []
    assert second == Invocation(
        invocation_id="home-1",
        user_content=Content(role="user", parts=[Part(text="switch it on")]),
        final_response=Content(role="model", parts=[Part(text="done")]),
        intermediate_data=IntermediateData(
            tool_uses=[
                FunctionCall(name="find", args={"room": "hall"}),
                FunctionCall(name="switch", args=None),
                FunctionCall(name="log", args={}),
            ],
            intermediate_responses=[("helper", [Part(text="looking")])],
        ),
    )
    assert first.final_response == Content(role="model", parts=[Part(text="")])
    assert first.tool_calls() == []
    assert third.final_response == Content(role="model", parts=[Part(text=None)])


def test_named_case_list_gives_one_case_per_name(write_file: WriteFile) -> None:
    data = [
        {"name": "first", "data": TURNS[:1], "initial_session": SESSION},
        {"name": "second", "data": TURNS[1:], "initial_session": {}},
    ]
    path = write_file("cases.evalset.json", data)

    loaded = load_eval_set(path)

    assert loaded.format == "legacy_cases"
    assert loaded.eval_set.eval_set_id == "cases"
    first, second = loaded.eval_set.eval_cases
    assert first.eval_id == "first"
    assert first.session_input is not None
    assert first.session_input.model_dump(exclude_none=True) == SESSION
    assert second.session_input is None
    assert [inv.invocation_id for inv in second.conversation or []] == ["second-0", "second-1"]


def test_named_case_list_converts_as_adk_converts_it(write_file: WriteFile) -> None:
    data: list[dict[str, Any]] = [
        {"name": "first", "data": TURNS, "initial_session": SESSION},
        {"name": "second", "data": TURNS[:1]},
    ]
    ours = load_eval_set(write_file("cases.json", data)).eval_set
    adk = convert_eval_set_to_pydantic_schema("cases", data)

    skip = {"invocation_id", "creation_timestamp"}
    for our_case, adk_case in zip(ours.eval_cases, adk.eval_cases, strict=True):
        assert our_case.eval_id == adk_case.eval_id
        assert _dump(our_case.session_input) == _dump(adk_case.session_input)
        pairs = zip(our_case.conversation or [], adk_case.conversation or [], strict=True)
        for our_inv, adk_inv in pairs:
            assert our_inv.model_dump(mode="json", exclude=skip) == adk_inv.model_dump(
                mode="json", exclude=skip
            )


def _dump(model: Any) -> Any:
    return None if model is None else model.model_dump(mode="json")


def test_unknown_keys_in_a_named_case_list_are_ignored_with_a_warning_each(
    write_file: WriteFile,
) -> None:
    data = [
        {
            "name": "c",
            "initial_state": {"session": {}},
            "data": [
                {"query": "a", "refernce": "typo"},
                {
                    "query": "b",
                    "expected_tool_use": [{"tool_name": "t", "tool_input": {}, "toolInput": 1}],
                    "expected_intermediate_agent_responses": [
                        {"author": "x", "text": "y", "when": 2}
                    ],
                },
            ],
            "initial_session": {"app_name": "a", "user_id": "u", "sesion_id": "s"},
        }
    ]
    path = write_file("cases.json", data)

    loaded = load_eval_set(path)

    ignored = "ignored (ADK ignores it too)"
    assert [(w.file, w.path, w.message) for w in loaded.warnings] == [
        (str(path), "[0].initial_state", f"unknown key 'initial_state' {ignored}"),
        (str(path), "[0].data[0].refernce", f"unknown key 'refernce' {ignored}"),
        (
            str(path),
            "[0].data[1].expected_tool_use[0].toolInput",
            f"unknown key 'toolInput' {ignored}",
        ),
        (
            str(path),
            "[0].data[1].expected_intermediate_agent_responses[0].when",
            f"unknown key 'when' {ignored}",
        ),
        (str(path), "[0].initial_session.sesion_id", f"unknown key 'sesion_id' {ignored}"),
    ]
    (case,) = loaded.eval_set.eval_cases
    assert (case.conversation or [])[0].final_response == Content.from_text("")


def test_unknown_keys_in_a_per_turn_list_are_ignored_with_a_warning_each(
    write_file: WriteFile,
) -> None:
    path = write_file("t.test.json", [{"query": "a", "initial_state": {}}, {"query": "b", "x": 1}])

    loaded = load_eval_set(path)

    assert [w.path for w in loaded.warnings] == ["[0].initial_state", "[1].x"]
    assert len(loaded.eval_set.eval_cases[0].conversation or []) == 2


def test_mock_tool_output_is_a_known_legacy_key(write_file: WriteFile) -> None:
    assert load_eval_set(write_file("t.test.json", TURNS)).warnings == ()


def test_per_turn_list_takes_the_session_from_initial_session_json_beside_it(
    write_file: WriteFile,
) -> None:
    path = write_file("agent/t.test.json", TURNS)
    write_file(
        "agent/initial.session.json",
        {**SESSION, "id": "x", "events": [], "last_update_time": 1.5, "lastUpdateTime": 1.5},
    )

    loaded = load_eval_set(path)

    (case,) = loaded.eval_set.eval_cases
    assert case.session_input is not None
    assert case.session_input.model_dump(exclude_none=True) == SESSION
    assert loaded.warnings == ()


def test_unknown_key_in_initial_session_json_is_a_warning_naming_that_file(
    write_file: WriteFile,
) -> None:
    path = write_file("agent/t.test.json", TURNS)
    session = write_file("agent/initial.session.json", {**SESSION, "userId": "u2"})

    loaded = load_eval_set(path)

    assert [(w.file, w.path) for w in loaded.warnings] == [(str(session), "userId")]


def test_empty_initial_session_json_means_no_session(write_file: WriteFile) -> None:
    path = write_file("agent/t.test.json", TURNS)
    write_file("agent/initial.session.json", {})

    assert load_eval_set(path).eval_set.eval_cases[0].session_input is None


def test_malformed_initial_session_json_is_an_error_naming_that_file(
    write_file: WriteFile,
) -> None:
    path = write_file("agent/t.test.json", TURNS)
    session = write_file("agent/initial.session.json", '{"app_name": ')

    (problem,) = load_problems(path)
    assert problem.file == str(session)
    assert problem.message.startswith("malformed JSON: EOF while parsing a value at line 1")


def test_initial_session_json_with_a_wrong_type_is_an_error_naming_that_file(
    write_file: WriteFile,
) -> None:
    path = write_file("agent/t.test.json", TURNS)
    session = write_file("agent/initial.session.json", {"app_name": "a", "state": []})

    assert [(p.file, p.path, p.message) for p in load_problems(path)] == [
        (str(session), "state", "expected an object; got []")
    ]


def test_legacy_turn_without_a_query_is_an_error_at_the_turn(write_file: WriteFile) -> None:
    path = write_file("t.test.json", [{"query": "ok"}, {"reference": "r"}])

    assert paths_and_messages(path) == [("[1]", "missing required key 'query'")]


def test_legacy_tool_use_without_tool_input_is_an_error(write_file: WriteFile) -> None:
    path = write_file("t.test.json", [{"query": "q", "expected_tool_use": [{"tool_name": "t"}]}])

    assert paths_and_messages(path) == [
        ("[0].expected_tool_use[0]", "missing required key 'tool_input'")
    ]


def test_named_case_with_bad_turns_names_the_case_and_turn(write_file: WriteFile) -> None:
    data = [{"name": "c", "data": [{"query": "q", "expected_tool_use": "find"}]}]
    path = write_file("cases.json", data)

    assert paths_and_messages(path) == [
        ("[0].data[0].expected_tool_use", 'expected a list; got "find"')
    ]


def test_named_case_without_data_is_an_error(write_file: WriteFile) -> None:
    path = write_file("cases.json", [{"name": "c"}])

    assert paths_and_messages(path) == [("[0]", "missing required key 'data'")]


def test_turn_with_a_stray_name_key_is_still_read_as_a_turn(write_file: WriteFile) -> None:
    path = write_file("t.test.json", [{"query": "q", "name": "greeting"}])

    loaded = load_eval_set(path)

    assert loaded.format == "legacy_turns"
    assert [w.path for w in loaded.warnings] == ["[0].name"]


def test_legacy_file_written_back_is_an_eval_set_file(
    write_file: WriteFile, tmp_path: Path
) -> None:
    original = load_eval_set(write_file("t.test.json", TURNS)).eval_set
    out = tmp_path / "t.evalset.json"

    write_eval_set(original, out)

    assert json.loads(out.read_text())["eval_cases"][0]["eval_id"] == "t"
    assert load_eval_set(out).format == "evalset"
    assert load_eval_set(out).eval_set == original
