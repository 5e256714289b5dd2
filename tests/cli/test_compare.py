"""``assay compare`` end to end on results files written by ``assay eval``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _support import Example, RunCli

from assay.cli.main import main


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, approving_judge: JudgeServer
) -> Iterator[dict[str, Path]]:
    """The example scored on its traces (base) and on the regressed traces (candidate)."""
    folder = tmp_path_factory.mktemp("runs")
    example = Example()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ASSAY_JUDGE_MODEL", "openai:stub-judge")
        patch.setenv("OPENAI_BASE_URL", approving_judge.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        patch.setenv("ASSAY_CACHE_DIR", str(folder / "cache"))
        for name, traces in (("base", example.traces), ("candidate", example.regressed)):
            with pytest.raises(SystemExit):
                main(
                    [
                        "eval",
                        str(example.evalset),
                        "--traces",
                        str(traces),
                        "--output",
                        str(folder / f"{name}.json"),
                    ]
                )
    yield {"base": folder / "base.json", "candidate": folder / "candidate.json"}


def _edit(source: Path, target: Path, change: Any) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    target.write_text(json.dumps(change(data)), encoding="utf-8")
    return target


def _replicated(source: Path, target: Path, copies: int) -> Path:
    """The run's eval set repeated under ``copies`` set ids: a bigger run with the same changes."""

    def copy(data: dict[str, Any]) -> list[dict[str, Any]]:
        sets = []
        for i in range(copies):
            one = json.loads(json.dumps(data))
            one["eval_set_id"] = f"{data['eval_set_id']}_{i}"
            sets.append(one)
        return sets

    return _edit(source, target, copy)


REGRESSED = [
    "travel_assistant / book_flight_lisbon: passed → failed (failed: tool_trajectory_avg_score)",
    "travel_assistant / convert_currency: passed → failed (failed: response_match_score)",
    "travel_assistant / greeting: passed → not evaluated (no trace for this case in ",
    "travel_assistant / book_cheapest_and_convert: passed → not evaluated (no trace for this ",
]
"""How the four cases that passed on the good traces show up on the regressed ones."""


