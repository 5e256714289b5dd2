"""The report of the travel example's agent run (one case fails: ``convert_currency``, third in
the eval set) in a real headless Chromium: the first screen names the failed case, the
informational metrics read as values with units, not pass rates, the n/a pill says "n/a", and
nothing overflows at 700 px.

The browser comes from ``tests/_browser.py``: skipped without Chromium, unless
``ASSAY_REQUIRE_BROWSER=1`` (set by CI), when the tests fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import pytest
from _support import Example, RunCli

browser = _browser.browser

FAILED_CASE = "convert_currency"
INFORMATIONAL = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)


@pytest.fixture
def report(run_cli: RunCli, example: Example, tmp_path: Path) -> Path:
    page = tmp_path / "report.html"
    agent = f"{example.dir / 'agent.py'}:travel_agent"
    run = run_cli(
        "eval", example.evalset, "--agent", agent, "--html", page, "--no-progress", "--no-history"
    )
    assert run.code == 1, run.output  # convert_currency fails, as the example's README says
    return page


@pytest.fixture
def sized(browser: Any) -> Iterator[Any]:
    """The browser, its viewport resized by :func:`_viewport`, put back afterwards."""
    yield browser
    browser.set_window_size(1280, 1000)


def _viewport(browser: Any, width: int, height: int) -> None:
    """Make the page's viewport (not the window) ``width`` x ``height`` CSS pixels."""
    browser.set_window_size(width, height)
    inner_w, inner_h = browser.execute_script("return [innerWidth, innerHeight]")
    browser.set_window_size(2 * width - inner_w, 2 * height - inner_h)


def _in_first_screen(browser: Any, element: Any) -> bool:
    return bool(
        browser.execute_script(
            "var r = arguments[0].getBoundingClientRect();"
            "return r.width > 0 && r.top >= 0 && r.bottom <= innerHeight"
            " && r.left >= 0 && r.right <= innerWidth;",
            element,
        )
    )


def test_the_first_screen_names_the_failed_case_and_shows_it_first_in_the_grid(
    sized: Any, report: Path
) -> None:
    from selenium.webdriver.common.by import By

    _viewport(sized, 1280, 800)
    sized.get(report.as_uri())
    named = sized.find_elements(By.CSS_SELECTOR, "#overview .verdict a.case-link")
    assert [link.text for link in named] == [FAILED_CASE]
    assert _in_first_screen(sized, named[0])
    rows = sized.find_elements(By.CSS_SELECTOR, "#overview table.grid tbody tr")
    assert rows[0].find_element(By.TAG_NAME, "th").text == FAILED_CASE
    assert _in_first_screen(sized, rows[0])
    failed = rows[0].find_elements(By.CSS_SELECTOR, "td.cell.failed")
    assert [cell.text for cell in failed] == ["0.00"]  # tool_trajectory_avg_score
    cases = sized.find_elements(By.CSS_SELECTOR, "#case-list details.case .case-id")
    assert cases[0].text == FAILED_CASE  # the case list, failed cases first, too


def test_a_grid_link_opens_the_case_in_the_list(sized: Any, report: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sized.get(report.as_uri())
    sized.find_element(By.CSS_SELECTOR, "#overview .verdict a.case-link").click()
    details = sized.find_element(By.CSS_SELECTOR, "#case-list details.case")
    WebDriverWait(sized, 5).until(lambda _: details.get_attribute("open") is not None)
    assert details.find_element(By.CSS_SELECTOR, ".case-body").is_displayed()


def test_informational_metrics_are_values_with_units_not_pass_rates(
    sized: Any, report: Path
) -> None:
    from selenium.webdriver.common.by import By

    sized.get(report.as_uri())
    graded = sized.find_element(By.CSS_SELECTOR, "#summary table.metrics").text
    assert not any(name in graded for name in INFORMATIONAL)
    measures = sized.find_element(By.CSS_SELECTOR, "#summary table.measures")
    headings = [th.text for th in measures.find_elements(By.CSS_SELECTOR, "thead th")]
    assert not any("Passed" in heading or "Failed" in heading for heading in headings)
    values = {
        row.find_elements(By.TAG_NAME, "td")[0].text: row.find_elements(By.TAG_NAME, "td")[1].text
        for row in measures.find_elements(By.CSS_SELECTOR, "tbody tr")
    }
    assert set(values) == set(INFORMATIONAL)
    assert values["invocation_duration_v1"].endswith(" ms")  # the agent answers in under 1 s
    assert values["token_usage_v1"] == "-"  # the plain-Python agent reports no tokens
    heads = sized.find_elements(By.CSS_SELECTOR, "#overview th.grid-metric")
    assert [h.text.replace("\n", "") for h in heads][-4:] == [
        "tool calls",
        "model calls",
        "tokens",
        "duration",
    ]


def test_the_not_applicable_pill_reads_n_slash_a(sized: Any, report: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sized.get(report.as_uri())
    details = sized.find_element(By.CSS_SELECTOR, "#case-list details.case")
    details.find_element(By.TAG_NAME, "summary").click()
    WebDriverWait(sized, 5).until(lambda _: details.find_elements(By.CSS_SELECTOR, ".case-body"))
    pills = details.find_elements(By.CSS_SELECTOR, "table.metric-rows .badge.n-a")
    assert pills and {pill.text for pill in pills} == {"n/a"}


def test_nothing_overflows_the_page_at_700_pixels(sized: Any, report: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _viewport(sized, 700, 800)
    sized.get(report.as_uri())
    for details in sized.find_elements(By.CSS_SELECTOR, "#case-list details.case"):
        sized.execute_script("arguments[0].open = true;", details)
    WebDriverWait(sized, 5).until(
        lambda _: len(sized.find_elements(By.CSS_SELECTOR, ".case-body")) == 5
    )
    page, shown = sized.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert page <= shown, (page, shown)
    table = sized.find_element(By.CSS_SELECTOR, "#case-list table.metric-rows")
    right = sized.execute_script("return arguments[0].getBoundingClientRect().right", table)
    assert right <= shown
