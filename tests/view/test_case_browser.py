"""The case and compare pages in a real headless Chromium: a failing case of the travel example
shows its conversation, the answer's diff and its calls side by side; a hostile case runs
nothing; the comparison draws each interval and its flipped cases open their case pages;
neither page scrolls sideways at 800 px. Screenshots at 1400 and 800 px wide (under the test's
folder, and under $ASSAY_SCREENSHOTS when set)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import pytest
from _judge_server import JudgeServer

from assay.results.keys import CaseKey
from assay.view.context import ViewSettings
from assay.view.pages.case import case_url
from assay.view.server import ViewServer
from view._case_runs import HOSTILE_SET, Recorded, record_all
from view._pages import screenshots

browser = _browser.browser


@pytest.fixture(scope="module")
def recorded(approving_judge: JudgeServer, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record_all(tmp_path_factory.mktemp("case-browser"), approving_judge)


@pytest.fixture(scope="module")
def base_url(recorded: Recorded) -> Iterator[str]:
    server = ViewServer(ViewSettings(history=recorded.history)).start()
    try:
        yield server.url.rstrip("/")
    finally:
        server.stop()


def _shown(browser: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return [el for el in browser.find_elements(By.CSS_SELECTOR, selector) if el.is_displayed()]


def test_a_failing_case_shows_its_conversation_diff_and_calls(
    browser: Any, base_url: str, recorded: Recorded, tmp_path: Path
) -> None:
    key = CaseKey("travel_assistant", "book_flight_lisbon", 1)
    browser.get(base_url + case_url(recorded.candidate, key))
    assert "book_flight_lisbon" in _shown(browser, "h1.case-title")[0].text
    assert _shown(browser, "p.diff del") and _shown(browser, "p.diff ins")
    assert _shown(browser, "table.side-by-side tr.mismatch")
    assert any("QX7P2L" in el.text for el in _shown(browser, ".msg.tool"))
    assert _shown(browser, "table.samples") and _shown(browser, "#metrics .badge.failed")
    assert len(screenshots(browser, "case-failing", tmp_path, fits=True)) >= 2


def test_a_hostile_case_runs_none_of_its_text(
    browser: Any, base_url: str, recorded: Recorded, tmp_path: Path
) -> None:
    browser.get(base_url + case_url(recorded.hostile, CaseKey(HOSTILE_SET, "hostile_case", 1)))
    assert browser.execute_script("return window.__pwned === undefined")
    assert any("onerror" in el.text for el in _shown(browser, ".msg.user .text"))
    assert _shown(browser, 'a[href^="/cards/"]')  # the card behind the agreement figure
    screenshots(browser, "case-hostile", tmp_path, fits=True)
    assert browser.execute_script("return window.__pwned === undefined")


def test_the_comparison_draws_intervals_and_opens_a_flipped_case(
    browser: Any, base_url: str, recorded: Recorded, tmp_path: Path
) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{base_url}/compare?a={recorded.base}&b={recorded.candidate}")
    assert len(_shown(browser, "svg.ci circle.dot")) >= 2
    assert _shown(browser, "#to-fail li")
    screenshots(browser, "compare", tmp_path, fits=True)
    _shown(browser, "#to-fail a.candidate-case")[0].click()
    WebDriverWait(browser, 5).until(lambda b: "/cases/" in b.current_url)
    assert recorded.candidate in browser.current_url
    assert _shown(browser, "h1.case-title .badge.failed")


def test_the_compare_form_picks_two_runs(browser: Any, base_url: str, recorded: Recorded) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{base_url}/compare")
    browser.find_element(By.CSS_SELECTOR, "form.pick button").click()
    WebDriverWait(browser, 5).until(lambda b: "a=" in b.current_url)
    assert _shown(browser, "#metric-changes")
    assert f"a={recorded.base}" in browser.current_url
