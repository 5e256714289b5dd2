"""The example's run, recorded once for the view's test modules that read it as it is (each
copies it before writing labels or cards into it: :func:`view._pages.copy_history`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _judge_server import JudgeServer

from view._pages import record_run


@pytest.fixture(scope="session")
def example_run(
    tmp_path_factory: pytest.TempPathFactory, approving_judge: JudgeServer
) -> tuple[Path, str]:
    """The example scored against its recorded traces by the approving judge: (history, run)."""
    return record_run(tmp_path_factory.mktemp("example-run"), approving_judge)
