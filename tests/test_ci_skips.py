"""Under ``CI=true`` a skipped test fails the run (``tests/_ci_skips.py``): skips in a test, in a
fixture, by a mark and at a module's import all fail, unless the test is on the allow-list;
expected failures stay what they are; without ``CI=true`` skips are skips.

Each case runs pytest in a separate process on a small suite that binds the same hooks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CONTINUE = ("--continue-on-collection-errors",)  # else the module that fails stops the rest

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from _ci_skips import ALLOWED_SKIPS, pytest_make_collect_report, pytest_runtest_makereport

ALLOWED_SKIPS["test_allowed.py::test_cannot_run_in_ci"] = "needs what CI cannot have"
"""
SKIPS = """
import pytest

@pytest.fixture
def part():
    pytest.skip("the part is not installed")

def test_skips_itself():
    pytest.skip("the part is not installed")

def test_skips_in_its_fixture(part):
    pass

@pytest.mark.skip(reason="not now")
def test_marked_skip():
    pass

@pytest.mark.xfail(reason="a known bug", strict=True)
def test_expected_failure():
    assert False

def test_runs():
    pass
"""
MISSING_PART = """
import pytest
pytest.importorskip("no_such_part_of_the_install")

def test_uses_the_part():
    pass
"""
ALLOWED = """
import pytest

def test_cannot_run_in_ci():
    pytest.skip("needs what CI cannot have")
"""


def _outcomes(folder: Path, *, ci: bool) -> dict[str, str]:
    """``{test or module: outcome}`` of a pytest run over ``folder`` (``-rA``'s summary)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci:
        env["CI"] = "true"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            *CONTINUE,
            str(folder),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    outcomes: dict[str, str] = {}
    for line in run.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "XFAIL"):
            outcomes[rest.split(" - ")[0].strip()] = word
        elif word == "SKIPPED":  # SKIPPED [1] test_x.py:12: reason
            outcomes[rest.split("] ", 1)[1].split(":")[0]] = word
    assert outcomes, run.stdout + run.stderr
    return outcomes


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    for name, text in (
        ("conftest.py", CONFTEST),
        ("test_skips.py", SKIPS),
        ("test_missing_part.py", MISSING_PART),
        ("test_allowed.py", ALLOWED),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_under_ci_every_skip_fails_unless_allowed_and_xfail_is_left_alone(suite: Path) -> None:
    assert _outcomes(suite, ci=True) == {
        "test_skips.py::test_skips_itself": "FAILED",
        "test_skips.py::test_skips_in_its_fixture": "ERROR",  # failed in its setup
        "test_skips.py::test_marked_skip": "ERROR",
        "test_skips.py::test_expected_failure": "XFAIL",
        "test_skips.py::test_runs": "PASSED",
        "test_missing_part.py": "ERROR",  # a collection error: the module never ran
        "test_allowed.py": "SKIPPED",
    }


def test_without_ci_skips_are_skips(suite: Path) -> None:
    outcomes = _outcomes(suite, ci=False)
    assert outcomes["test_skips.py::test_runs"] == "PASSED"
    assert outcomes["test_skips.py::test_expected_failure"] == "XFAIL"
    assert {key for key, outcome in outcomes.items() if outcome == "SKIPPED"} == {
        "test_skips.py",
        "test_missing_part.py",
        "test_allowed.py",
    }
    assert "FAILED" not in outcomes.values() and "ERROR" not in outcomes.values()
