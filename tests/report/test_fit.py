"""Tables laid out for a width: no column narrower than its longest word, or no layout at all."""

from __future__ import annotations

from assay.report.fit import Column, fit, frame


def test_the_widest_wrapping_column_gives_way_first_and_never_below_its_longest_word() -> None:
    columns = [
        Column("Metric", ["rubric_based_final_response_quality_v1"], wrap=False),
        Column("Verdict", ["too few cases to test"]),
    ]
    widths = fit(columns, 38 + 8 + frame(2))
    assert widths == [38, 8]  # "Verdict" and "too few" wrap; no word is cut
    assert fit(columns, 38 + 6 + frame(2)) is None  # "Verdict" itself would not fit


def test_a_table_that_fits_keeps_every_column_at_its_widest() -> None:
    columns = [Column("run", ["20261128-073410-0e6c"], wrap=False), Column("cases", ["5"])]
    assert fit(columns, 200) == [20, 5]
