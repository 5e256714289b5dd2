"""Labelling with the keyboard in a real headless Chromium: five verdicts labelled on /label
with y / n / digits (one skipped with s, keys ignored while typing a reason), each stored in the
history; screenshots at 1400 and 800 px wide (under the test's folder, and under
$ASSAY_SCREENSHOTS when set)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _browser
import pytest

from assay.history.store import HistoryStore
from assay.view import ViewServer, ViewSettings
from view._pages import copy_history, screenshots

browser = _browser.browser
IMG = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, example_run: tuple[Path, str]
) -> Iterator[tuple[ViewServer, Path, str]]:
    history = copy_history(example_run[0], tmp_path_factory.mktemp("label-browser"))
    run_id = example_run[1]
    server = ViewServer(ViewSettings(history, labeller="ana")).start()
    try:
        yield server, history, run_id
    finally:
        server.stop()


def _queue_key(browser: Any) -> str:
    from selenium.webdriver.common.by import By

    key = browser.find_element(By.CSS_SELECTOR, '[data-view="label-queue"]').get_attribute(
        "data-key"
    )
    return str(key)


def _press(browser: Any, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(key).perform()


def _next(browser: Any, before: str) -> str:
    """Wait until the queue shows another unit than ``before``; its key."""
    from selenium.webdriver.support.ui import WebDriverWait

    def moved(_: Any) -> str | bool:
        try:
            key = _queue_key(browser)
        except Exception:  # the page is reloading
            return False
        return key if key != before else False

    found: str = WebDriverWait(browser, 10).until(moved)
    return found


def test_five_verdicts_labelled_with_the_keyboard_are_stored(
    browser: Any, served: tuple[ViewServer, Path, str], tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    server, history, run_id = served
    browser.get(f"http://127.0.0.1:{server.port}/label?run={run_id}")
    key = _queue_key(browser)
    screenshots(browser, "label-queue", tmp_path)

    _press(browser, "s")  # skip: another unit, nothing stored
    key = _next(browser, key)

    _press(browser, "r")  # keys do nothing while the reason is typed
    reason = browser.find_element(By.CSS_SELECTOR, '.queue input[name="reason"]')
    assert browser.switch_to.active_element == reason
    reason.send_keys(f"yes it is {IMG} snsy 1")
    assert _queue_key(browser) == key  # no key fired: still the same unit
    reason.send_keys("\ue00c")  # Escape leaves the field; the keys work again
    assert browser.switch_to.active_element != reason

    labelled: list[str] = [key]
    for number in range(5):
        buttons = browser.find_elements(By.CSS_SELECTOR, ".queue button[data-label]")
        if len(buttons) == 2:
            _press(browser, "y" if number % 2 == 0 else "n")
        else:
            _press(browser, "1")
        key = _next(browser, key)
        labelled.append(key)

    with HistoryStore(history) as store:
        kept = store.labels.of_run(run_id, "ana")
    assert len(kept) == 5
    assert kept[0].reason == f"yes it is {IMG} snsy 1"
    assert all(s.labeller == "ana" for s in kept)
    assert len({(s.criterion, s.case, s.invocation, s.rubric, s.sentence) for s in kept}) == 5
    assert not browser.execute_script("return window.__pwned === 1")
    shots = screenshots(browser, "label-queue-after", tmp_path)
    assert all(shot.stat().st_size > 0 for shot in shots)
