"""The case page over real HTTP, on runs recorded into a real history: the conversation with
tool calls and their results, expected and actual calls side by side, the answer's word diff,
every metric's why, every judge sample with the decision counted and the card behind the
agreement figure, neighbours in the run's order, hostile text escaped, and a 404 page (not a
traceback) for what is not there."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest
from _judge_server import JudgeServer
from markupsafe import escape
from report._html_cases import ALIGNED_RULE, HOSTILE, IMG, SCRIPT

from assay.history.store import HistoryStore
from assay.report.judge_agreement import figure_words
from assay.report.why import why
from assay.results.keys import CaseKey
from assay.view.context import ViewSettings
from assay.view.diffing import tokens, word_diff
from assay.view.pages.case import case_url, margin, rationale
from assay.view.server import ViewServer
from view._case_runs import HOSTILE_SET, RUBRIC, Recorded, judge_card, record_all

SET = "travel_assistant"


@pytest.fixture(scope="module")
def recorded(approving_judge: JudgeServer, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record_all(tmp_path_factory.mktemp("case-page"), approving_judge)


@pytest.fixture(scope="module")
def client(recorded: Recorded) -> Iterator[httpx.Client]:
    server = ViewServer(ViewSettings(history=recorded.history)).start()
    try:
        with httpx.Client(base_url=server.url.rstrip("/"), timeout=30) as http:
            yield http
    finally:
        server.stop()


def _page(client: httpx.Client, run: str, key: CaseKey) -> str:
    response = client.get(case_url(run, key))
    assert response.status_code == 200, response.text[-2000:]
    return response.text


def test_a_failing_case_shows_the_conversation_with_tool_results_and_calls_side_by_side(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.candidate, CaseKey(SET, "book_flight_lisbon", 1))
    assert "Find me a flight from Berlin to Lisbon on 12 May." in page  # the user's turn
    assert "travel_assistant: Let me search for flights." in page  # the agent's step
    assert "search_flights(" in page and "returned" in page
    assert escape('{"confirmation": "QX7P2L"}') in page  # book_flight's result, by call id
    side = page.split('class="trajectory side-by-side"')[2]  # the second turn's calls
    assert 'class="mismatch"' in side.split("</table>")[0]
    assert '<span class="badge failed">failed</span>' in page


def test_the_answer_diff_marks_words_only_expected_and_only_actual(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.candidate, CaseKey(SET, "book_flight_lisbon", 1))
    diff = page.split('<p class="diff">')[2].split("</p>")[0]
    assert "<del>" in diff and "<ins>" in diff
    assert "<ins>Confirmation</ins>" in diff


def test_every_metric_shows_the_why_line_the_report_gives(
    client: httpx.Client, recorded: Recorded
) -> None:
    key = CaseKey(SET, "book_flight_lisbon", 1)
    with HistoryStore(recorded.history) as store:
        result = store.done_cases(recorded.candidate)[key]
    page = _page(client, recorded.candidate, key)
    metrics = page.split('id="metrics"')[1].split("</table>")[0]
    lines = [why(result, row) for row in result.overall_eval_metric_results]
    assert any(lines)
    for row, line in zip(result.overall_eval_metric_results, lines, strict=True):
        assert row.metric_name.split("_")[0] in metrics
        assert str(escape(line)) in metrics


def test_judge_samples_show_the_judges_answer_beside_the_decision_counted(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.hostile, CaseKey(HOSTILE_SET, "aligned_case", 1))
    judged = page.split(f'id="judged-{RUBRIC}"')[1].split("</section>")[0]
    samples = judged.split('class="samples"')[1].split("</table>")[0]
    assert "answers: yes" in samples and "P(yes) 0.94" in samples  # the judge's own answer
    assert "answers: no" in samples  # the decision the metric counted
    assert str(escape(ALIGNED_RULE)) in samples
    assert 'class="overridden"' in samples
    assert "yes 0, no 1, none 0" in judged  # the rubric's votes


def test_the_agreement_figure_links_the_judge_card_behind_it(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.hostile, CaseKey(HOSTILE_SET, "hostile_case", 1))
    with closing(sqlite3.connect(recorded.history)) as db:
        query = "SELECT id FROM judge_cards WHERE criterion = ?"
        (card_id,) = db.execute(query, (RUBRIC,)).fetchone()
    words = figure_words(RUBRIC, judge_card().agreement_info()).text
    assert str(escape(words)) in page
    assert f'<a href="/cards/{card_id}">judge card</a>' in page


def test_an_unmeasured_judge_says_so_and_links_no_card(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.candidate, CaseKey(SET, "forecast_paris", 1))
    assert "judge agreement not measured" in page
    assert 'href="/cards/' not in page


def test_hostile_agent_user_tool_and_judge_text_is_escaped(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.hostile, CaseKey(HOSTILE_SET, "hostile_case", 1))
    assert SCRIPT not in page and IMG not in page and "<img" not in page
    assert page.count("window.__pwned") >= 4  # user, agent, rationale, tool argument: as text
    assert str(escape(f"user says {HOSTILE}")) in page
    assert str(escape(f"judge says {HOSTILE}")) in page


def test_previous_and_next_follow_the_runs_order(client: httpx.Client, recorded: Recorded) -> None:
    with HistoryStore(recorded.history) as store:
        keys = list(store.done_cases(recorded.base))
    assert len(keys) >= 3
    page = _page(client, recorded.base, keys[1])
    assert f'href="{case_url(recorded.base, keys[0])}" rel="prev"' in page
    assert f'href="{case_url(recorded.base, keys[2])}" rel="next"' in page
    first = _page(client, recorded.base, keys[0])
    assert 'rel="prev"' not in first and f"case 1 of {len(keys)}" in first


def test_latest_and_an_id_prefix_name_the_run(client: httpx.Client, recorded: Recorded) -> None:
    key = CaseKey(HOSTILE_SET, "fine_case", 1)
    latest = _page(client, "latest", key)
    prefixed = _page(client, recorded.hostile[:-2], key)
    assert f"run {recorded.hostile}" in latest and f"run {recorded.hostile}" in prefixed


@pytest.mark.parametrize(
    "path",
    [
        "/runs/latest/cases/hostile_set/no_such_case/1",
        "/runs/latest/cases/hostile_set/fine_case/7",
        "/runs/no-such-run/cases/hostile_set/fine_case/1",
    ],
)
def test_what_is_not_there_is_a_404_page_not_a_traceback(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text and "No such" in response.text


def test_the_word_diff_joins_back_to_both_answers() -> None:
    expected, actual = "Booked it, flight AF123 to Lisbon.", "Booked: flight AF124 to Lisbon today."
    pieces = word_diff(expected, actual)
    assert "".join(p.text for p in pieces if p.kind != "ins") == expected
    assert "".join(p.text for p in pieces if p.kind != "del") == actual
    assert [p.text for p in pieces if p.kind == "del"] == [" it,", "AF123"]
    assert "".join(tokens(expected)) == expected
    assert [p.kind for p in word_diff(expected, expected)] == ["same"]


def test_the_vote_margin_says_how_close_a_verdict_was() -> None:
    assert margin({"valid": 3, "invalid": 2, "none": 0}) == "3 valid to 2 invalid (margin 1)"
    assert margin({"yes": 2, "no": 2}) == "tied, 2 yes to 2 no"
    assert margin({"safe": 3, "unsafe": 0}) == "unanimous, 3 safe"
    assert margin({"valid": 1, "none": 0}) == "1 valid (one sample)"
    assert margin(None) == ""


def test_the_rationale_is_read_from_the_judges_json_answer() -> None:
    assert rationale('{"reasoning": "it books the wrong flight", "verdict": "no"}') == (
        "it books the wrong flight"
    )
    assert rationale("not json") == ""


def test_case_urls_quote_their_parts() -> None:
    assert case_url("r1", CaseKey("a set", "x/y", 2)) == "/runs/r1/cases/a%20set/x%2Fy/2"


def test_a_scenario_cases_user_turns_are_the_simulated_users(
    client: httpx.Client, recorded: Recorded
) -> None:
    page = _page(client, recorded.base, CaseKey(SET, "book_cheapest_and_convert", 1))
    assert '<span class="who">simulated user</span>' in page
    assert "(no expected invocation)" in page
