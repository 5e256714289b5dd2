"""Benchmark: ``assay view`` over a 50,000-case run: the run page's first screen, and the server's
memory.

    .venv/bin/python benchmarks/bench_view.py [--cases 50000] [--seed 0] [--keep DIR]

Records a run of ``--cases`` cases in a fresh history file as ``assay eval`` records one: each
case an ``EvalCaseResult`` (1-3 invocations with the agent's text and tool calls inline, two
deterministic metrics, two judged ones with rubric details, two informational ones; about one
case in eight failing, one in twenty not evaluated, a few not applicable), encoded by the
history's own :class:`~assay.history.compact.CaseEncoder` and written through
:meth:`HistoryStore.write_cases` a batch at a time, then finished with the set's header; and
four small earlier runs of the same set, for the runs page's trend. Then it starts
``assay view --port 0`` in a subprocess and times, over real HTTP on 127.0.0.1:

* the run page, first (cold: the server reads the run's index from SQLite) and warm (best of
  five), each the whole HTML of page 1: the summary, the distributions and the grid;
* the runs page, a filtered page (``?status=FAILED&metric=...&q=...``) and the last page;

and reads the server's peak RSS (``VmHWM`` from ``/proc/PID/status``) after them. Those are
timed with the view's warm-up off (``ASSAY_VIEW_WARM_RUNS=0``: the first request reads the whole
run); then a second view, started as ``assay view`` starts (the newest runs indexed in the
background), is asked for the run page 2 s after it printed its URL. It exits 1 when that first
screen takes 1 s or more, or the server's peak RSS reaches 300 MB.

Measured (2 shared cores, Python 3.11, SQLite 3.40; 50,000 cases, seed 0): see the figures
this script prints; the last run's are in the note of the change that added it.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx

from assay.history.compact import CaseEncoder
from assay.history.records import case_row
from assay.history.store import HistoryStore
from assay.results.model import EvalCaseResult, EvalSetResult, SetNotes

FIRST_SCREEN_S = 1.0
RSS_MB = 300.0
SET_ID = "bench_view"
METRICS: list[tuple[str, float | None]] = [
    ("tool_trajectory_avg_score", 1.0),
    ("response_match_score", 0.6),
    ("final_response_match_v2", 0.8),
    ("rubric_based_final_response_quality_v1", 0.8),
    ("tool_call_count_v1", None),
    ("invocation_duration_v1", None),
]
WORDS = ["flight", "hotel", "paris", "lisbon", "booking", "cheapest", "convert", "weather"]


def _invocation(rng: random.Random, i: int) -> dict[str, Any]:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30)))
    return {
        "invocation_id": f"i{i}",
        "user_content": {"role": "user", "parts": [{"text": f"please {text}"}]},
        "final_response": {"role": "model", "parts": [{"text": text}]},
        "intermediate_data": {
            "tool_uses": [{"name": "search_flights", "args": {"to": "LIS", "day": i}}]
        },
    }


def _row(name: str, threshold: float | None, score: float | None, status: int) -> dict[str, Any]:
    row: dict[str, Any] = {"metric_name": name, "threshold": threshold, "score": score}
    row["eval_status"] = status
    if name.startswith("rubric"):
        row["details"] = {
            "rubric_scores": [{"rubric_id": "answers", "score": score, "rationale": "it does"}]
        }
    return row


def _rows(rng: random.Random, fail: bool, skip: bool) -> list[dict[str, Any]]:
    rows = []
    for name, threshold in METRICS:
        if threshold is None:
            rows.append(_row(name, None, rng.uniform(0, 4), 4))
        elif skip and name.startswith("final"):
            rows.append(_row(name, threshold, None, 3))
        else:
            score = rng.uniform(0, threshold) if fail and name.startswith("tool") else rng.random()
            score = max(score, threshold) if not fail else score
            rows.append(_row(name, threshold, round(score, 4), 1 if score >= threshold else 2))
    return rows


def case(rng: random.Random, number: int) -> EvalCaseResult:
    """One generated case result."""
    fail, skip = rng.random() < 0.125, rng.random() < 0.05
    turns = [_invocation(rng, i) for i in range(rng.randint(1, 3))]
    overall = _rows(rng, fail, skip)
    statuses = [r["eval_status"] for r in overall if r["eval_status"] != 4]
    status = 2 if 2 in statuses else 3 if 3 in statuses else 1
    return EvalCaseResult.model_validate(
        {
            "eval_set_id": SET_ID,
            "eval_id": f"case_{number:06d}_{rng.choice(WORDS)}",
            "final_eval_status": status,
            "overall_eval_metric_results": overall,
            "eval_metric_result_per_invocation": [
                {
                    "actual_invocation": t,
                    "expected_invocation": None,
                    "eval_metric_results": overall,
                }
                for t in turns
            ],
            "assay": {
                "run": 1,
                "duration_s": rng.random(),
                "metric_reasons": {"final_response_match_v2": "the judge gave no answer"}
                if skip
                else {},
            },
        }
    )


def record(store: HistoryStore, cases: int, seed: int, started: float) -> str:
    """Record a finished run of ``cases`` generated cases; its id."""
    rng = random.Random(seed)
    run_id = store.start_run([f"{SET_ID}.evalset.json"], {"criteria": {}}, started=started)
    encoder = CaseEncoder()
    batch = []
    order = []
    for number in range(cases):
        result = case(rng, number)
        encoded = encoder.encode(result)
        batch.append(case_row(result, encoded.text, encoded.new_header))
        order.append(SimpleNamespace(eval_id=result.eval_id, assay=SimpleNamespace(run=1)))
        if len(batch) == 1000:
            store.write_cases(run_id, batch)
            batch = []
    store.write_cases(run_id, batch)
    header = EvalSetResult.model_construct(
        eval_set_result_id=f"{run_id}_{SET_ID}",
        eval_set_id=SET_ID,
        eval_case_results=order,
        creation_timestamp=started,
        assay=SetNotes(version="bench", duration_s=cases / 1000),
    )
    store.finish_run(run_id, [header], finished=started + cases / 1000)
    return run_id


def peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else float("nan")


def start_view(history: Path, warmed: int) -> tuple[subprocess.Popen[str], str]:
    """``assay view --port 0`` in a subprocess (indexing the newest ``warmed`` runs as it
    starts), and the URL it prints."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from assay.cli.main import main; main()",
            "view",
            "--history",
            str(history),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "400", "ASSAY_VIEW_WARM_RUNS": str(warmed)},
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    found = re.search(r"http://\S+", line)
    if not found:
        server.kill()
        raise SystemExit(f"assay view printed no URL: {line!r}")
    return server, found.group(0).rstrip("/")


