"""A run in progress over real HTTP: ``/runs/{id}/events`` streams its cases as they are
written to the history by another thread, then ``end``; a finished run ends at once; streams
stop when the client goes away and when the server stops."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _support import Example, RunCli

from assay.history.records import CaseRow
from assay.history.store import HistoryStore
from assay.metrics.base import EvalStatus
from assay.results.model import CaseNotes, EvalCaseResult, EvalMetricResult
from assay.view import ViewServer, ViewSettings
from assay.view.pages import live

CONFIG = {"sets": [{"path": "travel.evalset.json", "eval_set_id": "travel"}]}


def recorded_run(run_cli: RunCli, example: Example, history: Path) -> str:
    """The example scored against its traces, recorded in ``history``; the run's id."""
    done = run_cli("eval", example.evalset, "--traces", example.traces, "--history-file", history)
    assert done.code in (0, 1), done.output
    with HistoryStore(history) as store:
        return store.runs(limit=1)[0].id


def stored_rows(history: Path, run_id: str) -> tuple[list[tuple[int, str]], list[CaseRow]]:
    """A recorded run's metric headers and case rows, as stored (compact records)."""
    with contextlib.closing(sqlite3.connect(history)) as db:
        headers = db.execute(
            "SELECT number, header FROM run_metrics WHERE run_id = ?", (run_id,)
        ).fetchall()
        rows = db.execute(
            "SELECT eval_set_id, eval_id, run_number, status, tokens, written, result "
            "FROM case_results WHERE run_id = ? ORDER BY written",
            (run_id,),
        ).fetchall()
    return headers, [CaseRow(*row) for row in rows]


class Replay:
    """A new run in ``history`` whose cases (copied from a recorded run) are written one at a
    time by a thread, ``pause_s`` apart, as ``assay eval`` would; then it is finished."""

    def __init__(self, history: Path, source_run: str, pause_s: float) -> None:
        self.store = HistoryStore(history)
        self.headers, self.rows = stored_rows(history, source_run)
        self.pause_s = pause_s
        self.run_id = self.store.start_run(["travel.evalset.json"], CONFIG)
        with contextlib.closing(sqlite3.connect(history)) as db, db:
            db.executemany(
                "INSERT INTO run_metrics VALUES (?, ?, ?)",
                [(self.run_id, number, text) for number, text in self.headers],
            )
        self.written: list[str] = []
        self.finished = threading.Event()
        self.go = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        self.go.wait(10)
        for row in self.rows:
            time.sleep(self.pause_s)
            self.store.write_cases(self.run_id, [row._replace(written=time.time())])
            self.written.append(f"{row.eval_set_id}/{row.eval_id}/{row.run}")
        self.store.finish_run(self.run_id, [])
        self.finished.set()

    def __enter__(self) -> Replay:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.go.set()
        self.thread.join(20)
        self.store.close()


@contextlib.contextmanager
def served(history: Path, key: str | None = None) -> Iterator[ViewServer]:
    server = ViewServer(ViewSettings(history, key=key)).start()
    try:
        yield server
    finally:
        live.close_streams(server.app)
        server.stop()


def events(response: httpx.Response, until: str = "end") -> Iterator[tuple[str, Any]]:
    """The stream's events as (name, data) and comments as ("comment", text), up to ``until``."""
    name, data = "", []
    for line in response.iter_lines():
        if line.startswith(":"):
            yield "comment", line[1:].strip()
        elif line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif line == "" and name:
            yield name, json.loads("\n".join(data))
            if name == until:
                return
            name, data = "", []


