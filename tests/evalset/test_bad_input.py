"""Bad eval-set files: every problem names the file, the JSON path and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._helpers import WriteFile, case, eval_set, invocation, load_problems, paths_and_messages


def test_malformed_json_names_the_line_and_column(write_file: WriteFile) -> None:
    path = write_file("bad.json", '{\n  "eval_set_id": "s",\n  "eval_cases": [,]\n}')

    assert paths_and_messages(path) == [("", "malformed JSON: expected value at line 3 column 18")]


def test_malformed_yaml_names_the_line_and_column(write_file: WriteFile) -> None:
    path = write_file("bad.yaml", "eval_set_id: s\neval_cases: [\n  - a\n")

    ((where, message),) = paths_and_messages(path)
    assert where == ""
    assert message.startswith("malformed YAML at line 3 column 3: ")


def test_eval_cases_given_as_a_string_says_a_list_was_expected(write_file: WriteFile) -> None:
    path = write_file("bad.json", {"eval_set_id": "s", "eval_cases": "case-1"})

    assert paths_and_messages(path) == [("eval_cases", 'expected a list; got "case-1"')]


def test_missing_required_key_is_reported_at_the_object_that_lacks_it(
    write_file: WriteFile,
) -> None:
    path = write_file("bad.json", eval_set({"conversation": [{"final_response": {}}]}))

    assert paths_and_messages(path) == [
        ("eval_cases[0]", "missing required key 'eval_id'"),
        ("eval_cases[0].conversation[0]", "missing required key 'user_content'"),
    ]


def test_unknown_key_is_reported_with_its_path_and_a_hint(write_file: WriteFile) -> None:
    bad = case(conversation=[{"user_content": {"role": "user", "parts": [{"txt": "hi"}]}}])
    path = write_file("bad.json", eval_set(bad))

    assert paths_and_messages(path) == [
        (
            "eval_cases[0].conversation[0].user_content.parts[0]",
            "unknown key 'txt' (did you mean 'text'?)",
        )
    ]


def test_unknown_camel_case_key_is_reported_as_written_with_a_camel_case_hint(
    write_file: WriteFile,
) -> None:
    bad = {"evalId": "c", "conversation": [{"userContent": {"parts": []}, "finalRespons": {}}]}
    path = write_file("bad.json", {"evalSetId": "s", "evalCases": [bad]})

    assert paths_and_messages(path) == [
        (
            "evalCases[0].conversation[0]",
            "unknown key 'finalRespons' (did you mean 'finalResponse'?)",
        )
    ]


def test_unknown_key_at_the_top_of_an_eval_set_is_an_error(write_file: WriteFile) -> None:
    path = write_file("bad.json", eval_set(case(), eval_set_name="x"))

    assert paths_and_messages(path) == [
        ("", "unknown key 'eval_set_name' (did you mean 'eval_set_id'?)")
    ]


def test_conversation_and_scenario_together_are_reported_at_the_case(write_file: WriteFile) -> None:
    scenario = {"starting_prompt": "a", "conversation_plan": "b"}
    path = write_file("bad.json", eval_set(case(), case("d", conversation_scenario=scenario)))

    assert paths_and_messages(path) == [
        (
            "eval_cases[1]",
            "has both 'conversation' and 'conversation_scenario'; give exactly one "
            "(a static conversation, or a scenario for the user simulator)",
        )
    ]


def test_wrong_type_inside_a_union_names_every_accepted_type(write_file: WriteFile) -> None:
    scenario = {"starting_prompt": "a", "conversation_plan": "b", "user_persona": 5}
    path = write_file("bad.json", eval_set({"eval_id": "c", "conversation_scenario": scenario}))

    assert paths_and_messages(path) == [
        (
            "eval_cases[0].conversation_scenario.user_persona",
            "expected an object or a string; got 5",
        )
    ]


def test_every_problem_in_a_file_is_reported_at_once(write_file: WriteFile) -> None:
    cases = [
        case("a", creation_timestamp="yesterday"),
        {
            "eval_id": 3,
            "conversation": [invocation(intermediate_data={"tool_uses": [{"nme": "f"}]})],
        },
    ]
    path = write_file("bad.json", eval_set(*cases))

    assert paths_and_messages(path) == [
        ("eval_cases[0].creation_timestamp", 'expected a number; got "yesterday"'),
        ("eval_cases[1].eval_id", "expected a string; got 3"),
        (
            "eval_cases[1].conversation[0].intermediate_data.tool_uses[0]",
            "unknown key 'nme' (did you mean 'name'?)",
        ),
    ]


def test_missing_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "nope.evalset.json"

    assert paths_and_messages(path) == [("", "file not found")]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_directory_is_reported(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"folder{suffix}"
    path.mkdir()

    assert paths_and_messages(path) == [("", "is a directory, expected a file")]


def test_empty_list_is_reported(write_file: WriteFile) -> None:
    path = write_file("empty.test.json", [])

    ((where, message),) = paths_and_messages(path)
    assert where == ""
    assert message.startswith("expected an eval set object with 'eval_set_id' and 'eval_cases'")
    assert message.endswith("; got an empty list")


def test_list_of_non_objects_names_each_bad_item(write_file: WriteFile) -> None:
    path = write_file("bad.test.json", [{"query": "q"}, "second", 3])

    expected = (
        "expected an object (a legacy turn with 'query', or a named case with 'name' and 'data')"
    )
    assert paths_and_messages(path) == [
        ("[1]", f'{expected}; got "second"'),
        ("[2]", f"{expected}; got 3"),
    ]


@pytest.mark.parametrize(
    ("text", "got"),
    [("5", "a number (5)"), ('"set"', 'a string ("set")'), ("null", "null (is the file empty?)")],
)
def test_top_level_value_that_is_neither_object_nor_list_is_reported(
    text: str, got: str, write_file: WriteFile
) -> None:
    path = write_file("bad.json", text)

    ((where, message),) = paths_and_messages(path)
    assert (where, message.rsplit("; got ", 1)[1]) == ("", got)


def test_empty_yaml_file_is_reported_as_null(write_file: WriteFile) -> None:
    path = write_file("empty.yaml", "")

    ((_, message),) = paths_and_messages(path)
    assert message.endswith("; got null (is the file empty?)")


def test_problem_text_starts_with_the_file_and_path(write_file: WriteFile) -> None:
    path = write_file("bad.json", {"eval_set_id": "s", "eval_cases": "x"})

    (problem,) = load_problems(path)

    assert str(problem) == f'{path}: eval_cases: expected a list; got "x"'