def timed(client: httpx.Client, url: str) -> tuple[float, int]:
    began = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - began
    assert response.status_code == 200, (url, response.status_code, response.text[:500])
    return elapsed, len(response.content)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="write the history here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="assay-bench-view-") as folder:
        history = (args.keep or Path(folder)) / "history.sqlite"
        history.unlink(missing_ok=True)
        began = time.perf_counter()
        with HistoryStore(history) as store:
            now = time.time() - 3600
            for earlier in range(4):
                record(store, 200, args.seed + 1 + earlier, now - (5 - earlier) * 600)
            run_id = record(store, args.cases, args.seed, now)
        size = history.stat().st_size / 1e6
        print(
            f"recorded {args.cases:,} cases in {time.perf_counter() - began:.1f} s ({size:.1f} MB)"
        )
        return measure(history, run_id, args.cases)


def first_after_start(history: Path, run_id: str, pause_s: float) -> float:
    """The run page's first screen from a view started with its default warm-up (the newest
    runs indexed as it starts), asked ``pause_s`` after it printed its URL (a person opening
    the page)."""
    server, url = start_view(history, warmed=2)
    try:
        time.sleep(pause_s)
        with httpx.Client(timeout=60) as client:
            return timed(client, f"{url}/runs/{run_id}")[0]
    finally:
        server.terminate()
        server.wait(timeout=10)


def measure(history: Path, run_id: str, cases: int) -> int:
    server, url = start_view(history, warmed=0)
    try:
        with httpx.Client(timeout=60) as client:
            first, size = timed(client, f"{url}/runs/{run_id}")
            warm = min(timed(client, f"{url}/runs/{run_id}")[0] for _ in range(5))
            runs_page = min(timed(client, f"{url}/")[0] for _ in range(3))
            query = f"{url}/runs/{run_id}?status=FAILED&metric=tool_trajectory_avg_score&q=paris"
            filtered = min(timed(client, query)[0] for _ in range(3))
            last = min(
                timed(client, f"{url}/runs/{run_id}?page={cases // 100}")[0] for _ in range(3)
            )
        rss = peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=10)
    started = first_after_start(history, run_id, pause_s=2.0)
    print(
        f"run page, first screen, cold       {first * 1000:8.1f} ms  ({size / 1000:.0f} KB of HTML; "
        "no warm-up)"
    )
    print(f"run page, first screen, 2 s after start {started * 1000:5.1f} ms  (default warm-up)")
    print(f"run page, first screen, warm       {warm * 1000:8.1f} ms  (best of 5)")
    print(f"runs page                          {runs_page * 1000:8.1f} ms  (best of 3)")
    print(f"filtered run page                  {filtered * 1000:8.1f} ms  (best of 3)")
    print(f"last page of the run               {last * 1000:8.1f} ms  (best of 3)")
    print(f"server peak RSS                    {rss:8.1f} MB")
    ok = started < FIRST_SCREEN_S and rss < RSS_MB
    print(
        f"targets: first screen < {FIRST_SCREEN_S:.0f} s, RSS < {RSS_MB:.0f} MB: {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
