"""What the view's tests share: the example's run recorded by ``assay eval`` into a history, and
screenshots of a page at the widths a person reads it (1400 and 800 px)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _support import Example

from assay.cli.main import main
from assay.history.store import HistoryStore

WIDTHS = (1400, 800)


def judge_env(patch: pytest.MonkeyPatch, judge: JudgeServer, cache: Path) -> None:
    """Every judge of a run is ``judge`` (OpenAI-compatible, on 127.0.0.1), its answers cached
    in ``cache``."""
    patch.setenv("ASSAY_JUDGE_MODEL", "openai:stub-judge")
    patch.setenv("OPENAI_BASE_URL", judge.base_url)
    patch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    patch.setenv("ASSAY_CACHE_DIR", str(cache))


def record_run(folder: Path, judge: JudgeServer, traces: Path | None = None) -> tuple[Path, str]:
    """The example scored by ``assay eval`` against ``traces`` (default: its recorded traces,
    every case passing; ``Example().regressed``: two fail) with ``judge``, recorded in
    ``folder/history.sqlite``: the history and the run's id."""
    example = Example()
    history = folder / "history.sqlite"
    with pytest.MonkeyPatch.context() as patch:
        judge_env(patch, judge, folder / "cache")
        args = ["eval", example.evalset, "--traces", traces or example.traces]
        with pytest.raises(SystemExit) as ended:
            main([str(arg) for arg in [*args, "--history-file", history]])
        assert ended.value.code in (0, 1), "the example's run did not finish"
    with HistoryStore(history) as store:
        return history, store.runs(limit=1)[0].id


def screenshots(
    browser: Any, name: str, folder: Path, *, fits: bool = False, tallest: int = 6000
) -> list[Path]:
    """The whole page (up to ``tallest`` px) at each of :data:`WIDTHS`, as PNGs under ``folder``
    and ``$ASSAY_SCREENSHOTS`` when set; with ``fits``, the page must not scroll sideways."""
    shots = []
    wanted = os.environ.get("ASSAY_SCREENSHOTS")
    for width in WIDTHS:
        browser.set_window_size(width, 1000)
        if fits:
            sideways = browser.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert sideways <= 0, f"{name} scrolls sideways by {sideways} px at {width} px"
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(width, min(int(height) + 40, tallest))
        for place in [folder, *([Path(wanted)] if wanted else [])]:
            place.mkdir(parents=True, exist_ok=True)
            shot = place / f"{name}-{width}.png"
            assert browser.save_screenshot(str(shot))
            shots.append(shot)
    browser.set_window_size(1280, 1000)
    return shots


def copy_history(source: Path, folder: Path) -> Path:
    """A copy of the history ``source`` in ``folder`` (SQLite's own backup), for a test module
    that writes labels or cards into it."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "history.sqlite"
    with HistoryStore(source) as original, HistoryStore(copy) as target:
        original._connection().backup(target._connection())
    return copy
