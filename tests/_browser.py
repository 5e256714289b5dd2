"""A headless Chromium for the browser tests of the HTML pages (report and comparison).

Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package. Without them
the tests that use :func:`browser` are skipped, unless ``ASSAY_REQUIRE_BROWSER=1`` (set by CI),
when they fail. A test module binds the fixture to a module-level name::

    import _browser

    browser = _browser.browser
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

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


def missing() -> str | None:
    """Why no browser can be driven here, or None when one can."""
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
    reason = missing()
    if reason:
        if os.environ.get("ASSAY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"ASSAY_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(f"no headless browser: {reason}")
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
