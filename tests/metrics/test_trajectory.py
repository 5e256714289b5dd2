"""``tool_trajectory_avg_score``: the ADK 2.13.0 behaviours pinned with concrete values.

See the team research note ``adk-2.13-deterministic.md``; ``test_adk_differential.py`` checks the
same behaviours (and many more cases) against ADK itself.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from _support import run_metric as _run

from assay.config import MatchType, ToolTrajectoryCriterion
from assay.evalset import EvalCase, FunctionCall, Invocation
from assay.metrics import (
    EvalStatus,
    ToolTrajectoryMetric,
    any_order_match,
    exact_match,
    in_order_match,
)

_MISSING = object()


def _call(name: str, args: Any = _MISSING, **extra: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, **extra}
    if args is not _MISSING:
        call["args"] = args
    return call


def _invocation(calls: list[dict[str, Any]] | None, events: bool = False) -> Invocation:
    data: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": "hi"}]}}
    if calls is not None and events:
        parts = [{"function_call": c} for c in calls]
        data["intermediate_data"] = {
            "invocation_events": [{"author": "agent", "content": {"role": "model", "parts": parts}}]
        }
    elif calls is not None:
        data["intermediate_data"] = {"tool_uses": calls}
    return Invocation.model_validate(data)


def _score(
    actual: list[dict[str, Any]] | None,
    expected: list[dict[str, Any]] | None,
    match_type: MatchType = MatchType.EXACT,
    ignore_args: bool = False,
) -> float | None:
    metric = ToolTrajectoryMetric(
        ToolTrajectoryCriterion(threshold=1.0, match_type=match_type, ignore_args=ignore_args)
    )
    act, exp = [_invocation(actual)], [_invocation(expected)]
    result = _run(metric.evaluate(act, exp, EvalCase(eval_id="c", conversation=exp)))
    return result.score


ALL_MATCH_TYPES = list(MatchType)


@pytest.mark.parametrize("match_type", [MatchType.IN_ORDER, MatchType.ANY_ORDER])
def test_empty_expected_matches_anything_in_order(match_type: MatchType) -> None:
    anything = [_call("delete_everything", {"really": True}), _call("f")]
    assert _score(anything, [], match_type) == 1.0
    assert _score([], [], match_type) == 1.0
    assert _score(anything, None, match_type) == 1.0  # no intermediate_data at all


def test_empty_expected_needs_no_calls_for_exact() -> None:
    assert _score([_call("f", {})], [], MatchType.EXACT) == 0.0
    assert _score([], [], MatchType.EXACT) == 1.0
    assert _score(None, [], MatchType.EXACT) == 1.0
    assert _score(None, None, MatchType.EXACT) == 1.0


@pytest.mark.parametrize("match_type", ALL_MATCH_TYPES)
def test_calls_expected_but_none_made_fail(match_type: MatchType) -> None:
    assert _score(None, [_call("f", {})], match_type) == 0.0
    assert _score([], [_call("f", {})], match_type) == 0.0


@pytest.mark.parametrize("match_type", ALL_MATCH_TYPES)
def test_none_args_differ_from_empty_dict(match_type: MatchType) -> None:
    assert _score([_call("f")], [_call("f", {})], match_type) == 0.0
    assert _score([_call("f", None)], [_call("f", {})], match_type) == 0.0
    assert _score([_call("f", {"x": None})], [_call("f", {})], match_type) == 0.0
    assert _score([_call("f")], [_call("f", None)], match_type) == 1.0
    assert _score([_call("f")], [_call("f", {})], match_type, ignore_args=True) == 1.0


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ({"n": 1}, {"n": 1.0}),
        ({"n": 1}, {"n": True}),
        ({"n": 0}, {"n": -0.0}),
        ({"n": 0.0}, {"n": False}),
        ({"n": [1, {"m": 2}]}, {"n": [1.0, {"m": 2.0}]}),
    ],
)
def test_numbers_compare_with_python_equality(
    actual: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert _score([_call("f", actual)], [_call("f", expected)]) == 1.0


@pytest.mark.parametrize(
    ("actual", "expected"),
    [
        ({"n": 1}, {"n": "1"}),
        ({"n": "1.0"}, {"n": 1.0}),
        ({"n": 10000000000000001}, {"n": 1e16}),
        ({"n": 0.3}, {"n": 0.30000000000000004}),
        ({"n": None}, {"n": 0}),
    ],
)
def test_near_equal_values_differ(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    assert _score([_call("f", actual)], [_call("f", expected)]) == 0.0


def test_key_order_is_ignored_at_every_level_and_list_order_is_not() -> None:
    expected = {"a": 1, "b": {"c": [1, {"d": 2, "e": 3}], "f": "x"}}
    reordered = {"b": {"f": "x", "c": [1, {"e": 3, "d": 2}]}, "a": 1}
    assert _score([_call("f", reordered)], [_call("f", expected)]) == 1.0
    swapped = {"a": 1, "b": {"c": [{"d": 2, "e": 3}, 1], "f": "x"}}
    assert _score([_call("f", swapped)], [_call("f", expected)]) == 0.0


def test_nfc_and_nfd_strings_differ() -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert _score([_call("f", {"q": nfd})], [_call("f", {"q": nfc})]) == 0.0
    assert _score([_call("f", {"q": nfc})], [_call("f", {"q": nfc})]) == 1.0


@pytest.mark.parametrize("match_type", ALL_MATCH_TYPES)
def test_tool_names_are_case_sensitive(match_type: MatchType) -> None:
    assert _score([_call("Get_Weather", {})], [_call("get_weather", {})], match_type) == 0.0
    score = _score([_call("Get_Weather")], [_call("get_weather")], match_type, ignore_args=True)
    assert score == 0.0


def test_call_ids_are_ignored() -> None:
    actual = [_call("f", {"x": 1}, id="call-1")]
    expected = [_call("f", {"x": 1}, id="other")]
    assert _score(actual, expected) == 1.0


def test_any_order_consumes_matches_as_a_multiset() -> None:
    f, g = _call("f", {"x": 1}), _call("g", {})
    assert _score([f], [f, f], MatchType.ANY_ORDER) == 0.0
    assert _score([f, g, f], [f, f], MatchType.ANY_ORDER) == 1.0
    assert _score([g, f], [f, g], MatchType.ANY_ORDER) == 1.0
    assert _score([g, f], [f, g], MatchType.EXACT) == 0.0


def test_in_order_is_a_greedy_subsequence_match() -> None:
    a, b, c = _call("a", {}), _call("b", {}), _call("c", {})
    assert _score([b, a, c, b], [a, b], MatchType.IN_ORDER) == 1.0
    assert _score([b, a], [a, b], MatchType.IN_ORDER) == 0.0
    assert _score([a, a], [a, a, a], MatchType.IN_ORDER) == 0.0
    assert _score([a, c, b], [a, b], MatchType.EXACT) == 0.0


def test_invocation_events_function_calls_are_the_trajectory() -> None:
    events = {
        "invocation_events": [
            {"author": "agent", "content": {"parts": [{"text": "Checking."}]}},
            {
                "author": "agent",
                "content": {
                    "parts": [
                        {"function_call": {"name": "f", "args": {"x": 1}}},
                        {"text": "and", "thought": True},
                        {"function_call": {"name": "g", "args": {}}},
                    ]
                },
            },
            {"author": "tool", "content": {"parts": [{"function_response": {"name": "f"}}]}},
            {"author": "agent", "content": None},
        ]
    }
    actual = Invocation.model_validate({"user_content": {"parts": []}, "intermediate_data": events})
    assert [(c.name, c.args) for c in actual.tool_calls()] == [("f", {"x": 1}), ("g", {})]
    expected = _invocation([_call("f", {"x": 1.0}), _call("g", {})])
    metric = ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=1.0))
    result = _run(metric.evaluate([actual], [expected], EvalCase(eval_id="c", conversation=[])))
    assert result.score == 1.0


def test_overall_score_is_the_mean_and_passes_at_the_threshold() -> None:
    f = [_call("f", {})]
    actual = [_invocation(f), _invocation([]), _invocation(f)]
    expected = [_invocation(f), _invocation(f), _invocation(f)]
    case = EvalCase(eval_id="c", conversation=expected)

    at = _run(
        ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=2 / 3)).evaluate(
            actual, expected, case
        )
    )
    assert at.score == 2 / 3
    assert at.status is EvalStatus.PASSED
    assert [r.score for r in at.per_invocation] == [1.0, 0.0, 1.0]
    assert [r.status for r in at.per_invocation] == [
        EvalStatus.PASSED,
        EvalStatus.FAILED,
        EvalStatus.PASSED,
    ]

    above = _run(
        ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=0.67)).evaluate(
            actual, expected, case
        )
    )
    assert above.status is EvalStatus.FAILED


def test_invocation_count_mismatch_is_not_evaluated() -> None:
    metric = ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=1.0))
    one, two = [_invocation([])], [_invocation([]), _invocation([])]
    result = _run(metric.evaluate(one, two, EvalCase(eval_id="c", conversation=two)))
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.score is None
    assert result.reason == "expected 2 invocations, got 1"


def test_zero_invocations_is_not_evaluated() -> None:
    metric = ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=0.0))
    result = _run(metric.evaluate([], [], EvalCase(eval_id="c", conversation=[])))
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.score is None


def test_public_matchers_compare_function_calls() -> None:
    f1 = FunctionCall(name="f", args={"x": 1})
    f1_float = FunctionCall(name="f", args={"x": 1.0}, id="other")
    f2 = FunctionCall(name="f", args={"x": 2})
    g = FunctionCall(name="g")
    assert exact_match([f1], [f1_float])
    assert not exact_match([f1], [f2])
    assert exact_match([f1], [f2], ignore_args=True)
    assert in_order_match([g, f1, g], [f1_float])
    assert not in_order_match([f2, g], [g, f2])
    assert any_order_match([f2, g], [g, f2])
    assert not any_order_match([f1], [f1, f1])


def test_public_matchers_compare_arguments_unless_told_to_ignore_them() -> None:
    f1 = FunctionCall(name="f", args={"x": 1})
    f2 = FunctionCall(name="f", args={"x": 2})
    g = FunctionCall(name="g")
    for match in (exact_match, in_order_match, any_order_match):
        assert not match([f2], [f1]), match.__name__  # arguments count by default
        assert match([f2], [f1], ignore_args=True), match.__name__
        assert not match([g], [f1], ignore_args=True), match.__name__  # names still count
    assert in_order_match([g, f2, g], [f1, g], ignore_args=True)
    assert not in_order_match([g, f2, g], [f1, g])
    assert any_order_match([g, f2], [f1, g], ignore_args=True)
    assert not any_order_match([g, f2], [f1, g])