def base(server: ViewServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def test_cases_stream_in_the_order_they_finish_then_end(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite"
    source = recorded_run(run_cli, example, history)
    with served(history) as server, Replay(history, source, pause_s=0.3) as replay:
        seen: list[tuple[str, Any]] = []
        live_before_end = False
        with (
            httpx.Client(timeout=15) as client,
            client.stream("GET", f"{base(server)}/runs/{replay.run_id}/events") as response,
        ):
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            replay.go.set()
            for name, data in events(response):
                if name == "case" and all(seen_name != "case" for seen_name, _ in seen):
                    live_before_end = not replay.finished.is_set()
                seen.append((name, data))
    cases = [data for name, data in seen if name == "case"]
    assert [case["key"] for case in cases] == replay.written
    assert live_before_end
    first = cases[0]
    assert first["href"] == f"/runs/{replay.run_id}/cases/{first['set']}/{first['eval_id']}/1"
    assert first["metrics"] and {"name", "status", "class", "text"} <= set(first["metrics"][0])
    assert "tool_trajectory_avg_score" in {m["name"] for m in first["metrics"]}
    end = seen[-1]
    assert end[0] == "end"
    assert end[1]["status"] == "finished"
    assert end[1]["finished"] == end[1]["total"] == len(replay.rows)
    counts = [data["finished"] for name, data in seen if name == "counts"]
    assert counts == sorted(counts) and counts[-1] == len(replay.rows)


def test_a_finished_run_sends_its_counts_and_end_at_once(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite"
    run_id = recorded_run(run_cli, example, history)
    with HistoryStore(history) as store:
        info = store.get(run_id)
    started = time.monotonic()
    with (
        served(history) as server,
        httpx.Client(timeout=10) as client,
        client.stream("GET", f"{base(server)}/runs/{run_id}/events") as response,
    ):
        seen = list(events(response))
    assert time.monotonic() - started < 5
    assert [name for name, _ in seen] == ["counts", "end"]
    end = seen[-1][1]
    assert (end["passed"], end["failed"], end["not_evaluated"]) == (
        info.passed,
        info.failed,
        info.not_evaluated,
    )
    assert end["finished"] == end["total"] == info.cases


def test_a_reconnecting_browser_gets_only_the_cases_after_its_last_event(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    history = tmp_path / "history.sqlite"
    source = recorded_run(run_cli, example, history)
    with Replay(history, source, pause_s=0.0) as replay:
        replay.go.set()
        assert replay.finished.wait(10)
    with HistoryStore(history) as store:
        store.reopen(replay.run_id)  # running again: what it recorded is streamed
    with contextlib.closing(sqlite3.connect(history)) as db:
        rowids = [
            rowid
            for (rowid,) in db.execute(
                "SELECT rowid FROM case_results WHERE run_id = ? ORDER BY rowid", (replay.run_id,)
            )
        ]
    url = f"/runs/{replay.run_id}/events"
    with served(history) as server, httpx.Client(base_url=base(server), timeout=10) as client:
        with (
            client.stream("GET", url) as response,
            contextlib.closing(events(response, until="counts")) as stream,
        ):
            every = [data["key"] for name, data in stream if name == "case"]
        last_seen = {"Last-Event-ID": str(rowids[2])}
        with (
            client.stream("GET", url, headers=last_seen) as response,
            contextlib.closing(events(response, until="counts")) as stream,
        ):
            after = [data["key"] for name, data in stream if name == "case"]
    assert every == replay.written
    assert after == replay.written[3:]


def test_an_unknown_run_is_not_found_and_a_key_is_asked(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    HistoryStore(history).close()
    with served(history, key="k3y") as server, httpx.Client(timeout=5) as client:
        assert client.get(f"{base(server)}/runs/nope/events").status_code == 401
        found = client.get(f"{base(server)}/runs/nope/events", headers={"X-Assay-Key": "k3y"})
    assert found.status_code == 404


def test_a_quiet_run_gets_heartbeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "HEARTBEAT_S", 0.2)
    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        run_id = store.start_run(["a.evalset.json"], CONFIG)
    with (
        served(history) as server,
        httpx.Client(timeout=10) as client,
        client.stream("GET", f"{base(server)}/runs/{run_id}/events") as response,
        contextlib.closing(events(response)) as stream,
    ):
        first_two = [next(stream), next(stream)]
    assert first_two[0][0] == "counts" and first_two[0][1]["total"] is None
    assert first_two[1] == ("comment", "keep-alive")


def _open_streams(server: ViewServer) -> int:
    return live.live_state(server.app).open


def test_a_stream_ends_when_its_client_goes_away(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        run_id = store.start_run(["a.evalset.json"], CONFIG)
    with served(history) as server:
        with (
            httpx.Client(timeout=10) as client,
            client.stream("GET", f"{base(server)}/runs/{run_id}/events") as response,
            contextlib.closing(events(response)) as stream,
        ):
            assert next(stream)[0] == "counts"
            assert _open_streams(server) == 1
        deadline = time.monotonic() + 5
        while _open_streams(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _open_streams(server) == 0


def test_stopping_the_server_ends_its_open_streams_without_waiting(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        run_id = store.start_run(["a.evalset.json"], CONFIG)
    server = ViewServer(ViewSettings(history)).start()
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", f"{base(server)}/runs/{run_id}/events") as response,
        contextlib.closing(events(response)) as stream,
    ):
        assert next(stream)[0] == "counts"
        started = time.monotonic()
        live.close_streams(server.app)
        server.stop()
        stopped_in = time.monotonic() - started
        rest = list(stream)  # the stream was ended by the server
    assert not server.thread.is_alive()
    assert stopped_in < 3
    assert all(name != "case" for name, _ in rest)


def test_a_stream_joining_a_run_counts_its_recorded_cases_once(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        run_id = store.start_run(["a.evalset.json"], CONFIG)
        for eval_id, status in (("one", EvalStatus.PASSED), ("two", EvalStatus.FAILED)):
            store.record_case(run_id, _full_case(eval_id, status))
    with (
        served(history) as server,
        httpx.Client(timeout=10) as client,
        client.stream("GET", f"{base(server)}/runs/{run_id}/events") as response,
        contextlib.closing(events(response, until="counts")) as stream,
    ):
        seen = list(stream)
    cases = [data for name, data in seen if name == "case"]
    assert [case["key"] for case in cases] == ["s/one/1", "s/two/1"]  # the page skips listed ones
    assert cases[1]["status"] == "FAILED" and cases[1]["class"] == "failed"
    assert cases[1]["metrics"] == [
        {"name": "m", "status": "FAILED", "class": "failed", "text": "0.20"}
    ]
    counts = seen[-1][1]
    assert (counts["finished"], counts["passed"], counts["failed"]) == (2, 1, 1)


def _full_case(eval_id: str, status: EvalStatus) -> EvalCaseResult:
    """A case result stored as full JSON (as an imported or older run's are)."""
    score = 1.0 if status == EvalStatus.PASSED else 0.2
    metric = EvalMetricResult(metric_name="m", threshold=0.5, score=score, eval_status=status)
    return EvalCaseResult(
        eval_set_id="s",
        eval_id=eval_id,
        final_eval_status=status,
        overall_eval_metric_results=[metric],
        assay=CaseNotes(run=1),
    )
