"""Writing and reading eval sets in .json, .yaml and .jsonl, and how bad files are reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay._internal.files import parse_yaml
from assay.errors import EvalSetError
from assay.evalset import (
    Content,
    EvalCase,
    EvalSet,
    FunctionCall,
    IntermediateData,
    Invocation,
    Part,
    load_eval_set,
    write_eval_set,
)

from ._helpers import RICH, WriteFile, case, eval_set

FORMATS = [".json", ".yaml", ".yml", ".jsonl"]


@pytest.mark.parametrize("suffix", FORMATS)
def test_write_then_read_gives_an_equal_eval_set(suffix: str, tmp_path: Path) -> None:
    original = EvalSet.model_validate(RICH)
    path = tmp_path / f"rich{suffix}"

    write_eval_set(original, path)
    loaded = load_eval_set(path)

    assert loaded.eval_set == original
    assert loaded.warnings == ()


@pytest.mark.parametrize("suffix", FORMATS)
def test_round_trip_keeps_none_args_apart_from_empty_args(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"rich{suffix}"
    write_eval_set(EvalSet.model_validate(RICH), path)

    calls = (load_eval_set(path).eval_set.eval_cases[0].conversation or [])[0].tool_calls()

    assert [(c.name, c.args) for c in calls][:2] == [("a", None), ("b", {})]


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _read_back(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yaml":
        return parse_yaml(text, str(path), EvalSetError)
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines()]
    return json.loads(text)


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".jsonl"])
def test_written_keys_are_snake_case_even_when_read_as_camel_case(
    suffix: str, tmp_path: Path
) -> None:
    camel = {
        "evalSetId": "s",
        "evalCases": [
            {
                "evalId": "c",
                "sessionInput": {"appName": "a", "userId": "u"},
                "conversation": [
                    {
                        "userContent": {"parts": [{"text": "hi"}]},
                        "finalResponse": {"parts": [{"functionCall": {"name": "f"}}]},
                        "creationTimestamp": 3.0,
                    }
                ],
            }
        ],
    }
    path = tmp_path / f"out{suffix}"

    write_eval_set(EvalSet.model_validate(camel), path)

    keys = _keys(_read_back(path))
    assert {"eval_set_id", "eval_id", "session_input", "app_name", "function_call"} <= keys
    assert not [key for key in keys if key != key.lower()]


def test_written_json_leaves_out_nulls_except_a_null_final_session_state(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write_eval_set(EvalSet.model_validate(RICH), path)

    data = json.loads(path.read_text(encoding="utf-8"))

    static, simulated = data["eval_cases"]
    assert static["final_session_state"] is None
    assert simulated["final_session_state"] == {}
    assert "conversation" not in simulated
    assert static["conversation"][0]["final_response"]["parts"] == [{}, {"text": ""}]
    assert static["conversation"][0]["intermediate_data"]["tool_uses"][0] == {"name": "a"}


def test_written_json_keeps_non_ascii_text_readable(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write_eval_set(EvalSet.model_validate(RICH), path)

    assert "Ünïcode" in path.read_text(encoding="utf-8")


def test_yaml_eval_set_written_by_hand_loads_with_camel_case_keys(write_file: WriteFile) -> None:
    path = write_file(
        "set.yaml",
        """
evalSetId: hand
eval_cases:
  - evalId: c1
    conversation:
      - userContent: {role: user, parts: [{text: "Turn on"}]}
        intermediateData:
          toolUses:
            - {name: switch, args: {on: true, level: 3}}
""",
    )

    loaded = load_eval_set(path)

    assert loaded.format == "evalset"
    calls = (loaded.eval_set.eval_cases[0].conversation or [])[0].tool_calls()
    assert [(c.name, c.args) for c in calls] == [("switch", {"on": True, "level": 3})]


def test_yaml_reads_plain_scalars_as_json_would_not_as_yaml_1_1(write_file: WriteFile) -> None:
    path = write_file(
        "set.yaml",
        """
eval_set_id: s
eval_cases:
  - eval_id: c
    session_input:
      app_name: a
      user_id: u
      state: {light: on, answer: no, code: 010, time: 1:30, day: 2024-01-01, ok: true}
    conversation: [{user_content: {parts: [{text: yes}]}}]
""",
    )

    (case,) = load_eval_set(path).eval_set.eval_cases
    assert case.session_input is not None
    assert case.session_input.state == {
        "light": "on",
        "answer": "no",
        "code": 10,
        "time": "1:30",
        "day": "2024-01-01",
        "ok": True,
    }
    assert (case.conversation or [])[0].user_content.parts == [Part(text="yes")]


@pytest.mark.parametrize(
    "value", ["on", "yes", "No", "010", "09", "1:30", "2024-01-01", "1e5", "0x1F", "=", "null", ""]
)
def test_yaml_writes_strings_that_look_like_other_scalars_so_they_read_back_as_strings(
    value: str, tmp_path: Path
) -> None:
    original = EvalSet.model_validate(
        eval_set(case(session_input={"app_name": value, "user_id": "u"}))
    )
    path = tmp_path / "set.yaml"

    write_eval_set(original, path)

    assert load_eval_set(path).eval_set == original


def test_config_beside_is_the_test_config_json_in_the_same_folder(write_file: WriteFile) -> None:
    path = write_file("set.evalset.json", eval_set(case()))
    assert load_eval_set(path).config_beside is None

    config = write_file("test_config.json", {"criteria": {}})

    assert load_eval_set(path).config_beside == config


def test_file_with_a_byte_order_mark_loads(write_file: WriteFile) -> None:
    path = write_file("bom.json", "\ufeff" + json.dumps(eval_set(case())))

    assert load_eval_set(path).eval_set.eval_set_id == "s"


# --- bad input --------------------------------------------------------------------------------
# --- property: any texts and args survive every format ----------------------------------------

_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _eval_sets(draw: st.DrawFn) -> EvalSet:
    def turn(i: int) -> Invocation:
        calls = draw(
            st.lists(
                st.builds(
                    FunctionCall,
                    name=st.text(),
                    args=st.none() | st.dictionaries(st.text(), _JSON, max_size=3),
                ),
                max_size=2,
            )
        )
        return Invocation(
            invocation_id=f"i{i}",
            user_content=Content.from_text(draw(st.text()), role="user"),
            final_response=Content.from_text(draw(st.text())),
            intermediate_data=IntermediateData(tool_uses=calls),
        )

    cases = [
        EvalCase(eval_id=draw(st.text(min_size=1)), conversation=[turn(i) for i in range(2)])
        for _ in range(draw(st.integers(1, 2)))
    ]
    return EvalSet(eval_set_id=draw(st.text()), name=draw(st.none() | st.text()), eval_cases=cases)


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".jsonl"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(original=_eval_sets())
def test_any_texts_and_args_survive_a_round_trip(
    suffix: str, tmp_path: Path, original: EvalSet
) -> None:
    path = tmp_path / f"any{suffix}"

    write_eval_set(original, path)

    assert load_eval_set(path).eval_set == original


def test_duplicate_eval_ids_load_with_a_warning_naming_both_places(tmp_path: Path) -> None:
    case = {
        "eval_id": "same",
        "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}],
    }
    path = tmp_path / "dup.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [case, case]}))
    loaded = load_eval_set(path)
    assert [c.eval_id for c in loaded.eval_set.eval_cases] == ["same", "same"]
    assert [(w.path, w.message) for w in loaded.warnings] == [
        (
            "eval_cases[1].eval_id",
            "duplicate eval_id 'same' (first at eval_cases[0]); traces and results are keyed "
            "by eval_id",
        )
    ]
