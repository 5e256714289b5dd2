"""Under ``CI=true`` a skipped test fails the run: CI installs every part the suite uses (the
``dev``, ``local`` and ``ray`` extras, the SmolLM2 model, Chromium), so a skip there means a part
dropped out of the install and its tests stopped running while CI stayed green.

``tests/conftest.py`` binds the two hooks below. A test that cannot run in CI for a reason of
its own goes on :data:`ALLOWED_SKIPS`, with that reason; expected failures (``xfail``) are not
skips and are left alone.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

ALLOWED_SKIPS: dict[str, str] = {}
"""Node ids (or a prefix of them: a module's path, a test's name without parameters) that may
skip under ``CI=true``, each with why it cannot run in CI. Empty: every test runs there."""


def enforced() -> bool:
    return os.environ.get("CI") == "true"


def allowed(nodeid: str) -> bool:
    return any(nodeid == key or nodeid.startswith((key + "::", key + "[")) for key in ALLOWED_SKIPS)


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _as_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail") or allowed(report.nodeid):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI=true: {_reason(report.longrepr)}\n"
        "CI installs every part the tests need, so nothing may skip there: install what is "
        "missing, or put the test on ALLOWED_SKIPS in tests/_ci_skips.py with the reason it "
        "cannot run in CI"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test that skips (in its setup, call or teardown) fails under ``CI=true``."""
    report = yield
    if enforced():
        _as_failure(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A module that skips as it is collected (``pytest.importorskip`` at its top) is a
    collection error under ``CI=true``."""
    report = yield
    if enforced():
        _as_failure(report)
    return report
