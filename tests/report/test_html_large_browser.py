"""The large run's HTML report in a real headless Chromium: it loads, shows the aggregates, pages
to a late failing case, finds a case listed by name and opens a case's body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _browser
import pytest

from assay.report import html_large
from assay.report.html import write_html
from report._html_cases import case
from report._lazy import CountedCases, lazy_result, many

browser = _browser.browser
CASES = 5_000


@pytest.fixture(scope="module")
def large_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5,000 cases, 500 that did not pass: 300 shown in full (two pages), 200 by name."""
    cases = CountedCases(many(CASES, 10, case("x", 1, score=0.9)))
    page = tmp_path_factory.mktemp("large") / "report.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(html_large, "FULL_CASES", 300)
        write_html(page, [lazy_result(cases)])
    return page


def _visible(browser: Any, selector: str) -> list[str]:
    """The ids of the elements ``selector`` picks that are laid out (one round trip)."""
    script = (
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".filter(function (e) { return e.getClientRects().length > 0; })"
        ".map(function (e) { return e.id; });"
    )
    return list(browser.execute_script(script, selector))


def test_a_large_run_loads_with_its_aggregates_and_pages_to_a_late_failing_case(
    browser: Any, large_page: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(large_page.as_uri())
    # what keeps it quick to load: fewer elements than cases (not one per case, let alone a body)
    elements = browser.execute_script("return document.getElementsByTagName('*').length;")
    assert 500 < elements < CASES
    summary = browser.find_element(By.ID, "summary").text
    assert "4500" in summary and "90.0%" in summary and "tool_trajectory_avg_score" in summary
    assert browser.find_element(By.ID, "page-label").text == "page 1 of 2"
    assert len(_visible(browser, "details.case")) == 200
    late = browser.find_element(By.ID, "c250")  # case-02509, on the second page
    assert not late.is_displayed()
    browser.find_element(By.ID, "page-next").click()
    assert late.is_displayed() and "case-02509" in late.text
    assert browser.find_element(By.ID, "page-label").text == "page 2 of 2"
    late.find_element(By.TAG_NAME, "summary").click()
    assert _case_body(browser, late).is_displayed()


def test_a_case_listed_by_name_is_found_by_the_filter(browser: Any, large_page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(large_page.as_uri())
    box = browser.find_element(By.ID, "filter-text")
    box.send_keys("case-04999")
    found = _visible(browser, "details.case, #more-cases li")
    assert found == ["m199"]
    assert "1 of 500 cases found" in browser.find_element(By.ID, "shown-count").text
    box.clear()
    box.send_keys(" ")  # an empty filter: back to one page at a time
    assert len(_visible(browser, "details.case")) == 200


def test_a_link_to_a_case_on_a_later_page_opens_it(browser: Any, large_page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(large_page.as_uri() + "#c299")
    target = browser.find_element(By.ID, "c299")
    assert target.is_displayed() and target.get_attribute("open") is not None
    assert _case_body(browser, target).is_displayed()


def _case_body(browser: Any, case: Any) -> Any:
    """A case's body, which the page builds when the case is opened: on the ``toggle`` event,
    which the browser fires after the click returns (waited for, up to 10 s on a busy machine)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def built(_driver: Any) -> Any:
        found = case.find_elements(By.CSS_SELECTOR, ".case-body")
        return found[0] if found else False

    return WebDriverWait(browser, 10).until(built)
