"""The runs page and the run page over real HTTP, from a real history file: runs per eval set
with their trend, a run's summary, grid, filters and pages, a run in progress."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from report._html_cases import HOSTILE, case

from assay.history.compact import CaseEncoder
from assay.history.records import case_row
from assay.history.store import HistoryStore
from assay.results.model import EvalCaseResult, EvalSetResult, SetNotes
from assay.view import ViewServer, ViewSettings
from assay.view.queries import PAGE_SIZE

PASSED, FAILED, NOT_EVALUATED = 1, 2, 3
CASES = 250
HOSTILE_ID = 'case_<img src=x onerror="window.__pwned=1">'


def status_of(number: int) -> int:
    """The generated run's case statuses: every 7th fails, every 11th is not evaluated."""
    return FAILED if number % 7 == 3 else NOT_EVALUATED if number % 11 == 5 else PASSED


def make_case(eval_id: str, status: int, set_id: str = "travel", **notes: Any) -> EvalCaseResult:
    data = case(eval_id, status, score=0.25 if status == FAILED else 1.0)
    data["eval_set_id"] = set_id
    data["assay"].update(notes)
    if status == NOT_EVALUATED:
        data["overall_eval_metric_results"][0].update(score=None, eval_status=NOT_EVALUATED)
    return EvalCaseResult.model_validate(data)


def record(
    store: HistoryStore,
    results: list[EvalCaseResult],
    started: float,
    *,
    finish: bool = True,
    notes: dict[str, Any] | None = None,
) -> str:
    """A run of ``results`` (stored compactly, as ``assay eval`` stores them), its set's notes
    holding ``notes`` too."""
    run_id = store.start_run(["travel.evalset.json"], {"criteria": {}}, started=started)
    encoder = CaseEncoder()
    rows = []
    for result in results:
        encoded = encoder.encode(result)
        rows.append(case_row(result, encoded.text, encoded.new_header))
    store.write_cases(run_id, rows)
    if finish:
        passed = sum(r.final_eval_status == PASSED for r in results)
        failed = sum(r.final_eval_status == FAILED for r in results)
        header = EvalSetResult.model_construct(
            eval_set_result_id=f"{run_id}_travel",
            eval_set_id="travel",
            eval_case_results=results,
            creation_timestamp=started,
            assay=SetNotes.model_validate(
                {
                    "version": "0",
                    "duration_s": 2.0,
                    "summary": {
                        "passed": passed,
                        "failed": failed,
                        "not_evaluated": len(results) - passed - failed,
                    },
                    **(notes or {}),
                }
            ),
        )
        store.finish_run(run_id, [header], finished=started + 2)
    return run_id


@dataclass(frozen=True)
class Runs:
    history: Path
    old: str
    big: str
    running: str


BIG_RUN_COST: dict[str, Any] = {
    "usage": {"final_response_match_v2": {"prompt_tokens": 9000, "completion_tokens": 900,
                                          "calls": 250}},
    "cost_usd": {"final_response_match_v2": 0.0042},
    "max_cost_usd": 0.5,
}  # fmt: skip
"""What the big run's judge cost, as its set's notes record it."""


def write_history(history: Path) -> Runs:
    """Three runs of eval set ``travel``: three passing cases; :data:`CASES` cases, some failing
    or not evaluated, one with a hostile id, reason and metric reason; a run in progress (two
    cases so far, recorded by this live process)."""
    big = [make_case(f"case_{n:03d}", status_of(n)) for n in range(CASES - 1)]
    big.append(
        make_case(
            HOSTILE_ID,
            NOT_EVALUATED,
            reason=HOSTILE,
            metric_reasons={"tool_trajectory_avg_score": HOSTILE},
        )
    )
    with HistoryStore(history) as store:
        old = record(store, [make_case(f"old_{n}", PASSED) for n in range(3)], 1_780_000_000.0)
        big_id = record(store, big, 1_780_000_100.0, notes=BIG_RUN_COST)
        running = record(
            store, [make_case("live_0", PASSED), make_case("live_1", FAILED)], 1_780_000_200.0,
            finish=False,
        )  # fmt: skip
    return Runs(history, old, big_id, running)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return write_history(tmp_path_factory.mktemp("runs-pages") / "history.sqlite")


@pytest.fixture(scope="module")
def client(runs: Runs) -> Iterator[httpx.Client]:
    server = ViewServer(ViewSettings(runs.history)).start()
    try:
        with httpx.Client(base_url=server.url.rstrip("/"), timeout=30) as http:
            yield http
    finally:
        server.stop()


def case_ids(html: str) -> list[str]:
    """The listed cases' ``data-case`` values, in order."""
    return re.findall(r'<tr class="grid-row [^"]*" data-case="([^"]+)"', html)