def test_compare_prints_changes_flips_and_statistics(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    result = run_cli("compare", runs["base"], runs["candidate"])
    assert result.code == 0, result.output  # reporting only: no gate without the flag
    out = result.out
    assert "tool_trajectory_avg_score" in out and "3/3 → 2/3" in out
    assert "(case verdict)" in out and "3/3 → 1/3" in out
    assert "tool_trajectory_avg_score: pass→fail (1)" in out
    assert "travel_assistant / book_flight_lisbon" in out
    # the case verdict's pass→fail flips are listed once, among the regressed cases
    assert "(case verdict): pass→fail" not in out
    assert "regressed cases: passed in base, failed or not evaluated in candidate (4)" in out
    assert "5 matched case(s)" in out and "10,000 resamples, seed 0" in out
    assert "regression gate" not in out


def test_fail_on_regression_exits_1_on_the_bundled_regression_by_default(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    # 2 cases fail and 2 are not evaluated on the regressed traces: McNemar cannot see it
    # (2 discordant pairs, p = 0.5), but each is a case that passed and no longer does
    result = run_cli("compare", runs["base"], runs["candidate"], "--fail-on-regression")
    assert result.code == 1, result.output
    lines = [line.strip() for line in result.out.splitlines()]
    for regressed in REGRESSED:
        assert any(line.startswith(regressed) for line in lines), regressed
    assert "travel_assistant / forecast_paris:" not in result.out  # passed in both
    assert "regression gate (cases): failed: 4 case(s) regressed" in result.out
    assert "significantly worse" not in result.out
    explicit = run_cli(
        "compare", runs["base"], runs["candidate"], "--fail-on-regression", "--gate", "cases"
    )
    assert explicit.code == 1 and explicit.out == result.out


def test_significance_gate_passes_the_bundled_regression_as_before(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    # 2 pass→fail flips of 3 judged cases: p = 0.5, and 3 scored cases per metric are too few
    # for the interval to count; the regressed cases are still listed, but not gated
    result = run_cli(
        "compare",
        runs["base"],
        runs["candidate"],
        "--fail-on-regression",
        "--gate",
        "significance",
    )
    assert result.code == 0, result.output
    assert "regressed cases: passed in base, failed or not evaluated in candidate (4)" in result.out
    gate = "regression gate (significance): passed (4 case(s) regressed: not gated with --gate "
    assert gate in result.out


def test_gate_passes_a_pair_without_regressions(run_cli: RunCli, runs: dict[str, Path]) -> None:
    same = run_cli("compare", runs["base"], runs["base"], "--fail-on-regression")
    assert same.code == 0, same.output
    assert "regression gate (cases): passed\n" in same.out and "regressed" not in same.out
    # the other way round every change is for the better: failed or not evaluated → passed
    better = run_cli("compare", runs["candidate"], runs["base"], "--fail-on-regression")
    assert better.code == 0, better.output
    assert "regression gate (cases): passed\n" in better.out
    assert "(case verdict): fail→pass (2)" in better.out


def test_gate_without_fail_on_regression_is_a_usage_error(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    result = run_cli("compare", runs["base"], runs["candidate"], "--gate", "significance")
    assert result.code == 2 and "needs --fail-on-regression" in result.err


def test_too_few_cases_to_test_is_said_instead_of_no_significant_change(
    run_cli: RunCli, runs: dict[str, Path], tmp_path: Path
) -> None:
    md = tmp_path / "cmp.md"
    result = run_cli("compare", runs["base"], runs["candidate"], "--markdown", md)
    assert result.code == 0, result.output
    assert "no significant change" not in result.out and "too few cases to test" in result.out
    legend = " ".join(result.out.split())  # the legend wraps at the terminal's width
    assert "fewer than 6 scored cases (bootstrap) or discordant pairs (McNemar)" in legend
    rows = {
        line.split(" | ")[0]: line.split(" | ")[-1]
        for line in md.read_text(encoding="utf-8").splitlines()
        if line.startswith("| ")
    }
    verdict = "too few cases to test: 2 discordant, at least 6 needed at alpha 0.05 |"
    assert rows["| \\(case verdict\\)"] == verdict
    flipped = "too few cases to test: 3 scored and 1 discordant, at least 6 needed at alpha 0.05 |"
    assert rows["| tool\\_trajectory\\_avg\\_score"] == flipped
    assert rows["| safety\\_v1"] == "no change |"
    # a stricter alpha needs more: 2 * 0.5**n < 0.01 from n = 8 on
    strict = run_cli("compare", runs["base"], runs["candidate"], "--alpha", "0.01")
    assert "fewer than 8 scored cases" in " ".join(strict.out.split())


def test_footer_explains_why_rows_count_fewer_than_the_matched_cases(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    out = run_cli("compare", runs["base"], runs["candidate"]).out
    lines = [line.strip() for line in out.splitlines()]
    intro = "5 matched case(s); a row's n counts only those both runs scored or judged on it:"
    assert intro in lines
    assert "n = 3 on every other row: 2 not evaluated in the candidate run" in lines
    simulator = "n = 0 on per_turn_user_simulator_quality_v1: 3 not applicable, 2 not evaluated"
    assert any(line.startswith(simulator) for line in lines)
    # the rows the footer groups under n = 3 do show n = 3
    assert "│ (case verdict)" in out and "│ 3 │" in out.split("│ (case verdict)")[1][:60]


def test_fail_on_regression_exits_1_on_a_significant_regression(
    run_cli: RunCli, runs: dict[str, Path], tmp_path: Path
) -> None:
    base = _replicated(runs["base"], tmp_path / "base.json", 4)
    candidate = _replicated(runs["candidate"], tmp_path / "candidate.json", 4)
    result = run_cli("compare", base, candidate, "--fail-on-regression")
    assert result.code == 1, result.output
    # 8 cases flip to fail (p = 0.0078), 8 more are not evaluated: 16 regressed cases; each
    # metric's 4 drops put its interval below 0
    worse = "significantly worse: tool_trajectory_avg_score, response_match_score, (case verdict)"
    assert worse in result.out
    assert (
        "regression gate (cases): failed: 16 case(s) regressed; 3 row(s) significantly worse"
        in (result.out)
    )
    significance = run_cli(
        "compare", base, candidate, "--fail-on-regression", "--gate", "significance"
    )
    assert significance.code == 1, significance.output
    assert "regression gate (significance): failed: 3 row(s) significantly worse" in (
        significance.out
    )
    assert run_cli("compare", base, candidate).code == 0  # reported, not failed, without the flag
    assert run_cli("compare", base, base, "--fail-on-regression").code == 0


def test_alpha_sets_what_counts_as_significant(run_cli: RunCli, runs: dict[str, Path]) -> None:
    gate = ("--fail-on-regression", "--gate", "significance")
    result = run_cli("compare", runs["base"], runs["candidate"], *gate, "--alpha", "0.6")
    assert result.code == 1  # at 0.6, 2 discordant pairs suffice and p = 0.5 is significant
    worse = next(line for line in result.out.splitlines() if "significantly worse:" in line)
    assert worse.endswith(", (case verdict)")
    assert "60% paired bootstrap" not in result.out and "40% paired bootstrap" in result.out


def test_cases_in_only_one_run_are_listed(
    run_cli: RunCli, runs: dict[str, Path], tmp_path: Path
) -> None:
    def drop_first(data: dict[str, Any]) -> dict[str, Any]:
        data["eval_case_results"] = data["eval_case_results"][1:]
        return data

    candidate = _edit(runs["candidate"], tmp_path / "fewer.json", drop_first)
    result = run_cli("compare", runs["base"], candidate)
    assert result.code == 0
    assert f"only in {runs['base']}" in result.out
    assert "travel_assistant / forecast_paris" in result.out
    assert "4 matched case(s)" in result.out


def test_markdown_and_html_outputs(run_cli: RunCli, runs: dict[str, Path], tmp_path: Path) -> None:
    def rename(data: dict[str, Any]) -> dict[str, Any]:
        data["eval_case_results"][1]["eval_id"] = "<script>alert(1)</script>|x"
        return data

    base = _edit(runs["base"], tmp_path / "b.json", rename)
    candidate = _edit(runs["candidate"], tmp_path / "c.json", rename)
    md, html = tmp_path / "cmp.md", tmp_path / "cmp.html"
    result = run_cli("compare", base, candidate, "--markdown", md, "--html", html)
    assert result.code == 0, result.output
    markdown = md.read_text(encoding="utf-8")
    assert "| tool\\_trajectory\\_avg\\_score | 3 | 1.00 → 0.83 |" in markdown
    assert "&lt;script&gt;alert\\(1\\)&lt;/script&gt;\\|x" in markdown
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|x" in page
    assert "<td>tool_trajectory_avg_score</td>" in page
    # the regressed cases are named in both, first in a summary line, then one by one
    assert "**4 case\\(s\\) passed in base and failed or were not evaluated" in markdown
    assert "### regressed cases\\: passed in base, failed or not evaluated in candidate (4)" in (
        markdown
    )
    assert "- travel\\_assistant / convert\\_currency\\: passed → failed \\(failed\\: " in markdown
    assert '<p class="regressed-cases">4 case(s) passed in base' in page
    assert '<h2 class="regressed-cases">regressed cases: passed in base' in page
    assert "<li>travel_assistant / greeting: passed → not evaluated (no trace" in page
    assert '<tr class="too-few-cases"><td>(case verdict)</td><td>3</td>' in page


def test_the_same_seed_prints_the_same_intervals(run_cli: RunCli, runs: dict[str, Path]) -> None:
    first = run_cli("compare", runs["base"], runs["candidate"], "--seed", "5", "--bootstrap", "500")
    again = run_cli("compare", runs["base"], runs["candidate"], "--seed", "5", "--bootstrap", "500")
    assert first.out == again.out and "500 resamples, seed 5" in first.out


def test_unreadable_runs_are_input_errors(
    run_cli: RunCli, runs: dict[str, Path], tmp_path: Path
) -> None:
    missing = run_cli("compare", runs["base"], tmp_path / "nope.json")
    assert missing.code == 2 and "nope.json" in missing.err and "Traceback" not in missing.output
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = run_cli("compare", broken, runs["candidate"])
    assert result.code == 2 and "broken.json" in result.err and "not JSON" in result.err


@pytest.mark.parametrize(
    ("option", "value"), [("--bootstrap", "0"), ("--alpha", "1"), ("--alpha", "0")]
)
def test_bad_settings_are_usage_errors(
    run_cli: RunCli, runs: dict[str, Path], option: str, value: str
) -> None:
    assert run_cli("compare", runs["base"], runs["candidate"], option, value).code == 2


def test_output_in_a_missing_folder_is_refused_before_comparing(
    run_cli: RunCli, runs: dict[str, Path], tmp_path: Path
) -> None:
    result = run_cli(
        "compare", runs["base"], runs["candidate"], "--html", tmp_path / "no" / "x.html"
    )
    assert result.code == 2 and "does not exist" in result.err
