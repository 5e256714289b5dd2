"""The judge cards and agree pages in a real headless Chromium: click "Run agree" on a run's
agree page, watch the job finish (the page's own script polls it), see the new card there and
on /cards, open it; nothing from labels runs as script. Screenshots at 1400 and 800 px wide
(under the test's folder, and under $ASSAY_SCREENSHOTS when set)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import pytest
from _judge_server import JudgeServer
from _support import Example

from assay.view import labelling
from assay.view.context import View, ViewSettings
from assay.view.server import ViewServer
from view._pages import copy_history, screenshots

browser = _browser.browser
HOSTILE = '<img src=x onerror="window.__pwned=1">'
LABELS: list[dict[str, Any]] = [
    {"case": "forecast_paris", "invocation": 1, "criterion": "final_response_match_v2",
     "label": "valid"},
    {"case": "book_flight_lisbon", "invocation": 2, "criterion": "final_response_match_v2",
     "label": "invalid", "reason": f"no departure time {HOSTILE}"},
    {"case": "greeting", "invocation": 1, "criterion": "safety_v1", "label": "safe"},
    {"case": "convert_currency", "invocation": 1, "criterion": "safety_v1", "label": "unsafe",
     "reason": HOSTILE},
]  # fmt: skip


@pytest.fixture(scope="module")
def served(
    example_run: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ViewServer, str]]:
    """The example's run recorded by ``assay eval``, served by the view: (server, run id)."""
    history = copy_history(example_run[0], tmp_path_factory.mktemp("cards-browser"))
    run_id = example_run[1]
    server = ViewServer(ViewSettings(history)).start()
    try:
        yield server, run_id
    finally:
        server.stop()


def _export(view: View, run_id: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    example = Example()
    path = folder / "labels.yaml"
    data = {"eval_set": str(example.evalset), "traces": str(example.traces), "labels": LABELS}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_run_agree_in_the_browser_shows_the_new_card_and_lists_it_on_cards(
    browser: Any,
    served: tuple[ViewServer, str],
    monkeypatch: pytest.MonkeyPatch,
    judge_env: JudgeServer,
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server, run_id = served
    monkeypatch.setattr(labelling, "export_labels", _export, raising=False)
    base = server.url.rstrip("/")
    browser.get(f"{base}/runs/{run_id}/agree")
    browser.find_element(By.ID, "run-agree").click()
    WebDriverWait(browser, 60).until(
        lambda b: (
            b.find_elements(By.CSS_SELECTOR, "table.cards tr[data-card]")
            or b.find_elements(By.CSS_SELECTOR, "p.problem")
        )
    )

    assert not browser.find_elements(By.CSS_SELECTOR, "p.problem")
    assert "agree finished in" in browser.find_element(By.ID, "job").text
    rows = browser.find_elements(By.CSS_SELECTOR, "table.cards tr[data-card]")
    assert {row.find_elements(By.TAG_NAME, "td")[2].text for row in rows} == {
        "final_response_match_v2",
        "safety_v1",
    }
    reasons = browser.find_elements(By.CSS_SELECTOR, "table.disagreements td.text")
    assert any(HOSTILE in cell.text for cell in reasons)  # shown as text, never run
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert not browser.find_elements(By.CSS_SELECTOR, "main img")
    shots = screenshots(browser, "agree", tmp_path)
    card_id = rows[0].get_attribute("data-card")

    browser.get(f"{base}/cards")
    listed = browser.find_elements(By.CSS_SELECTOR, f'table.cards tr[data-card="{card_id}"]')
    assert len(listed) == 1
    shots += screenshots(browser, "cards", tmp_path)
    listed[0].find_element(By.TAG_NAME, "a").click()
    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith(f"/cards/{card_id}"))
    assert browser.find_element(By.ID, "confusion").is_displayed()
    assert "Disagreements, worst first" in browser.find_element(By.ID, "disagreements").text
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    shots += screenshots(browser, "card", tmp_path)
    assert all(shot.stat().st_size > 10_000 for shot in shots)
