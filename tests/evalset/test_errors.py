"""How validation errors become Problems: paths, messages and "did you mean" hints."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from assay.errors import (
    EvalSetError,
    InputError,
    Problem,
    format_path,
    keys_at,
    problems_from_validation,
)
from assay.evalset import EvalCase, EvalSet


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ((), ""),
        (("eval_cases", 3, "conversation"), "eval_cases[3].conversation"),
        ((0, "initial_state"), "[0].initial_state"),
        (("state", "a b", "c"), 'state["a b"].c'),
        (("criteria", "my-metric"), "criteria.my-metric"),
        (("args", True), 'args["True"]'),
    ],
)
def test_format_path_writes_json_paths(parts: tuple[Any, ...], expected: str) -> None:
    assert format_path(parts) == expected


def test_problem_text_is_file_path_and_message() -> None:
    assert str(Problem("f.json", "a[0]", "bad")) == "f.json: a[0]: bad"
    assert str(Problem("f.json", "", "bad")) == "f.json: bad"


def test_input_error_message_lists_every_problem() -> None:
    error = EvalSetError([Problem("f", "a", "x"), Problem("f", "b", "y")])

    assert isinstance(error, InputError)
    assert str(error) == "f: a: x\nf: b: y"


def test_keys_at_finds_the_model_under_a_location() -> None:
    assert keys_at(EvalSet, ("eval_cases", 0, "session_input")) == [
        "app_name",
        "session_id",
        "state",
        "user_id",
    ]
    assert "author" in keys_at(
        EvalCase, ("conversation", 0, "intermediate_data", "events", "invocation_events", 0)
    )
    assert "tool_uses" in keys_at(EvalCase, ("conversation", 0, "intermediate_data", "data"))
    assert keys_at(EvalSet, ("eval_cases", 0, "final_session_state")) == []


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    size: int = 0


def _problems(data: Any, **kwargs: Any) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        _Strict.model_validate(data)
    found = problems_from_validation(info.value, "f", data, **kwargs)
    return [(p.path, p.message) for p in found]


def test_unknown_key_hint_uses_a_plain_list_of_known_keys() -> None:
    assert _problems({"name": "x", "sise": 1}, known_keys=["name", "size"]) == [
        ("", "unknown key 'sise' (did you mean 'size'?)")
    ]


def test_unknown_key_without_known_keys_has_no_hint() -> None:
    assert _problems({"name": "x", "sise": 1}) == [("", "unknown key 'sise'")]


def test_prefix_is_put_before_every_path() -> None:
    assert _problems({"size": "big"}, prefix=["criteria", "m"]) == [
        ("criteria.m", "missing required key 'name'"),
        ("criteria.m.size", 'expected an integer; got "big"'),
    ]


def test_long_values_are_cut_in_messages() -> None:
    ((_, message),) = _problems({"name": ["x" * 100]})
    assert message.startswith('expected a string; got ["xxx')
    assert message.endswith("...")
    assert len(message) < 90
