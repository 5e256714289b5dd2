"""``assay compare --html``'s page in a real headless Chromium: it shows the per-metric table and
the flipped cases, runs nothing from the results files, and needs nothing from the network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import _browser
import pytest

from assay.compare import compare_runs, render_comparison_html
from compare._results import case, eval_set, scored

browser = _browser.browser

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1;alert(1)">'
METRIC = "response_match_score"


def _page(tmp_path: Path, eval_id: str = "book_lisbon", metric: str = METRIC) -> Path:
    """A comparison where ``eval_id`` flips pass→fail on ``metric`` and ``fine`` stays passed."""
    base = eval_set(
        "travel", case(eval_id, {metric: scored(1.0)}), case("fine", {metric: scored(0.9)})
    )
    candidate = eval_set(
        "travel", case(eval_id, {metric: scored(0.2)}), case("fine", {metric: scored(0.9)})
    )
    comparison = compare_runs([base], [candidate], resamples=200)
    page = tmp_path / "compare.html"
    page.write_text(render_comparison_html(comparison), encoding="utf-8")
    return page


def _open(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())


def _no_alert(browser: Any) -> bool:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        browser.switch_to.alert.dismiss()
    except NoAlertPresentException:
        return True
    return False


def test_page_shows_metric_table_and_flipped_cases(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, _page(tmp_path))
    header = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "thead th")]
    assert header[0] == "Metric" and header[-1] == "Verdict"
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    cells = [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")]
    assert cells[0] == METRIC
    assert cells[5] == "1 / 0"  # one pass→fail flip, no fail→pass
    flips = browser.find_element(
        By.XPATH, f"//h2[text()='{METRIC}: pass→fail (1)']/following-sibling::ul[1]"
    )
    assert [li.text for li in flips.find_elements(By.TAG_NAME, "li")] == ["travel / book_lisbon"]
    assert "travel / fine" not in browser.find_element(By.TAG_NAME, "body").text


@pytest.mark.parametrize(
    ("eval_id", "metric"), [(SCRIPT, IMG), (IMG, SCRIPT)], ids=["script-id", "img-id"]
)
def test_hostile_ids_and_metric_names_run_nothing(
    browser: Any, tmp_path: Path, eval_id: str, metric: str
) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, _page(tmp_path, eval_id=eval_id, metric=metric))
    assert _no_alert(browser)
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert not browser.find_elements(By.TAG_NAME, "img")
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 0
    body = browser.find_element(By.TAG_NAME, "body").text
    assert f"travel / {eval_id}" in body  # shown as text
    assert metric in body


def test_page_loads_nothing_from_the_network(browser: Any, tmp_path: Path) -> None:
    _open(browser, _page(tmp_path))
    urls = browser.execute_script(
        "return Array.from(document.querySelectorAll('[src],[href]'))"
        ".map(function (el) { return el.getAttribute('src') || el.getAttribute('href'); });"
    )
    assert not [url for url in urls if url.startswith(("http://", "https://", "//"))]
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(function (e) { return e.name; });"
    )
    assert resources == []
    policy = browser.execute_script(
        "var m = document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]');"
        "return m ? m.getAttribute('content') : null;"
    )
    assert policy is not None and "default-src 'none'" in policy
