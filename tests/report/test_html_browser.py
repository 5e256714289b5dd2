"""The HTML report in a real headless Chromium: it renders, filters, opens cases, runs no data.

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package. Without them
these tests are skipped, unless ``ASSAY_REQUIRE_BROWSER=1`` (set by CI), when they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.report.html import write_html
from report._html_cases import HOSTILE, case, results

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)
PASSED, FAILED, NOT_EVALUATED = 1, 2, 3


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is not installed"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A headless Chromium driven through chromedriver, with its own empty profile."""
    missing = _missing()
    if missing:
        if os.environ.get("ASSAY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"ASSAY_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(f"no headless browser: {missing}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, tmp_path: Path, *cases: dict[str, Any]) -> None:
    page = tmp_path / "report.html"
    write_html(page, [results(*cases)])
    browser.get(page.as_uri())


def _shown_ids(browser: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [
        el.find_element(By.CSS_SELECTOR, ".case-id").text
        for el in browser.find_elements(By.CSS_SELECTOR, "details.case")
        if el.is_displayed()
    ]


def test_page_renders_summary_and_cases(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, tmp_path, case("book_lisbon", PASSED), case("book_porto", FAILED, score=0.0))
    summary = browser.find_element(By.ID, "summary")
    assert "50.0%" in summary.text
    assert "tool_trajectory_avg_score" in summary.text
    assert browser.find_elements(By.CSS_SELECTOR, "#summary svg.hist rect")
    assert _shown_ids(browser) == ["book_lisbon", "book_porto"]


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
    assert _shown_ids(browser) == ["book_lisbon", "book_porto"]
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
    details.find_element(By.TAG_NAME, "summary").click()
    body = details.find_element(By.CSS_SELECTOR, ".case-body")
    assert body.is_displayed()
    assert "FR1234 is booked." in body.text
    assert details.find_elements(By.CSS_SELECTOR, "table.trajectory tr.match")


def test_hostile_agent_output_does_not_run(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    hostile = case(HOSTILE, FAILED, user=HOSTILE, agent=HOSTILE, rationale=HOSTILE)
    _open(browser, tmp_path, hostile)
    details = browser.find_element(By.CSS_SELECTOR, "details.case")
    details.find_element(By.TAG_NAME, "summary").click()
    body = details.find_element(By.CSS_SELECTOR, ".case-body")
    assert "<script>window.__pwned=1</script>" in body.text  # shown as text
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert not browser.find_elements(By.CSS_SELECTOR, "#case-list img")
