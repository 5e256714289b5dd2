"""The runs page and a run page in a real headless Chromium, over the travel example's two
recorded runs: the trend and the runs, the grid with failing cases first, the status filter
applied by the page's script, and screenshots at 1400 and 800 px wide."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import pytest
from _judge_server import JudgeServer

from assay.view import ViewServer, ViewSettings
from view._case_runs import record_example
from view._pages import screenshots

browser = _browser.browser


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, approving_judge: JudgeServer
) -> Iterator[tuple[ViewServer, str]]:
    folder = tmp_path_factory.mktemp("runs-browser")
    history = folder / "history.sqlite"
    _, regressed = record_example(history, approving_judge, folder / "cache")
    server = ViewServer(ViewSettings(history)).start()
    try:
        yield server, regressed
    finally:
        server.stop()


def test_runs_page_shows_the_example_runs_with_their_trend(
    browser: Any, served: tuple[ViewServer, str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    server, regressed = served
    browser.get(server.url)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.run-row")
    assert rows, f"no runs listed; the page said: {browser.find_element(By.TAG_NAME, 'main').text}"
    assert rows[0].get_attribute("data-run") == regressed
    assert browser.find_element(By.CSS_SELECTOR, "svg.trend polyline").is_displayed()
    assert browser.execute_script("return window.__pwned") is None
    for path in screenshots(browser, "runs", tmp_path, fits=True):
        assert path.stat().st_size > 10_000


def test_run_page_filters_failing_cases_with_the_status_select(
    browser: Any, served: tuple[ViewServer, str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    server, regressed = served
    browser.get(server.url)
    browser.find_element(By.CSS_SELECTOR, f'tr[data-run="{regressed}"] a').click()
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "cases"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#cases tr.grid-row")
    statuses = [row.get_attribute("data-status") for row in rows]
    assert "failed" in statuses and statuses == sorted(
        statuses, key=["failed", "not-evaluated", "passed"].index
    )
    shots = screenshots(browser, "run", tmp_path)
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("FAILED")
    WebDriverWait(browser, 10).until(lambda b: "status=FAILED" in b.current_url)
    shown = browser.find_elements(By.CSS_SELECTOR, "#cases tr.grid-row")
    assert shown and all(row.get_attribute("data-status") == "failed" for row in shown)
    assert len(shown) == statuses.count("failed")
    shots += screenshots(browser, "run-failed", tmp_path)
    assert all(path.stat().st_size > 10_000 for path in shots)
