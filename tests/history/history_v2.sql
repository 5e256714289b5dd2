-- A run history made by assay's schema version 2 (before judge cards), as sqlite3's iterdump
-- wrote it: one finished run of one case, its judge named. The migration test loads it.
BEGIN TRANSACTION;
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    zlib BLOB NOT NULL
);
CREATE TABLE case_results (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    eval_set_id TEXT NOT NULL,
    eval_id TEXT NOT NULL,
    run_number INTEGER NOT NULL,
    status INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    written REAL NOT NULL,
    result TEXT NOT NULL,
    PRIMARY KEY (run_id, eval_set_id, eval_id, run_number)
);
INSERT INTO "case_results" VALUES('20260101-000000-ab12','travel','greeting',1,1,7,1767225630.0,'{"eval_set_id":"travel","eval_id":"greeting","final_eval_status":1,"overall_eval_metric_results":[],"eval_metric_result_per_invocation":[],"session_id":"","assay":{"metric_reasons":{},"not_applicable":[],"run":1,"duration_s":0.0,"metrics":{"safety_v1":{"usage":{"prompt_tokens":7,"completion_tokens":0,"calls":1,"cache_hits":0,"retries":0},"per_invocation":[]}}}}');
CREATE TABLE run_inputs (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    position INTEGER NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, position)
);
CREATE TABLE run_metrics (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    header TEXT NOT NULL,
    PRIMARY KEY (run_id, number)
);
CREATE TABLE run_sets (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    eval_set_id TEXT NOT NULL,
    header TEXT NOT NULL,
    case_order TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
INSERT INTO "run_sets" VALUES('20260101-000000-ab12',0,'travel','{"eval_set_result_id":"r","eval_set_id":"travel","creation_timestamp":1767225600.0,"assay":{"version":"0.1.0","config_source":"defaults","criteria":{},"summary":{"passed":0,"failed":0,"not_evaluated":0},"duration_s":0.0,"warnings":[],"judges":{"safety_v1":{"model":"openai:gpt-4o-mini","source":"--judge-model","backend":"openai","judge_model":"openai:gpt-4o-mini","description":"openai:gpt-4o-mini (from --judge-model)"}},"usage":{}}}','[["greeting", 1]]');
CREATE TABLE runs (
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
INSERT INTO "runs" VALUES('20260101-000000-ab12',1767225600.0,1767225660.0,'finished','assay','["travel.evalset.json"]','{"judge_model": null, "sets": [{"eval_set_id": "travel", "path": "travel.evalset.json"}]}','518b1f947acf910d7fa98962adb006f5a881dcc1804ee533ec8212f139b61e82','["openai:gpt-4o-mini (from --judge-model)"]','0.1.0',NULL,'elsewhere',1,0);
CREATE INDEX runs_started ON runs (started);
COMMIT;
PRAGMA user_version = 2;
