"""Comparing two large recorded runs: cases read back from the history one at a time, matched
through compact digests."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import RunCli

from assay.compare import compare_runs
from assay.compare.diff import CaseDigest, index_cases
from assay.history.records import case_row
from assay.history.store import HistoryStore
from assay.history.stored import StoredCases
from assay.metrics.base import EvalStatus
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult, EvalSetResult, SetNotes
from compare._results import case, eval_set, scored

CASES = 2_000


def _run(store: HistoryStore, worse: set[int]) -> str:
    cases: list[EvalCaseResult] = []
    for n in range(CASES):
        found = case(f"c{n:05d}", {"m": scored(0.1 if n in worse else 0.9)}, not_applicable=())
        cases.append(found.model_copy(update={"eval_set_id": "s"}))
    run = store.start_run(["s.evalset.json"], {})
    rows = [case_row(c, c.model_dump_json(exclude_none=True)) for c in cases]
    store.write_cases(run, rows)
    result = EvalSetResult(
        eval_set_result_id="r",
        eval_set_id="s",
        eval_case_results=cases,
        assay=SetNotes(version="1"),
    )
    store.finish_run(run, [result])
    return run


def test_two_large_recorded_runs_compare_case_by_case(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "history.sqlite") as store:
        base = _run(store, worse=set())
        candidate = _run(store, worse={5, 1_999})
        before, after = store.results(base), store.results(candidate)
    assert isinstance(before[0].eval_case_results, StoredCases)
    comparison = compare_runs(before, after, resamples=200)
    assert comparison.matched == CASES
    assert [r.key.eval_id for r in comparison.case_regressions] == ["c00005", "c01999"]
    [metric] = comparison.metrics
    assert metric.to_fail == (CaseKey("s", "c00005", 1), CaseKey("s", "c01999", 1))


def test_a_run_is_indexed_as_digests_of_what_the_comparison_reads() -> None:
    found = case(
        "a",
        {"m": scored(0.5), "sim": scored(1.0)},
        not_applicable=("sim",),
        status=EvalStatus.NOT_EVALUATED,
        reason="judge unreachable",
    )
    [(key, digest)] = index_cases([eval_set("s", found)], "base").items()
    assert key == CaseKey("s", "a", 1)
    assert isinstance(digest, CaseDigest)
    assert [row.metric_name for row in digest.rows] == ["m"]
    assert digest.reason == "judge unreachable" and digest.not_applicable == {"sim"}


def test_compare_cli_reads_two_recorded_runs(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        base = _run(store, worse=set())
        candidate = _run(store, worse={7})
    monkeypatch.setenv("ASSAY_HISTORY", str(path))
    compared = run_cli("compare", base, candidate, "--bootstrap", "100")
    assert compared.code == 0, compared.output
    assert "c00007" in compared.output
