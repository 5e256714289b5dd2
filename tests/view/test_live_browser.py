"""A run in progress watched in a real headless Chromium: the run page gets a row for each case
the moment it is recorded (written into the history by the test while the page is open), says
"N of M cases finished", and says when the run has finished; hostile ids stay text.

The browser comes from ``tests/_browser.py`` (skipped without Chromium unless
``ASSAY_REQUIRE_BROWSER=1``). Screenshots at 1400 and 800 px wide go under the test's temporary
folder and, when ``ASSAY_SCREENSHOTS`` names a folder, there too.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import _browser
from _support import Example, RunCli

from assay.history.records import CaseRow
from assay.history.store import HistoryStore
from assay.view import ViewServer, ViewSettings
from assay.view.pages import live

browser = _browser.browser

IMG = '<img src=x onerror="window.__pwned=1">'
HOSTILE = f"<script>window.__pwned=1</script> and {IMG}"
CONFIG = {"sets": [{"path": "travel.evalset.json", "eval_set_id": "travel_assistant"}]}


def _recorded(run_cli: RunCli, example: Example, history: Path) -> tuple[list[Any], list[CaseRow]]:
    """The example's run recorded in ``history``: its metric headers and case rows."""
    done = run_cli("eval", example.evalset, "--traces", example.traces, "--history-file", history)
    assert done.code in (0, 1), done.output
    with HistoryStore(history) as store:
        run_id = store.runs(limit=1)[0].id
    with contextlib.closing(sqlite3.connect(history)) as db:
        headers = db.execute(
            "SELECT number, header FROM run_metrics WHERE run_id = ?", (run_id,)
        ).fetchall()
        rows = db.execute(
            "SELECT eval_set_id, eval_id, run_number, status, tokens, written, result "
            "FROM case_results WHERE run_id = ? ORDER BY written",
            (run_id,),
        ).fetchall()
    return headers, [CaseRow(*row) for row in rows]


_TO_CASES = "document.getElementById('run-cases').scrollIntoView()"


def _screenshots(browser: Any, tmp_path: Path, name: str) -> None:
    folders = [tmp_path] + ([Path(os.environ["ASSAY_SCREENSHOTS"])] if os.environ.get(
        "ASSAY_SCREENSHOTS") else [])  # fmt: skip
    for width in (1400, 800):
        browser.set_window_size(width, 1000)
        for part, scroll in (("top", "window.scrollTo(0, 0)"), ("cases", _TO_CASES)):
            browser.execute_script(scroll)
            for folder in folders:
                folder.mkdir(parents=True, exist_ok=True)
                browser.save_screenshot(str(folder / f"{name}-{part}-{width}.png"))
    browser.set_window_size(1400, 1000)
    browser.execute_script("window.scrollTo(0, 0)")


def _row(browser: Any, key: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(_: Any) -> Any:
        for row in browser.find_elements(By.CSS_SELECTOR, "#cases tr[data-case]"):
            if row.get_attribute("data-case") == key:
                return row
        return False

    return WebDriverWait(browser, 10).until(found)


def _live_text(browser: Any, contains: str) -> str:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(_: Any) -> str | bool:
        text: str = browser.find_element(By.CSS_SELECTOR, "#live").text
        return text if contains in text else False

    result: str = WebDriverWait(browser, 10).until(found)
    return result


def _page_with(browser: Any, selector: str) -> None:
    """Wait (up to 15 s on a busy machine) for the page to hold ``selector``; else fail showing
    what the page is."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, selector))
    except TimeoutException:
        raise AssertionError(
            f"no {selector} on {browser.current_url}: {browser.page_source[:1500]}"
        ) from None


def test_a_run_in_progress_gets_its_rows_live_then_says_it_finished(
    browser: Any, run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    history = tmp_path / "history.sqlite"
    headers, rows = _recorded(run_cli, example, history)
    rows[2] = rows[2]._replace(eval_id=HOSTILE)
    store = HistoryStore(history)
    run_id = store.start_run(["travel.evalset.json"], CONFIG)
    with contextlib.closing(sqlite3.connect(history)) as db, db:
        db.executemany(
            "INSERT INTO run_metrics VALUES (?, ?, ?)",
            [(run_id, number, text) for number, text in headers],
        )
    store.write_cases(run_id, [rows[0]])  # on the page when it opens
    server = ViewServer(ViewSettings(history)).start()
    try:
        live.expect_cases(server.app, run_id, len(rows))
        browser.get(f"http://127.0.0.1:{server.port}/runs/{run_id}")
        _page_with(browser, 'script[src="/static/live.js"]')
        assert "1 of 5 cases finished" in _live_text(browser, "of 5 cases finished")
        keys = [f"{row.eval_set_id}/{row.eval_id}/{row.run}" for row in rows]
        for row, key in list(zip(rows, keys, strict=True))[1:4]:
            store.write_cases(run_id, [row])
            _row(browser, key)
        _live_text(browser, "4 of 5 cases finished")
        _screenshots(browser, tmp_path, "live-running")

        listed = [
            r.get_attribute("data-case")
            for r in browser.find_elements(By.CSS_SELECTOR, "#cases tr[data-case]")
        ]
        assert listed.count(keys[0]) == 1  # listed by the page: not added again
        assert sorted(listed) == sorted(keys[:4])
        hostile = _row(browser, keys[2])
        assert HOSTILE in hostile.text
        link = hostile.find_element(By.TAG_NAME, "a")
        assert link.get_attribute("href").startswith(
            f"http://127.0.0.1:{server.port}/runs/{run_id}/cases/"
        )
        assert browser.execute_script("return window.__pwned === undefined")
        assert hostile.find_elements(By.CSS_SELECTOR, "td.cell")  # a cell per metric column

        store.write_cases(run_id, [rows[4]])
        store.finish_run(run_id, [])
        ended = _live_text(browser, "The run finished")
        assert "5 of 5 cases finished" in ended
        reload = browser.find_element(By.CSS_SELECTOR, "#live a.live-reload")
        assert reload.get_attribute("href").endswith(f"/runs/{run_id}")
        _row(browser, keys[4])
        _screenshots(browser, tmp_path, "live-finished")
    finally:
        live.close_streams(server.app)
        server.stop()
        store.close()
