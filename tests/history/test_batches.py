"""The judge batches the run history keeps (schema 6), and the upgrade of a schema 5 file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from assay.history.schema import SCHEMA, SCHEMA_VERSION
from assay.history.store import HistoryStore
from assay.llm.batch import COLLECTED, BatchRecord


def record(batch_id: str, model: str = "openai:judge", submitted: float = 1.0) -> BatchRecord:
    return BatchRecord("openai http://x/v1", batch_id, model, ("k1", "k2"), submitted, run_id="r")


def test_open_batches_are_found_by_provider_and_model_until_collected(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "history.sqlite") as store:
        store.batches.add(record("b2", submitted=2.0))
        store.batches.add(record("b1", submitted=1.0))
        store.batches.add(record("other", model="openai:other"))
        store.batches.close("openai http://x/v1", "b2", COLLECTED)

        assert store.batches.pending("openai http://x/v1", "openai:judge") == [record("b1")]
        assert [r.batch_id for r in store.batches.of_run("r")] == ["b1", "other", "b2"]
        assert store.batches.of_run("r")[-1].status == COLLECTED


def test_a_schema_5_history_gains_the_batches_table_in_place(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    before_batches = SCHEMA.split("CREATE TABLE IF NOT EXISTS judge_batches")[0]
    db = sqlite3.connect(path)
    db.executescript(f"{before_batches} PRAGMA user_version = 5;")
    db.execute("INSERT INTO blobs (sha256, size, zlib) VALUES ('kept', 0, x'')")
    db.commit()
    db.close()

    with HistoryStore(path) as store:
        store.batches.add(record("b1"))
        assert store.batches.pending("openai http://x/v1", "openai:judge") == [record("b1")]
        assert store.query("SELECT sha256 FROM blobs") == [("kept",)]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    db.close()
