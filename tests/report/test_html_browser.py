"""The HTML report in a real headless Chromium: it renders, filters, opens cases, runs no data.

The browser comes from ``tests/_browser.py``: skipped without Chromium, unless
``ASSAY_REQUIRE_BROWSER=1`` (set by CI), when the tests fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _browser
from compare._results import priced

from assay.report.html import write_html
from report._html_cases import ALIGNED_RULE, HOSTILE, aligned_case, case, results

browser = _browser.browser

PASSED, FAILED, NOT_EVALUATED = 1, 2, 3


def _open(browser: Any, tmp_path: Path, *cases: dict[str, Any]) -> None:
    page = tmp_path / "report.html"
    write_html(page, [results(*cases)])
    browser.get(page.as_uri())


def _expand(details: Any) -> Any:
    """Click a case's header and wait for its body, which the page builds on the toggle event."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    details.find_element(By.TAG_NAME, "summary").click()
    return WebDriverWait(details.parent, 5).until(
        lambda _: details.find_element(By.CSS_SELECTOR, ".case-body")
    )


def _shown_ids(browser: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [
        el.find_element(By.CSS_SELECTOR, ".case-id").text
        for el in browser.find_elements(By.CSS_SELECTOR, "details.case")
        if el.is_displayed()
    ]


def test_page_renders_summary_and_cases(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run = results(case("book_lisbon", PASSED), case("book_porto", FAILED, score=0.0))
    priced(run, {"final_response_match_v2": 0.0042}, cap=0.5)
    write_html(tmp_path / "report.html", [run])
    browser.get((tmp_path / "report.html").as_uri())
    summary = browser.find_element(By.ID, "summary")
    assert "50.0%" in summary.text
    assert "tool_trajectory_avg_score" in summary.text
    cost = browser.find_element(By.CSS_SELECTOR, "#summary p.cost")
    assert cost.text == "Judge cost: $0.0042 · --max-cost 0.50 not reached"
    assert not browser.find_elements(By.CSS_SELECTOR, "#summary svg.hist")  # two scores
    assert _shown_ids(browser) == ["book_porto", "book_lisbon"]  # the failed case first


def test_text_and_status_filters_hide_other_cases(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(
        browser,
        tmp_path,
        case("book_lisbon", PASSED),
        case("book_porto", FAILED, score=0.0),
        case("weather_paris", PASSED),
    )
    box = browser.find_element(By.ID, "filter-text")
    box.send_keys("book")
    assert _shown_ids(browser) == ["book_porto", "book_lisbon"]
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("failed")
    assert _shown_ids(browser) == ["book_porto"]
    assert browser.find_element(By.ID, "shown-count").text == "1 of 3 cases"
    box.clear()
    box.send_keys("paris")
    assert _shown_ids(browser) == []


def test_clicking_a_case_opens_its_conversation(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, tmp_path, case("book_lisbon", PASSED, agent="FR1234 is booked."))
    details = browser.find_element(By.CSS_SELECTOR, "details.case")
    assert not details.find_elements(By.CSS_SELECTOR, ".case-body")
    body = _expand(details)
    assert body.is_displayed()
    assert "FR1234 is booked." in body.text
    assert details.find_elements(By.CSS_SELECTOR, "table.trajectory tr.match")


def test_hostile_agent_output_does_not_run(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    hostile = case(HOSTILE, FAILED, user=HOSTILE, agent=HOSTILE, rationale=HOSTILE)
    _open(browser, tmp_path, hostile)
    details = browser.find_element(By.CSS_SELECTOR, "details.case")
    body = _expand(details)
    assert "<script>window.__pwned=1</script>" in body.text  # shown as text
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert not browser.find_elements(By.CSS_SELECTOR, "#case-list img")


def test_opened_case_shows_mismatch_judge_tables_labels_and_usage(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    wrong = case(
        "wrong_city",
        FAILED,
        score=0.0,
        rationale="grounded in the tool output",
        actual_calls=[{"name": "search_flights", "args": {"to": "OPO"}}],
        expected_calls=[{"name": "search_flights", "args": {"to": "LIS"}}],
    )
    _open(browser, tmp_path, wrong)
    details = browser.find_element(By.CSS_SELECTOR, "details.case")
    _expand(details)
    row = details.find_element(By.CSS_SELECTOR, "table.trajectory tbody tr")
    assert row.get_attribute("class") == "mismatch"
    assert [td.text for td in row.find_elements(By.TAG_NAME, "td")] == [
        "1",
        'search_flights({"to": "OPO"})',
        'search_flights({"to": "LIS"})',
    ]
    sample = details.find_element(By.CSS_SELECTOR, "table.samples tbody tr").text
    assert "answers: yes" in sample and "grounded in the tool output" in sample
    rubric = details.find_element(By.CSS_SELECTOR, "table.rubrics tbody tr").text
    assert "It answers." in rubric and "yes 1, no 0, none 0" in rubric
    label = details.find_element(By.CSS_SELECTOR, "table.sentences tbody tr")
    assert label.get_attribute("class") == "label-contradictory"
    usage = details.find_element(By.CSS_SELECTOR, "table.usage").text
    assert "rubric_based_final_response_quality_v1 1 120 7 0" in usage
    assert "openai:stub (from ASSAY_JUDGE_MODEL)" in details.text


def test_hostile_text_in_every_field_stays_text(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    calls = [{"name": HOSTILE, "args": {"q": HOSTILE}}]
    hostile = case(
        HOSTILE,
        FAILED,
        user=HOSTILE,
        agent=HOSTILE,
        rationale=HOSTILE,
        actual_calls=calls,
        expected_calls=[{"name": "x", "args": {}}],
    )
    _open(browser, tmp_path, hostile)
    details = browser.find_element(By.CSS_SELECTOR, "details.case")
    assert HOSTILE in details.find_element(By.CSS_SELECTOR, ".case-id").text
    body = _expand(details)
    assert body.text.count(HOSTILE) >= 6  # user, agent, sentence, rationales, tool call
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert not browser.find_elements(By.TAG_NAME, "img")
    scripts = browser.find_elements(By.TAG_NAME, "script")
    assert [el.get_attribute("type") for el in scripts] == ["application/json", ""]


def test_each_case_opens_its_own_body_also_from_the_address(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(
        browser, tmp_path, case("a", PASSED, agent="answer A"), case("b", PASSED, agent="answer B")
    )
    second = browser.find_elements(By.CSS_SELECTOR, "details.case")[1]
    assert "answer B" in _expand(second).text
    second.find_element(By.TAG_NAME, "summary").click()  # closed and opened again: built once
    second.find_element(By.TAG_NAME, "summary").click()
    assert len(second.find_elements(By.CSS_SELECTOR, ".case-body")) == 1
    browser.get("about:blank")  # a fresh load, not a jump within the page
    browser.get((tmp_path / "report.html").as_uri() + "#c0")
    first = browser.find_element(By.ID, "c0")
    assert first.get_attribute("open") is not None  # opened by the page's script on load
    assert "answer A" in first.find_element(By.CSS_SELECTOR, ".case-body").text


def test_an_aligned_verdict_shows_the_judges_answer_and_the_decision_beside_it(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, tmp_path, aligned_case())
    details = browser.find_element(By.CSS_SELECTOR, "details.case")
    _expand(details)

    row = details.find_element(By.CSS_SELECTOR, "table.samples tbody tr")
    verdict, answer = row.find_elements(By.TAG_NAME, "td")[2:4]
    assert verdict.text.split("\n") == ["answers: yes", "P(yes) 0.94"]
    assert '"verdict": "yes"' in answer.find_element(By.TAG_NAME, "pre").text
    aligned = answer.find_element(By.CSS_SELECTOR, ".aligned")
    assert aligned.is_displayed()
    assert aligned.text.startswith('judge said "yes" (P(yes) 0.94); aligned to "no": ')
    assert ALIGNED_RULE in aligned.text
