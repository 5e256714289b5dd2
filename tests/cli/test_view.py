"""``assay view`` from the command line: off loopback without a key it refuses to start; on a
free port it prints its URL and serves the runs page; a missing or damaged history file is
said in words, never a traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from _support import RunCli


def test_serving_off_loopback_without_a_key_exits_2_saying_why(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ASSAY_VIEW_KEY", raising=False)
    done = run_cli("view", "--history", tmp_path / "h.sqlite", "--host", "0.0.0.0", "--port", "0")
    assert done.code == 2
    assert "needs --key or ASSAY_VIEW_KEY" in done.err
    assert "Traceback" not in done.output


@contextmanager
def serving(history: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``assay view --port 0`` as a subprocess, and the URL it printed."""
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_VIEW_KEY"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from assay.cli.main import main; main()", "view",
         "--history", str(history), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**env, "COLUMNS": "300"},
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert found, f"no URL printed: {line!r}"
        yield process, found.group(0)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        finally:
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


def test_view_on_port_0_prints_its_url_and_serves_the_runs_page(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    with serving(history) as (_, url), httpx.Client() as client:
        page = client.get(url)
        assert page.status_code == 200
        assert "No run recorded yet" in page.text


def test_a_damaged_history_file_is_said_in_words_not_a_traceback(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    history.write_bytes(b"this is not an SQLite file" * 100)
    with serving(history) as (process, url), httpx.Client() as client:
        runs = client.get(url)
        run = client.get(url + "runs/latest")
        assert runs.status_code == 500 and "cannot read the run history" in runs.text
        assert run.status_code == 404 and "history" in run.text
        assert "Traceback" not in runs.text + run.text
    assert process.returncode is not None
