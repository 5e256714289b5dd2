"""Fixtures shared across the test suite: the bundled example and an in-process CLI runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support import CliRun, Example, RunCli

from assay.cli.main import main


@pytest.fixture
def example() -> Example:
    """Paths of the bundled travel example."""
    return Example()


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """Run ``assay`` in-process via :func:`assay.cli.main.main`, capturing exit code and output.

    Output goes through rich consoles created on sys.stdout/sys.stderr, which capsys replaces.
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
