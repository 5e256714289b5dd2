"""JSONL eval sets: one case per line, an optional header line, errors that name the line."""

from __future__ import annotations

import json
from pathlib import Path

from assay.evalset import EvalSet, load_eval_set, write_eval_set

from ._helpers import RICH, WriteFile, case, invocation, paths_and_messages


def test_written_jsonl_is_a_header_line_then_one_case_per_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    write_eval_set(EvalSet.model_validate(RICH), path)

    lines = path.read_text(encoding="utf-8").splitlines()

    assert len(lines) == 3
    assert json.loads(lines[0]) == {
        "eval_set_id": "rich",
        "name": "Rich set",
        "description": RICH["description"],
        "creation_timestamp": 1712345678.25,
    }
    assert [json.loads(line)["eval_id"] for line in lines[1:]] == ["static", "simulated"]


def test_jsonl_with_a_header_line_takes_the_set_id_name_and_description_from_it(
    write_file: WriteFile,
) -> None:
    lines = [{"evalSetId": "named", "name": "N", "description": "D"}, case("a"), case("b")]
    path = write_file("cases.jsonl", "\n".join(json.dumps(line) for line in lines))

    loaded = load_eval_set(path)

    assert loaded.format == "jsonl"
    assert (loaded.eval_set.eval_set_id, loaded.eval_set.name) == ("named", "N")
    assert loaded.eval_set.description == "D"
    assert [c.eval_id for c in loaded.eval_set.eval_cases] == ["a", "b"]


def test_jsonl_without_a_header_line_is_named_after_the_file(write_file: WriteFile) -> None:
    path = write_file("smoke.jsonl", "\n\n".join(json.dumps(case(i)) for i in "abc") + "\n\n")

    loaded = load_eval_set(path)

    assert loaded.eval_set.eval_set_id == "smoke"
    assert loaded.eval_set.name is None
    assert [c.eval_id for c in loaded.eval_set.eval_cases] == ["a", "b", "c"]


def test_jsonl_error_names_the_line_and_the_path_in_the_case(write_file: WriteFile) -> None:
    bad = case("b", conversation=[{"user_content": {"parts": [{"txt": "x"}]}}])
    text = "\n".join([json.dumps({"eval_set_id": "s"}), json.dumps(case("a")), json.dumps(bad)])
    path = write_file("cases.jsonl", text)

    assert paths_and_messages(path) == [
        (
            "line 3: conversation[0].user_content.parts[0]",
            "unknown key 'txt' (did you mean 'text'?)",
        )
    ]


def test_jsonl_reports_every_bad_line_with_its_own_number(write_file: WriteFile) -> None:
    text = "\n".join(
        [json.dumps(case("a")), "", '{"eval_id": "b", ', "[1, 2]", json.dumps({"eval_id": "e"})]
    )
    path = write_file("cases.jsonl", text)

    assert paths_and_messages(path) == [
        ("line 3", "malformed JSON: EOF while parsing a value at column 17"),
        ("line 4", "expected an eval case object; got [1, 2]"),
        (
            "line 5",
            "has neither 'conversation' nor 'conversation_scenario'; give exactly one "
            "(a static conversation, or a scenario for the user simulator)",
        ),
    ]


def test_jsonl_header_after_the_first_line_is_an_error(write_file: WriteFile) -> None:
    text = "\n".join([json.dumps(case("a")), json.dumps({"eval_set_id": "late"})])
    path = write_file("cases.jsonl", text)

    assert paths_and_messages(path) == [
        (
            "line 2",
            "expected an eval case (with 'eval_id'); only the first line may be a header with "
            "keys 'eval_set_id', 'name', 'description', 'creation_timestamp'",
        )
    ]


def test_jsonl_header_with_a_bad_value_names_its_line(write_file: WriteFile) -> None:
    text = "\n".join(["", json.dumps({"eval_set_id": 7}), json.dumps(case("a"))])
    path = write_file("cases.jsonl", text)

    assert paths_and_messages(path) == [("line 2: eval_set_id", "expected a string; got 7")]


def test_jsonl_case_missing_its_id_is_reported_at_the_line(write_file: WriteFile) -> None:
    path = write_file("cases.jsonl", json.dumps({"conversation": [invocation()]}))

    assert paths_and_messages(path) == [("line 1", "missing required key 'eval_id'")]


def test_empty_jsonl_file_is_an_error(write_file: WriteFile) -> None:
    path = write_file("cases.jsonl", "\n  \n")

    assert paths_and_messages(path) == [("", "empty file; expected one eval case object per line")]
