"""The run history's SQL schema, and what each version added.

Schema version 7 (``PRAGMA user_version``):

``runs``
    one row per run: id (``20261122-041500-ab12``: UTC start time and four random hex digits, so
    ids sort by time), start and end, status (``running``, ``finished``, ``interrupted``), where
    it came from (``assay`` or ``adk`` for an imported file), the eval set paths, the run's
    config as JSON and its sha256, the judges (in words, as
    :func:`~assay.history.records.run_judges` names them; a run recorded before they were, or
    imported from ADK, names their model strings), assay's version, the git commit of the
    working directory, and the host and process that wrote it (a ``running`` run whose process
    is gone reads as ``interrupted``).
``run_sets``
    one row per eval set of a finished run: its ``EvalSetResult`` without the case results, and
    the order of its cases.
``case_results``
    one row per case and run number, committed as soon as the case finishes (by
    :class:`~assay.history.writer.HistoryWriter`, which commits whatever has finished each time
    it gets to write): the status, the tokens its judges used, and the case result, compactly,
    by reference to the run's inputs (:mod:`assay.history.compact`); and, for a case scored in
    a worker process (``--workers``), ``output``: the result as the results file holds it,
    compressed, with its head and tokens (:func:`~assay.results.collected.pack_output`, made
    there anyway), so that a resumed run adds it back without decoding the record (NULL for
    other cases: their resumed runs decode).
``run_metrics``
    the metric headers (names, thresholds, criteria) the compact case results refer to.
``run_inputs``, ``blobs`` and ``blob_parts``
    the files a run read (eval sets, traces), each file's bytes stored once by sha256,
    zlib-compressed (level 1: a tenth of the size for JSON, at ~150 MB/s on the writer's
    thread) (:mod:`assay.history.inputs`): in ``blobs.zlib`` when that is at most
    :data:`~assay.history.inputs.PART` bytes, else in parts of that size in ``blob_parts``
    (``blobs.zlib`` then empty), so that no file is ever held whole in memory.
``judge_cards``
    one row per judge card (``assay judge agree``, :mod:`assay.agreement.cards`): when it was
    measured, the judge model, criterion and prompt version it is looked up by, and the card
    itself as JSON.
``labels``
    one row per person's label on a judged unit (``assay view``, :mod:`assay.history.labels`):
    the run, eval set, case and run number, the criterion, the turn (from 1), the rubric (``''``
    for none) and sentence (0 for none), who labelled it, the label, a one-line reason and when;
    one per unit and labeller (a new label replaces the old), indexed by run and criterion.
``judge_batches``
    one row per provider batch a run's judges submitted (``--judge-batch``,
    :mod:`assay.history.batches`): the provider (backend kind and base URL), the batch id, the
    judge model, the run, when it was submitted, its status (``submitted``, then ``collected``
    once its answers are in the response cache, and when), and the cache keys of its lines as
    a JSON list; indexed by provider, model and status, so a later run finds the open ones.

A file of an older version is upgraded in place when it is opened: every table is created if it
is missing, and the columns a later version added to a table that exists are added (NULL in its
rows); nothing else is changed. Schema version 6 had no ``case_results.output``. Schema version
5 had no ``judge_batches``. Schema version 4 had no ``labels``. Schema version 3 had no ``blob_parts``.
Schema version 2 had no ``judge_cards``.
Schema version 1 had no ``run_metrics``, ``run_inputs`` or ``blobs`` and stored each case
result as full JSON; such a file is upgraded in place and its case results read as they are.
"""

from __future__ import annotations

import sqlite3

SCHEMA_VERSION = 7

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started REAL NOT NULL,
    finished REAL,
    status TEXT NOT NULL,
    source TEXT NOT NULL,
    eval_sets TEXT NOT NULL,
    config TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    judges TEXT NOT NULL,
    assay_version TEXT NOT NULL,
    git_commit TEXT,
    host TEXT,
    pid INTEGER,
    tokens INTEGER
);
CREATE TABLE IF NOT EXISTS run_sets (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    eval_set_id TEXT NOT NULL,
    header TEXT NOT NULL,
    case_order TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE IF NOT EXISTS case_results (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    eval_set_id TEXT NOT NULL,
    eval_id TEXT NOT NULL,
    run_number INTEGER NOT NULL,
    status INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    written REAL NOT NULL,
    result TEXT NOT NULL,
    output BLOB,
    PRIMARY KEY (run_id, eval_set_id, eval_id, run_number)
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE TABLE IF NOT EXISTS run_metrics (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    header TEXT NOT NULL,
    PRIMARY KEY (run_id, number)
);
CREATE TABLE IF NOT EXISTS blobs (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    zlib BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS blob_parts (
    sha256 TEXT NOT NULL,
    part INTEGER NOT NULL,
    zlib BLOB NOT NULL,
    PRIMARY KEY (sha256, part)
);
CREATE TABLE IF NOT EXISTS run_inputs (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    position INTEGER NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, position)
);
CREATE TABLE IF NOT EXISTS judge_cards (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    judge_model TEXT NOT NULL,
    criterion TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    card TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS judge_cards_key
    ON judge_cards (judge_model, criterion, prompt_version, created);
CREATE TABLE IF NOT EXISTS labels (
    run_id TEXT NOT NULL,
    eval_set_id TEXT NOT NULL,
    eval_id TEXT NOT NULL,
    run_number INTEGER NOT NULL,
    criterion TEXT NOT NULL,
    invocation INTEGER NOT NULL,
    rubric TEXT NOT NULL,
    sentence INTEGER NOT NULL,
    labeller TEXT NOT NULL,
    label TEXT NOT NULL,
    reason TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, eval_set_id, eval_id, run_number, criterion, invocation, rubric,
                 sentence, labeller)
);
CREATE INDEX IF NOT EXISTS labels_criterion ON labels (criterion, run_id);
CREATE TABLE IF NOT EXISTS judge_batches (
    provider TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    model TEXT NOT NULL,
    run_id TEXT,
    submitted REAL NOT NULL,
    status TEXT NOT NULL,
    keys TEXT NOT NULL,
    closed REAL,
    PRIMARY KEY (provider, batch_id)
);
CREATE INDEX IF NOT EXISTS judge_batches_open ON judge_batches (provider, model, status);
"""

ADDED_COLUMNS = (("case_results", "output", "BLOB"),)
"""Columns added to tables an older schema version had: (table, column, type)."""


def upgrade(db: sqlite3.Connection) -> None:
    """Bring an opened history file to :data:`SCHEMA_VERSION`: the tables it lacks created, the
    columns a later version added to those it has added; a file of a newer version is refused
    (``sqlite3.DatabaseError``)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise sqlite3.DatabaseError(
            f"schema version {version} is newer than this assay's ({SCHEMA_VERSION})"
        )
    if version < SCHEMA_VERSION:
        added = "".join(_added_columns(db))
        db.executescript(f"BEGIN; {SCHEMA}{added} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")


def _added_columns(db: sqlite3.Connection) -> list[str]:
    """The statements that add the columns a later schema version added to the tables this
    file has (a table it lacks is created whole)."""
    statements = []
    for table, column, kind in ADDED_COLUMNS:
        have = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
        if have and column not in have:
            statements.append(f" ALTER TABLE {table} ADD COLUMN {column} {kind};")
    return statements
