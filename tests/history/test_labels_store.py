"""People's labels in the run history: one per unit and labeller, replaced by a newer one,
committed at once (a killed process loses none), and a history of an older schema upgraded in
place with its runs still readable."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from assay.history import schema
from assay.history.labels import StoredLabel
from assay.history.store import SCHEMA_VERSION, HistoryStore
from assay.results.keys import CaseKey

KEY = CaseKey("travel", "forecast_paris", 1)
CONFIG = {"sets": [{"path": "travel.evalset.json", "eval_set_id": "travel"}]}


def label(labeller: str, said: str, **unit: object) -> StoredLabel:
    fields: dict[str, object] = {"criterion": "safety_v1", "invocation": 1, **unit}
    return StoredLabel(
        "run",
        KEY,
        str(fields["criterion"]),
        int(str(fields["invocation"])),
        said,
        labeller,
        rubric=fields.get("rubric"),  # type: ignore[arg-type]
        sentence=fields.get("sentence"),  # type: ignore[arg-type]
    )


def test_a_new_label_by_the_same_person_on_the_same_unit_replaces_the_old(
    tmp_path: Path,
) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.labels.put(label("ana", "safe"))
        store.labels.put(label("ana", "unsafe"))
        store.labels.put(label("ben", "safe"))
        store.labels.put(label("ana", "yes", criterion="rubric_x", rubric="r1"))
        store.labels.put(label("ana", "no", criterion="rubric_x", rubric="r2"))
        store.labels.put(label("ana", "supported", criterion="hallucinations_v1", sentence=2))
        kept = store.labels.of_run("run", "ana")
        counts = store.labels.counts("run")
        mine = [s for s in store.labels.of_case("run", KEY) if s.labeller == "ben"]
    assert [(s.criterion, s.rubric, s.sentence, s.label) for s in kept] == [
        ("safety_v1", None, None, "unsafe"),
        ("rubric_x", "r1", None, "yes"),
        ("rubric_x", "r2", None, "no"),
        ("hallucinations_v1", None, 2, "supported"),
    ]
    assert counts == {"safety_v1": 2, "rubric_x": 2, "hallucinations_v1": 1}
    assert [s.label for s in mine] == ["safe"]


_WRITER = """
import sys, time
from assay.history.labels import StoredLabel
from assay.history.store import HistoryStore
from assay.results.keys import CaseKey

store = HistoryStore(sys.argv[1])
for n in range(5):
    store.labels.put(StoredLabel("run", CaseKey("travel", f"case{n}", 1), "safety_v1", 1,
                                 "safe", "ana", reason=f"reason {n}"))
print("written", flush=True)
time.sleep(60)
"""


def test_labels_saved_survive_the_process_that_wrote_them_being_killed(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "written"
        os.kill(writer.pid, signal.SIGKILL)  # no close, no checkpoint
        writer.wait(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    with HistoryStore(path) as store:
        kept = store.labels.of_run("run")
    assert [s.reason for s in kept] == [f"reason {n}" for n in range(5)]


def test_a_version_4_history_gains_the_labels_table_in_place_and_its_runs_still_load(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    version_4 = schema.SCHEMA.split("CREATE TABLE IF NOT EXISTS labels")[0]
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(f"{version_4} PRAGMA user_version = 4;")
    with HistoryStore(path) as store:
        run = store.start_run(["travel.evalset.json"], CONFIG)
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE labels")
        db.execute("PRAGMA user_version = 4")
        db.commit()

    with HistoryStore(path) as store:
        assert store.get(run).id == run
        store.labels.put(label("ana", "safe"))
        assert [s.label for s in store.labels.of_run("run")] == ["safe"]
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
