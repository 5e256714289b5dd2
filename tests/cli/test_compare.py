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


def test_compare_prints_changes_flips_and_statistics(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    result = run_cli("compare", runs["base"], runs["candidate"])
    assert result.code == 0, result.output
    out = result.out
    assert "tool_trajectory_avg_score" in out and "3/3 → 2/3" in out
    assert "(case verdict)" in out and "3/3 → 1/3" in out
    assert "tool_trajectory_avg_score: pass→fail (1)" in out
    assert "travel_assistant / book_flight_lisbon" in out
    assert "(case verdict): pass→fail (2)" in out
    assert "5 matched case(s)" in out and "10,000 resamples, seed 0" in out


def test_fail_on_regression_passes_when_flips_are_not_significant(
    run_cli: RunCli, runs: dict[str, Path]
) -> None:
    # 2 pass→fail flips of 3 judged cases: p = 0.5
    assert run_cli("compare", runs["base"], runs["candidate"], "--fail-on-regression").code == 0


def test_fail_on_regression_exits_1_on_a_significant_regression(
    run_cli: RunCli, runs: dict[str, Path], tmp_path: Path
) -> None:
    base = _replicated(runs["base"], tmp_path / "base.json", 4)
    candidate = _replicated(runs["candidate"], tmp_path / "candidate.json", 4)
    result = run_cli("compare", base, candidate, "--fail-on-regression")
    assert result.code == 1, result.output
    # 8 cases flip to fail (p = 0.0078); each metric's 4 drops put its interval below 0
    worse = "significantly worse: tool_trajectory_avg_score, response_match_score, (case verdict)"
    assert worse in result.out
    assert run_cli("compare", base, candidate).code == 0  # reported, not failed, without the flag
    assert run_cli("compare", base, base, "--fail-on-regression").code == 0


def test_alpha_sets_what_counts_as_significant(run_cli: RunCli, runs: dict[str, Path]) -> None:
    result = run_cli(
        "compare", runs["base"], runs["candidate"], "--fail-on-regression", "--alpha", "0.6"
    )
    assert result.code == 1
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
    assert "| tool\\_trajectory\\_avg\\_score | 3 | 1.0000 → 0.8333 |" in markdown
    assert "&lt;script&gt;alert\\(1\\)&lt;/script&gt;\\|x" in markdown
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|x" in page
    assert "<td>tool_trajectory_avg_score</td>" in page


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
