"""``assay eval --executor ray`` with no address, as ``docs/ray.md`` tells users to run it: assay
starts a local Ray cluster for the run, gives the in-process run's results, and stops the cluster.

The run is a separate ``assay`` process (this one may hold a Ray connection of its own, which
assay would use instead), with no ``RAY_ADDRESS`` and its own ``RAY_TMPDIR`` (so it cannot find a
cluster another process started with ``ray start``). Every process it starts inherits a marker
variable, by which the test finds what is left running afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import RunCli

ECHO_AGENT = """
def agent(message, session):
    return "echo " + message
"""
TEXTS = ("hello", "hi there", "good day")
TIMING = {"duration_s", "duration", "creation_timestamp", "eval_set_result_id"}
TIMING |= {"eval_set_result_name"}
GRACE_S = 60.0
"""How long the cluster's processes may take to exit after the run (only a failure waits)."""


def _without_timing(value: Any) -> Any:
    """A results document without what differs between two runs of the same inputs: times,
    durations, ids made of the time, and the duration metric's scores."""
    if isinstance(value, dict):
        if value.get("metric_name") == "invocation_duration_v1":
            return {k: v for k, v in value.items() if k not in ("score", "eval_status", "details")}
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _case(eval_id: str, text: str, expected: str) -> dict[str, Any]:
    turn = {
        "invocation_id": f"inv-{eval_id}",
        "user_content": {"role": "user", "parts": [{"text": text}]},
        "final_response": {"role": "model", "parts": [{"text": expected}]},
    }
    return {"eval_id": eval_id, "conversation": [turn]}


def _echo_set(folder: Path) -> Path:
    """One-turn cases scored by exact response match against an agent that echoes the user:
    three pass, one (which expects another answer) fails."""
    cases = [_case(f"case_{n}", text, f"echo {text}") for n, text in enumerate(TEXTS, 1)]
    cases.append(_case("case_fails", "unmatched", "something else"))
    path = folder / "echo.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "echo", "eval_cases": cases}), encoding="utf-8")
    config = {"criteria": {"response_match_score": 1}}
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def _processes_with(marker: str) -> list[str]:
    """``pid: command`` of this user's live processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if marker.encode() not in environ:
                continue
            status = (entry / "status").read_text(encoding="utf-8", errors="replace")
            if "\nState:\tZ" in status:  # exited, not yet reaped
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or another user's
            continue
        found.append(f"{entry.name}: {command[:200]}")
    return found


@pytest.fixture
def ray_tmpdir() -> Iterator[Path]:
    """A short folder of its own for Ray's sessions (Ray's socket paths must stay short)."""
    folder = Path(tempfile.mkdtemp(prefix="assay-ray-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_executor_ray_without_an_address_starts_a_local_cluster_and_stops_it_after_the_run(
    run_cli: RunCli, tmp_path: Path, ray_tmpdir: Path
) -> None:
    evalset = _echo_set(tmp_path)
    agent = tmp_path / "agent" / "echo_agent.py"
    agent.parent.mkdir()
    agent.write_text(ECHO_AGENT, encoding="utf-8")
    local, on_ray = tmp_path / "local.json", tmp_path / "ray.json"
    args = ("eval", str(evalset), "--agent", f"{agent}:agent", "--no-cache", "--no-history")
    in_process = run_cli(*args, "--output", local)
    assert in_process.code == 1, in_process.output  # one case fails, as it should
    marker = f"ASSAY_TEST_RAY_MARKER={uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env |= {"RAY_TMPDIR": str(ray_tmpdir), "COLUMNS": "220", marker.split("=")[0]: marker}
    assay = str(Path(sys.executable).with_name("assay"))  # the installed console script

    run = subprocess.run(
        [assay, *args, "--output", str(on_ray), "--executor", "ray"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert run.returncode == 1, run.stdout + run.stderr
    assert "3 passed, 1 failed, 0 not evaluated" in run.stdout, run.stdout + run.stderr
    assert list((ray_tmpdir / "ray").glob("session_2*")), "no local Ray cluster was started"
    assert _without_timing(json.loads(on_ray.read_text())) == _without_timing(
        json.loads(local.read_text())
    )
    deadline = time.monotonic() + GRACE_S
    while (left := _processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], "the run's Ray cluster is still running:\n" + "\n".join(left)
