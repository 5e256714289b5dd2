"""The whole loop in a real headless Chromium, as a person takes it: open the example's recorded
run through a view that asks a key, filter its failing cases, open one, label five verdicts with
the keyboard, export the labels file, run agree from the page, and see the new judge card beside
the verdicts of the case."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import httpx
import pytest
import yaml
from _judge_server import JudgeServer
from _support import Example

from assay.history.store import HistoryStore
from assay.view import ViewServer, ViewSettings
from view._pages import judge_env, record_run

browser = _browser.browser
KEY = "journey-key-0000"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, approving_judge: JudgeServer
) -> Iterator[tuple[ViewServer, Path, str]]:
    folder = tmp_path_factory.mktemp("journey")
    history, run_id = record_run(folder, approving_judge, Example().regressed)  # 2 fail
    with pytest.MonkeyPatch.context() as patch:  # the judge agree runs from the page
        judge_env(patch, approving_judge, folder / "cache")
        server = ViewServer(ViewSettings(history, key=KEY, labeller="ana")).start()
        try:
            yield server, history, run_id
        finally:
            server.stop()


def _wait(browser: Any, check: Any, seconds: float = 30) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds).until(check)


def _queue_key(browser: Any) -> str | bool:
    from selenium.webdriver.common.by import By

    try:
        found = browser.find_element(By.CSS_SELECTOR, '[data-view="label-queue"]')
        return str(found.get_attribute("data-key"))
    except Exception:  # the page is reloading
        return False


def _label_five(browser: Any, base: str, run_id: str) -> None:
    """Five verdicts labelled on the queue with y / n / digit keys."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/label?run={run_id}")
    key = _wait(browser, _queue_key)
    for number in range(5):
        choices = browser.find_elements(By.CSS_SELECTOR, ".queue button[data-label]")
        press = ("y" if number % 2 == 0 else "n") if len(choices) == 2 else "1"
        ActionChains(browser).send_keys(press).perform()
        before = key
        key = _wait(browser, lambda b, was=before: (k := _queue_key(b)) and k != was and k)


def test_a_person_filters_opens_labels_exports_and_sees_the_judges_new_card(
    browser: Any, served: tuple[ViewServer, Path, str]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    server, history, run_id = served
    base = f"http://127.0.0.1:{server.port}"
    assert httpx.get(f"{base}/").status_code == 401  # the view asks its key

    browser.get(server.url)  # the printed URL: its ?key= is kept as a cookie from here on
    browser.find_element(By.CSS_SELECTOR, f'a[href="/runs/{run_id}"]').click()
    Select(browser.find_element(By.ID, "filter-status")).select_by_value("FAILED")
    _wait(browser, lambda b: "status=FAILED" in b.current_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "#cases tr[data-case]")
    assert sorted(row.get_attribute("data-case") for row in rows) == [
        "travel_assistant/book_flight_lisbon/1",
        "travel_assistant/convert_currency/1",
    ]
    rows = [r for r in rows if r.get_attribute("data-case").split("/")[1] == "book_flight_lisbon"]
    rows[0].find_element(By.CSS_SELECTOR, "a[href*='/cases/']").click()
    _wait(browser, lambda b: "/cases/travel_assistant/book_flight_lisbon/1" in b.current_url)
    case_url = browser.current_url
    assert "judge agreement not measured" in browser.page_source

    _label_five(browser, base, run_id)
    with HistoryStore(history) as store:
        assert len(store.labels.of_run(run_id, "ana")) == 5

    exported = httpx.get(f"{base}/runs/{run_id}/labels.yaml", headers={"X-Assay-Key": KEY})
    assert exported.status_code == 200
    assert len(yaml.safe_load(exported.text)["labels"]) == 5

    browser.get(f"{base}/runs/{run_id}/agree")
    browser.find_element(By.ID, "run-agree").click()
    _wait(
        browser,
        lambda b: (
            b.find_elements(By.CSS_SELECTOR, "table.cards tr[data-card]")
            or b.find_elements(By.CSS_SELECTOR, "p.problem")
        ),
        60,
    )
    assert not browser.find_elements(By.CSS_SELECTOR, "p.problem")
    made = {
        row.get_attribute("data-card")
        for row in browser.find_elements(By.CSS_SELECTOR, "table.cards tr[data-card]")
    }

    browser.get(case_url)
    linked = {
        link.get_attribute("href").rsplit("/", 1)[1]
        for link in browser.find_elements(By.CSS_SELECTOR, "p.agreement a[href^='/cards/']")
    }
    assert linked and linked <= made  # the new cards, beside the verdicts they measure
