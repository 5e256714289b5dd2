"""Helpers shared across the test suite: the bundled example's paths and CLI run results."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples" / "travel"


@dataclass(frozen=True)
class Example:
    """The files of ``examples/travel``."""

    dir: Path = EXAMPLE_DIR
    evalset: Path = EXAMPLE_DIR / "travel.evalset.json"
    config: Path = EXAMPLE_DIR / "test_config.json"
    traces: Path = EXAMPLE_DIR / "traces.json"
    regressed: Path = EXAMPLE_DIR / "traces_regressed.json"


@dataclass(frozen=True)
class CliRun:
    """What one in-process ``assay`` run did: exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        """stdout and stderr together."""
        return self.out + self.err


RunCli = Callable[..., CliRun]
"""The ``run_cli`` fixture: run ``assay ARGS...`` in this process."""
