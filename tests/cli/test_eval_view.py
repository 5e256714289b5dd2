"""``assay eval --view``: the run's page URL printed as soon as the run is recorded, the view
answering (its live events) while the run goes, and the run's own exit code at the end."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _support import Example, RunCli

SLOW_AGENT = """
import asyncio, importlib.util
spec = importlib.util.spec_from_file_location("travel_example_agent", {example!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

async def agent(message, session):
    await asyncio.sleep(0.4)
    return await module.travel_agent(message, session)
"""

URL = re.compile(r"watch this run live: (http://127\.0\.0\.1:\d+)/runs/(\S+)")


def test_view_needs_the_run_history(run_cli: RunCli, example: Example) -> None:
    refused = run_cli("eval", example.evalset, "--traces", example.traces, "--view", "--no-history")

    assert refused.code == 2
    assert "--view" in refused.output and "--no-history" in refused.output


def test_a_viewed_run_prints_its_page_and_exits_with_its_own_code(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    given = ("eval", example.evalset, "--traces", example.traces, "--no-progress")
    plain = run_cli(*given, "--history-file", tmp_path / "plain.sqlite")
    started = set(threading.enumerate())
    viewed = run_cli(*given, "--history-file", tmp_path / "viewed.sqlite", "--view")

    found = URL.search(viewed.out)
    assert found, viewed.output
    assert f"recorded as run {found.group(2)}" in viewed.out
    assert viewed.code == plain.code
    assert not [t for t in set(threading.enumerate()) - started if t.name == "assay-view"]


def test_the_view_answers_while_a_slow_run_goes(example: Example, tmp_path: Path) -> None:
    agent_file = tmp_path / "slow_agent.py"
    agent_file.write_text(SLOW_AGENT.format(example=str(example.dir / "agent.py")))
    assay = Path(sys.executable).parent / "assay"
    command = [
        str(assay), "eval", str(example.evalset), "--agent", f"{agent_file}:agent",
        "--history-file", str(tmp_path / "history.sqlite"), "--view", "--no-progress",
        "--inference-concurrency", "1", "--concurrency", "1",
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    with subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None
        lines = []
        found = None
        deadline = time.monotonic() + 60
        while found is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = URL.search(line)
        assert found, "".join(lines) + (process.stderr.read() if process.stderr else "")
        base, run_id = found.groups()
        with (
            httpx.Client(base_url=base, timeout=30) as client,
            client.stream("GET", f"/runs/{run_id}/events") as response,
        ):
            stream = response.iter_lines()
            first = _first_data(stream, "counts")
            ended = _first_data(stream, "end")
        out, err = process.communicate(timeout=120)
    assert first["status"] == "running" and first["total"] == 5
    assert first["finished"] < 5  # seen while it ran
    assert ended["status"] == "finished" and ended["finished"] == 5
    assert process.returncode in (0, 1), out + err
    assert f"recorded as run {run_id}" in "".join(lines) + out


def _first_data(lines: Iterator[str], wanted: str) -> dict[str, object]:
    """The data of the first ``wanted`` event among the stream's ``lines``."""
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: ") and name == wanted:
            data: dict[str, object] = json.loads(line[len("data: ") :])
            return data
    raise AssertionError(f"the stream ended without a {wanted} event")


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("started", ["as usual", "with SIGINT ignored"])
def test_on_a_terminal_the_view_goes_on_after_the_run_until_ctrl_c(
    example: Example, tmp_path: Path, started: str
) -> None:
    assay = Path(sys.executable).parent / "assay"
    command = [
        str(assay), "eval", str(example.evalset), "--traces", str(example.traces),
        "--history-file", str(tmp_path / "history.sqlite"), "--view", "--no-progress",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen(
            command,
            env={**env, "COLUMNS": "200"},
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # a background job or a tool may start it ignoring SIGINT: Ctrl-C must still stop it
            preexec_fn=_sigint_ignored if started == "with SIGINT ignored" else None,
        ) as process:
            try:
                assert process.stdout is not None
                lines: list[str] = []
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    line = process.stdout.readline()
                    lines.append(line)
                    if not line or "press Ctrl-C to stop it" in line:
                        break
                said = "".join(lines)
                found = URL.search(said)
                assert found and "press Ctrl-C to stop it" in said, said
                base, run_id = found.groups()
                with httpx.Client(base_url=base, timeout=10) as client:
                    with client.stream("GET", f"/runs/{run_id}/events") as response:
                        ended = _first_data(response.iter_lines(), "end")
                    assert process.poll() is None  # still serving
                process.send_signal(signal.SIGINT)
                out, err = process.communicate(timeout=30)
            except BaseException:
                process.kill()  # never left serving: the with block waits for it
                raise
    finally:
        os.close(leader)
        os.close(follower)
    assert ended["status"] == "finished"
    assert process.returncode in (0, 1), out + err
