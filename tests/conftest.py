"""Fixtures shared across the test suite: the bundled example and an in-process CLI runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _ci_skips import pytest_make_collect_report, pytest_runtest_makereport
from _judge_server import JudgeServer
from _judges import approve
from _support import CliRun, Example, RunCli

from assay.cli.main import main

__all__ = ["pytest_make_collect_report", "pytest_runtest_makereport"]  # CI=true: no skips


@pytest.fixture(scope="session")
def approving_judge() -> Iterator[JudgeServer]:
    """A real OpenAI-compatible judge on 127.0.0.1 that approves of everything it is asked."""
    with JudgeServer(reply=approve) as server:
        yield server


@pytest.fixture
def example() -> Example:
    """Paths of the bundled travel example."""
    return Example()


@pytest.fixture(autouse=True)
def judge_env(
    approving_judge: JudgeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> JudgeServer:
    """Point every judged metric at ``approving_judge`` (as ``ASSAY_JUDGE_MODEL`` would) and
    keep the response cache in this test's temporary folder.

    Autouse: no test may reach a real judge (Gemini, or the embedded model, which takes minutes)
    by accident, or write a cache into the working tree. Tests of judge selection pass their own
    ``env`` or undo these variables with ``monkeypatch``.
    """
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", "openai:stub-judge")
    monkeypatch.setenv("OPENAI_BASE_URL", approving_judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "assay-cache"))
    return approving_judge


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, judge_env: JudgeServer
) -> RunCli:
    """Run ``assay`` in-process via :func:`assay.cli.main.main`, capturing exit code and output.

    Output goes through rich consoles created on sys.stdout/sys.stderr, which capsys replaces.
    Judged metrics go to the approving stub judge unless a test says otherwise.
    """
    monkeypatch.setenv("COLUMNS", "220")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("ASSAY_DEBUG", raising=False)

    def run(*args: str | Path) -> CliRun:
        capsys.readouterr()
        try:
            main([str(arg) for arg in args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run