def test_runs_page_lists_each_eval_sets_runs_newest_first_with_pass_rates(
    client: httpx.Client, runs: Runs
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    listed = re.findall(r'data-run="([^"]+)"', page.text)
    assert listed == [runs.running, runs.big, runs.old]
    assert f'href="/runs/{runs.big}"' in page.text
    assert "100.0%" in page.text  # the old run
    passed = sum(status_of(n) == PASSED for n in range(CASES - 1))
    assert f"{100 * passed / CASES:.1f}%" in page.text


def test_runs_page_draws_the_pass_rate_trend_and_marks_a_run_in_progress(
    client: httpx.Client, runs: Runs
) -> None:
    page = client.get("/").text
    trend = re.search(r'<svg class="trend".*?</svg>', page, re.S)
    assert trend is not None and trend.group(0).count("<circle") == 3
    assert f"{runs.running}: 50.0%" in trend.group(0)
    assert re.search(rf'data-run="{runs.running}">.*?● running', page, re.S)


def test_run_page_lists_failing_cases_first_then_not_evaluated_then_passed(
    client: httpx.Client, runs: Runs
) -> None:
    page = client.get(f"/runs/{runs.big}")
    assert page.status_code == 200
    listed = case_ids(page.text)
    assert len(listed) == PAGE_SIZE
    failed = [f"travel/case_{n:03d}/1" for n in range(CASES - 1) if status_of(n) == FAILED]
    assert listed[: len(failed)] == failed
    assert 'id="cases"' in page.text
    assert f'<section id="live" data-run="{runs.big}" data-status="finished">' in page.text
    assert f"/runs/{runs.big}/cases/travel/case_003/1" in listed_links(page.text)


def listed_links(html: str) -> str:
    return " ".join(re.findall(r'href="(/runs/[^"]+/cases/[^"]+)"', html))


def test_run_page_summary_has_counts_and_a_histogram_per_scored_metric(
    client: httpx.Client, runs: Runs
) -> None:
    page = client.get(f"/runs/{runs.big}").text
    failed = sum(status_of(n) == FAILED for n in range(CASES - 1))
    assert re.search(rf'class="stat failed"><span class="big">{failed}</span>', page)
    assert re.search(rf'<span class="big">{CASES}</span><span class="muted">cases</span>', page)
    assert page.count('<svg class="hist"') == 2  # both graded metrics, each scored 250 times


def test_run_page_shows_what_the_judges_cost_and_the_cap(client: httpx.Client, runs: Runs) -> None:
    page = client.get(f"/runs/{runs.big}").text
    assert '<td class="num">$0.0042</td>' in page  # the metric's row of the LLM use table
    assert "Judge cost: <b>$0.0042</b>" in page
    assert '<span class="cost-cap">--max-cost 0.50 not reached</span>' in page
    assert "Judge cost" not in client.get(f"/runs/{runs.old}").text  # no judge, no cost


def test_status_filter_keeps_only_cases_of_that_status(client: httpx.Client, runs: Runs) -> None:
    page = client.get(f"/runs/{runs.big}", params={"status": "FAILED"}).text
    failed = [f"travel/case_{n:03d}/1" for n in range(CASES - 1) if status_of(n) == FAILED]
    assert case_ids(page) == failed
    assert f"of {len(failed)}" in page


def test_metric_and_status_filters_select_on_that_metrics_status(
    client: httpx.Client, runs: Runs
) -> None:
    params = {"status": "not_evaluated", "metric": "tool_trajectory_avg_score"}
    page = client.get(f"/runs/{runs.big}", params=params).text
    expected = [n for n in range(CASES - 1) if status_of(n) == NOT_EVALUATED]
    assert len(case_ids(page)) == len(expected) + 1  # and the hostile case
    params = {"status": "failed", "metric": "rubric_based_final_response_quality_v1"}
    assert case_ids(client.get(f"/runs/{runs.big}", params=params).text) == []


def test_text_filter_matches_every_word_of_the_case_id(client: httpx.Client, runs: Runs) -> None:
    page = client.get(f"/runs/{runs.big}", params={"q": "case_01 TRAVEL"}).text
    assert sorted(case_ids(page)) == [f"travel/case_{n:03d}/1" for n in range(10, 20)]


def test_pages_walk_every_case_once(client: httpx.Client, runs: Runs) -> None:
    seen: list[str] = []
    for number in (1, 2, 3):
        page = client.get(f"/runs/{runs.big}", params={"page": number}).text
        seen += case_ids(page)
    assert len(seen) == len(set(seen)) == CASES
    last = client.get(f"/runs/{runs.big}", params={"page": 3, "q": "case"}).text
    assert 'rel="prev"' in last and 'rel="next"' not in last and "page 3 of 3" in last
    assert "page=2" in last and "q=case" in last


def test_a_run_is_found_by_id_prefix_or_latest_and_an_unknown_one_is_a_404(
    client: httpx.Client, runs: Runs
) -> None:
    assert f"Run {runs.big}" in client.get(f"/runs/{runs.big[:-2]}").text
    assert f"Run {runs.running}" in client.get("/runs/latest").text
    missing = client.get("/runs/19990101")
    assert missing.status_code == 404 and "no run &#39;19990101&#39;" in missing.text


def test_a_run_in_progress_shows_cases_written_since_it_was_last_read(
    client: httpx.Client, runs: Runs
) -> None:
    before = client.get(f"/runs/{runs.running}").text
    assert 'data-status="running"' in before and len(case_ids(before)) == 2
    with HistoryStore(runs.history) as store:
        result = make_case("live_2", FAILED)
        store.write_cases(runs.running, [case_row(result, CaseEncoder().encode(result).text)])
    after = client.get(f"/runs/{runs.running}").text
    assert case_ids(after)[:2] == ["travel/live_1/1", "travel/live_2/1"]
    assert len(case_ids(after)) == 3


def test_hostile_case_text_is_escaped_on_the_run_page(client: httpx.Client, runs: Runs) -> None:
    page = client.get(f"/runs/{runs.big}", params={"status": "not_evaluated"}).text
    assert "<img src=x" not in page and "<script>window" not in page
    assert "&lt;img src=x onerror=" in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page  # the case's reason


def test_the_view_indexes_the_newest_runs_as_it_starts_and_none_when_told_not_to(
    runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.view.queries import Queries, warm

    with HistoryStore(runs.history) as store:
        warmed = Queries(store)
        warm(warmed)
        monkeypatch.setenv("ASSAY_VIEW_WARM_RUNS", "0")
        cold = Queries(store)
        warm(cold)

    assert list(warmed._indexes) == [runs.running, runs.big]  # the two newest, newest first
    assert len(warmed._indexes[runs.big][0]) == CASES
    assert not cold._indexes
