"""The results table at 80, 120 and 200 columns: nothing wider than the terminal, no name broken
inside a word, each case's status beside its id, and a why for every row that did not pass."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _judges import reject
from _support import Example, RunCli
from rich.cells import cell_len

from assay.report.console import wrap_name

CRITERIA = [
    "tool_trajectory_avg_score",
    "response_match_score",
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
    "safety_v1",
]
NOT_PASSED = {"FAILED", "NOT_EVALUATED", "N/E"}


def _rows(out: str) -> list[list[str]]:
    """The table's lines as cells (the text between the vertical rules, stripped)."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in out.splitlines()
        if line.startswith("│")
    ]


@pytest.fixture
def regressed_run(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch
) -> dict[int, str]:
    """The regressed traces judged by a judge that rejects everything, at each width."""
    outputs = {}
    with JudgeServer(reply=reject) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        for width in (80, 120, 200):
            monkeypatch.setenv("COLUMNS", str(width))
            run = run_cli("eval", example.evalset, "--traces", example.regressed, "--no-progress")
            assert run.code == 1, run.output
            outputs[width] = run.out
    return outputs


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_table_fits_the_width_and_never_breaks_a_metric_name(
    regressed_run: dict[int, str], width: int
) -> None:
    out = regressed_run[width]
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│├└"]
    assert table and all(len(line) <= width for line in table), width
    names = [row[0] for row in _rows(out)]
    for criterion in CRITERIA:
        assert criterion in names, (width, criterion)  # whole, on one line, in its own cell


@pytest.mark.parametrize("width", [80, 120, 200])
def test_each_case_has_its_status_beside_its_id_and_every_row_that_did_not_pass_says_why(
    regressed_run: dict[int, str], width: int
) -> None:
    rows = _rows(regressed_run[width])
    wide = len(rows[0]) == 5
    statuses = {"forecast_paris": "FAILED", "book_flight_lisbon": "FAILED"}  # judge rejects
    for case, status in statuses.items():
        assert any(row[0] == case and row[3] == status for row in rows), (width, case)
    at = next(i for i, row in enumerate(rows) if row[0] == "book_cheapest_and_convert")
    said = rows[at][4] if wide else rows[at + 1][0]  # narrow: on the line under the row
    assert rows[at][3] in NOT_PASSED and said.startswith("no trace for this case"), width

    checked = 0
    for i, row in enumerate(rows):
        if row[0] not in CRITERIA or row[3] not in NOT_PASSED:
            continue
        checked += 1
        if wide:
            assert row[4], (width, row)
        else:  # the why is on the line under the row, indented under the name
            below = rows[i + 1]
            assert below[0] and not any(below[1:]), (width, row)  # a why line, not a row
            assert below[0] not in CRITERIA, (width, row)
    assert checked >= 10, width  # the rejecting judge fails every judged metric


def test_a_judge_rejection_and_a_missing_call_are_explained_in_words(
    regressed_run: dict[int, str],
) -> None:
    text = " ".join(regressed_run[200].split())
    assert "turn 2: expected call not made: book_flight(" in text
    assert "ROUGE-1 0.30, needs 0.60" in text
    assert "judge said invalid" in text


def test_a_long_name_is_wrapped_only_after_an_underscore() -> None:
    lines = wrap_name("rubric_based_final_response_quality_v1", 20, "  ")
    assert lines == ["  rubric_based_", "    final_response_", "    quality_v1"]
    assert all(len(line) <= 20 for line in lines)
    assert "".join(line.strip() for line in lines) == "rubric_based_final_response_quality_v1"
    assert wrap_name("short_name", 20) == ["short_name"]


def test_a_part_longer_than_the_width_is_cut_where_it_must_be() -> None:
    assert wrap_name("abcdefghij", 4) == ["abcd", "efgh", "ij"]


# --- every command's tables, at 80, 120 and 200 columns -----------------------------------------

WIDTHS = (80, 120, 200)
CASES = ("forecast_paris", "book_flight_lisbon", "convert_currency", "greeting")


@pytest.fixture
def every_table(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> dict[tuple[str, int], str]:
    """``runs``, ``compare``, ``show --print-detailed-results`` and ``judge agree`` over two
    recorded runs of the example (its traces, then the regressed ones), at each width."""
    history = tmp_path / "history.sqlite"
    monkeypatch.setenv("ASSAY_HISTORY", str(history))
    ids = []
    for traces in (example.traces, example.regressed):
        run = run_cli("eval", example.evalset, "--traces", traces, "--no-progress")
        ids.append(re.findall(r"recorded as run (\S+)", run.out)[0])
    outputs = {"ids": " ".join(ids)}
    commands = {
        "runs": ("runs",),
        "compare": ("compare", *ids),
        "show": ("show", ids[1], "--print-detailed-results"),
        "agree": ("judge", "agree", example.dir / "labels.yaml"),
    }
    for width in WIDTHS:
        monkeypatch.setenv("COLUMNS", str(width))
        for name, args in commands.items():
            run = run_cli(*args)
            assert run.code in (0, 1), (name, run.output)
            outputs[name, width] = run.out  # type: ignore[index]
    return outputs  # type: ignore[return-value]


def _cells(out: str) -> list[str]:
    """Every table cell's text, line by line, stripped."""
    return [cell.strip() for line in out.splitlines() for cell in re.split("[│┃]", line)[1:-1]]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["runs", "compare", "show", "agree"])
def test_every_table_fits_the_width_without_cutting_an_id_or_breaking_a_name(
    every_table: dict[Any, str], command: str, width: int
) -> None:
    out = every_table[command, width]
    lines = out.splitlines()
    assert all(cell_len(line) <= width for line in lines), (command, width)
    assert not any(line.endswith(" ") for line in lines)  # piped: not padded to the width
    cells = " ".join(_cells(out)).split()
    words = set(cells)
    if command == "runs":
        for run_id in every_table["ids"].split():  # type: ignore[index]
            assert run_id in words, (width, run_id)  # whole, on one line
    if command in ("compare", "agree"):
        names = CRITERIA if command == "compare" else CRITERIA[2:]
        for name in names:
            assert name in words, (command, width, name)
    if command == "show":
        assert all(f"{name}:" in words for name in CRITERIA), width  # the verdict lines
        title = [line for line in lines if line.startswith("travel_assistant / ")]
        assert {line.split(" / ")[1] for line in title} >= {"forecast_paris", "convert_currency"}


def test_the_summary_line_names_the_cases_that_did_not_pass(
    regressed_run: dict[int, str],
) -> None:
    text = " ".join(regressed_run[80].split())  # it may wrap at 80 columns, between words only
    line = text[text.index("0 passed, ") :]
    assert line.startswith(
        "0 passed, 3 failed, 2 not evaluated; failed: forecast_paris, book_flight_lisbon, "
        "convert_currency; not evaluated: greeting, book_cheapest_and_convert"
    )
