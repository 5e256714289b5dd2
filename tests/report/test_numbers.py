"""One number format for every report: scores to two decimals, informational values with units."""

from __future__ import annotations

from assay.report.numbers import measure_text, score_text, signed_value, value_text


def test_a_score_has_two_decimals_and_a_missing_one_is_a_dash() -> None:
    assert [score_text(s) for s in (None, 1, 0.8696, 0.0)] == ["-", "1.00", "0.87", "0.00"]


def test_a_score_below_its_threshold_is_never_written_as_reaching_it() -> None:
    assert score_text(0.7996, 0.8) == "0.79"
    assert score_text(0.8, 0.8) == "0.80"
    assert score_text(0.805, 0.8) in {"0.80", "0.81"}  # at or above: plain rounding


def test_informational_values_carry_their_unit() -> None:
    assert measure_text("invocation_duration_v1", 1.234) == "duration 1.2 s"
    assert measure_text("invocation_duration_v1", 0.012) == "duration 12 ms"
    assert measure_text("token_usage_v1", 1234.4) == "tokens 1,234"
    assert measure_text("token_usage_v1", None) == "tokens -"
    assert measure_text("tool_call_count_v1", 1.5) == "tool calls 1.5"
    assert measure_text("inference_call_count_v1", 2.0) == "model calls 2"
    assert value_text("my_custom_v1", 3.14159) == "3.1"
    assert signed_value("invocation_duration_v1", -0.12) == "-120 ms"
