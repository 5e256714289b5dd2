"""What kind of file a document is, by its top-level keys, and the line for one passed where
another kind belongs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _support import EXAMPLE_DIR

from assay._internal.file_kinds import kind_of, wrong_kind


def example(name: str) -> Any:
    return json.loads((EXAMPLE_DIR / name).read_text(encoding="utf-8"))


SESSION = {"id": "s", "app_name": "trip", "user_id": "u", "state": {}, "events": []}
RESULT = {"eval_set_result_id": "r", "eval_set_id": "s", "eval_case_results": []}


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (example("travel.evalset.json"), "eval set"),
        (example("traces.json"), "traces"),
        (example("test_config.json"), "config"),
        (SESSION, "session"),
        (RESULT, "eval set result"),
        ([RESULT, RESULT], "eval set result"),
        ({"eval_set": "x.evalset.json", "traces": "t.json", "labels": []}, "labels"),
        ({"eval_set_id": "s", "eval_case": []}, None),  # a misspelt eval set: its own errors
        ({"a": [1, 2]}, None),
        ([{"query": "hi"}], None),  # ADK's legacy turns
        ("text", None),
    ],
)
def test_a_document_is_known_by_its_top_level_keys(data: Any, kind: str | None) -> None:
    assert kind_of(data) == kind


def test_a_file_of_the_kind_expected_gets_no_line() -> None:
    assert wrong_kind(example("travel.evalset.json"), "EVALSET") is None
    assert wrong_kind(example("traces.json"), "--traces") is None
    assert wrong_kind(RESULT, "--traces") is None
    assert wrong_kind({"eval_set_id": "s"}, "EVALSET") is None  # not known: schema errors say


def test_another_kind_says_what_it_is_and_where_it_goes() -> None:
    assert wrong_kind(RESULT, "EVALSET") == (
        "an ADK eval set result (.evalset_result.json), not an eval set: pass it as --traces "
        "(its actual invocations are read)"
    )
    assert wrong_kind(example("test_config.json"), "--traces") == (
        "an EvalConfig (criteria), not a traces file: pass it as --config FILE"
    )
    assert wrong_kind(SESSION, "--traces") == (
        "ADK's initial session (app_name, user_id, state), read automatically with the legacy "
        ".test.json files in its folder, not a traces file: pass the .test.json file beside it "
        "as EVALSET"
    )
