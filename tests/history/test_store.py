"""The history store: runs and case results survive, read back as they were written."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from assay.history.records import (
    HistoryError,
    config_hash,
    default_history_path,
    git_commit,
    new_run_id,
)
from assay.history.store import SCHEMA_VERSION, HistoryStore
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.metrics.notes import MetricNotes
from assay.results.collected import CaseResults
from assay.results.model import CaseNotes, EvalCaseResult, EvalSetResult, SetNotes

CONFIG = {"sets": [{"path": "a.evalset.json", "eval_set_id": "s"}], "judge_model": None}


def case(eval_id: str, status: EvalStatus = EvalStatus.PASSED, run: int = 1) -> EvalCaseResult:
    notes = CaseNotes(run=run, metrics={"m": MetricNotes(usage=TokenUsage(prompt_tokens=7))})
    return EvalCaseResult(eval_set_id="s", eval_id=eval_id, final_eval_status=status, assay=notes)


@pytest.fixture
def store(tmp_path: Path) -> HistoryStore:
    with HistoryStore(tmp_path / "deep" / "history.sqlite") as opened:
        yield opened  # type: ignore[misc]


def test_a_case_result_reads_back_equal_and_counts_in_the_run(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    store.record_case(run, case("one"))
    store.record_case(run, case("two", EvalStatus.FAILED))
    store.record_case(run, case("two", EvalStatus.NOT_EVALUATED, run=2))

    assert store.case_results(run)[("s", "one", 1)] == case("one")
    info = store.get(run)
    assert (info.passed, info.failed, info.not_evaluated, info.tokens) == (1, 1, 1, 21)
    assert info.status == "running"
    assert info.config == CONFIG and info.config_hash == config_hash(CONFIG)


def test_a_finished_run_reads_back_its_sets_in_case_order(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    cases = [case("b"), case("a", EvalStatus.FAILED)]
    for written in reversed(cases):
        store.record_case(run, written)
    result = EvalSetResult(
        eval_set_result_id="r",
        eval_set_id="s",
        eval_case_results=cases,
        assay=SetNotes(version="1", usage={"m": TokenUsage(prompt_tokens=14)}),
    )
    store.finish_run(run, [result])

    assert store.results(run) == [result]
    assert store.get(run).status == "finished"
    assert store.get(run).tokens == 14


def test_finishing_a_run_of_spilled_results_reads_their_heads_not_the_whole_results(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    cases = CaseResults(keep=0)
    for written in [case("b"), case("a", EvalStatus.FAILED), case("a", run=2)]:
        store.record_case(run, written)
        cases.append(written)
    result = EvalSetResult(eval_set_result_id="r", eval_set_id="s", eval_case_results=[])
    result.eval_case_results = cases.close()

    def whole(_self: CaseResults) -> None:
        raise AssertionError("a spilled result read whole")

    monkeypatch.setattr(CaseResults, "__iter__", whole)
    monkeypatch.setattr(CaseResults, "__getitem__", whole)
    store.finish_run(run, [result])

    [order] = store.query("SELECT case_order FROM run_sets WHERE run_id = ?", (run,))
    assert json.loads(order[0]) == [["b", 1], ["a", 1], ["a", 2]]


def test_an_unfinished_run_reads_back_the_cases_it_recorded(store: HistoryStore) -> None:
    run = store.start_run(["a.evalset.json"], CONFIG)
    store.record_case(run, case("one"))

    [result] = store.results(run)

    assert [c.eval_id for c in result.eval_case_results] == ["one"]
    assert result.assay is not None and result.assay.summary.passed == 1
    assert result.assay.eval_set_path == "a.evalset.json"


def test_a_recorded_case_is_replaced_when_written_again(store: HistoryStore) -> None:
    run = store.start_run([], CONFIG)
    store.record_case(run, case("one", EvalStatus.FAILED))
    store.record_case(run, case("one"))

    assert list(store.case_results(run).values()) == [case("one")]


def test_runs_are_found_by_id_prefix_and_latest(store: HistoryStore) -> None:
    first = store.start_run([], CONFIG, started=1_000, run_id="20000101-000000-aaaa")
    second = store.start_run([], CONFIG, started=2_000, run_id="20000101-000001-bbbb")

    assert store.get("latest").id == second
    assert store.get("20000101-000000").id == first
    assert [r.id for r in store.runs()] == [second, first]
    with pytest.raises(HistoryError, match=r"ambiguous.*aaaa.*bbbb"):
        store.get("2000")
    with pytest.raises(HistoryError, match=r"no run 'nope'.*assay runs"):
        store.get("nope")


def test_an_empty_history_has_no_latest_run(store: HistoryStore) -> None:
    with pytest.raises(HistoryError, match="no run recorded yet"):
        store.get("latest")


def test_a_running_run_whose_process_is_gone_reads_as_interrupted(
    store: HistoryStore,
) -> None:
    run = store.start_run([], CONFIG)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    store._connection().execute("UPDATE runs SET pid = ? WHERE id = ?", (int(gone.stdout), run))

    assert store.get(run).status == "interrupted"


def test_the_history_is_a_wal_database_of_the_current_schema(store: HistoryStore) -> None:
    store.start_run([], CONFIG)
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_a_file_that_is_not_a_database_is_reported_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    path.write_text("not a database " * 100)
    with HistoryStore(path) as store, pytest.raises(HistoryError, match="not a usable run history"):
        store.runs()


def test_a_history_from_a_newer_assay_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with HistoryStore(path) as store, pytest.raises(HistoryError, match="newer"):
        store.runs()


def test_the_history_lives_beside_the_cache_unless_assay_history_says(tmp_path: Path) -> None:
    assert default_history_path({"ASSAY_CACHE_DIR": str(tmp_path)}) == tmp_path / "history.sqlite"
    assert default_history_path({"ASSAY_HISTORY": "/x/h.db"}) == Path("/x/h.db")


def test_run_ids_sort_by_start_time() -> None:
    ids = [new_run_id(t) for t in (1_000_000_000, 1_000_000_001, 2_000_000_000)]
    assert ids == sorted(ids) and ids[0].startswith("20010909-014640-")


def test_git_commit_is_none_outside_a_repository(tmp_path: Path) -> None:
    assert git_commit(tmp_path) is None


def test_a_schema_version_1_history_is_upgraded_and_its_cases_read_back(tmp_path: Path) -> None:
    from assay.history import schema as module

    path = tmp_path / "history.sqlite"
    version_1 = module.SCHEMA.split("CREATE INDEX IF NOT EXISTS runs_started")[0]
    version_1 = version_1.replace("    output BLOB,\n", "")  # added by version 7
    db = sqlite3.connect(path)
    db.executescript(f"{version_1} PRAGMA user_version = 1;")
    db.execute(
        "INSERT INTO runs (id, started, status, source, eval_sets, config, config_hash, judges, "
        "assay_version) VALUES ('old', 1.0, 'finished', 'assay', '[]', '{}', 'h', '[]', '0.1')"
    )
    db.execute(
        "INSERT INTO case_results VALUES ('old', 's', 'one', 1, 1, 7, 1.0, ?)",
        (case("one").model_dump_json(exclude_none=True),),
    )
    db.commit()
    db.close()

    with HistoryStore(path) as store:
        assert store.case_results("old") == {("s", "one", 1): case("one")}
        run = store.start_run([], CONFIG)
        store.write_cases(run, [])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    db.close()


def test_a_version_6_history_gains_the_output_column_null_in_its_rows_which_still_read(
    tmp_path: Path,
) -> None:
    from assay.history import schema as module

    path = tmp_path / "history.sqlite"
    version_6 = module.SCHEMA.replace("    output BLOB,\n", "")
    with HistoryStore(path) as store:
        run = store.start_run([], CONFIG)
    db = sqlite3.connect(path)
    db.executescript(
        "DROP TABLE case_results;"
        + version_6.split("CREATE INDEX IF NOT EXISTS runs_started")[0]
        + "PRAGMA user_version = 6;"
    )
    db.execute(
        "INSERT INTO case_results VALUES (?, 's', 'one', 1, 1, 7, 1.0, ?)",
        (run, case("one").model_dump_json(exclude_none=True)),
    )
    db.commit()
    db.close()

    with HistoryStore(path) as store:
        assert store.case_results(run) == {("s", "one", 1): case("one")}
        assert store.kept_cases(run).take(("s", "one", 1)) == (
            case("one").model_dump_json(exclude_none=True),
            None,
        )
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        assert db.execute("SELECT output FROM case_results").fetchall() == [(None,)]
    db.close()


def test_cases_stored_by_reference_need_the_runs_inputs(store: HistoryStore) -> None:
    from assay.history.records import case_row

    run = store.start_run([], CONFIG)
    text = '{"v":2,"k":0,"c":["s","s","one",1,"",null],"s":[],"t":[],"n":[1,0.0],"e":[0,0]}'
    store.write_cases(run, [case_row(case("one"), text, (0, "[]"))])

    with pytest.raises(HistoryError, match="its input files were not recorded"):
        store.case_results(run)


def test_a_finished_run_records_its_judges_in_words_the_simulated_user_marked(
    store: HistoryStore,
) -> None:
    from assay.results.model import JudgeInfo

    embedded = JudgeInfo(
        model="local:",
        source="embedded",
        backend="local",
        judge_model="local:qwen2.5-coder-1.5b",
        description="embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M (no --judge-model, ...)",
    )
    judges = {
        "final_response_match_v2": embedded,
        "safety_v1": embedded,
        "user_simulator": JudgeInfo(model="openai:gpt-4o", source="config"),
        "hallucinations_v1": JudgeInfo(unavailable="no judge model"),
    }
    run = store.start_run(["a.evalset.json"], CONFIG)
    result = EvalSetResult(
        eval_set_result_id="r", eval_set_id="s", assay=SetNotes(version="1", judges=judges)
    )
    store.finish_run(run, [result])

    assert store.get(run).judges == [
        "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M (no --judge-model, ...)",
        "simulated user: openai:gpt-4o (from the config)",
    ]
    [back] = store.results(run)
    assert back.assay is not None and back.assay.judges == judges


def test_a_run_recorded_before_judges_were_described_lists_and_reads_back(
    store: HistoryStore,
) -> None:
    """An older assay stored the judges' model strings, and set headers whose judges have only
    model and source."""
    header = json.dumps(
        {
            "eval_set_result_id": "r",
            "eval_set_id": "s",
            "assay": {
                "version": "0.1.0",
                "judges": {"safety_v1": {"model": "openai:gpt-4o-mini", "source": "config"}},
            },
        }
    )
    assert store.runs() == []  # creates the file, of the current schema
    with sqlite3.connect(store.path) as db:
        db.execute(
            "INSERT INTO runs (id, started, finished, status, source, eval_sets, config, "
            "config_hash, judges, assay_version) VALUES ('old', 1.0, 2.0, 'finished', 'assay', "
            "'[]', '{}', 'h', '[\"openai:gpt-4o-mini\"]', '0.1.0')"
        )
        db.execute("INSERT INTO run_sets VALUES ('old', 0, 's', ?, '[]')", (header,))
    db.close()

    assert store.get("old").judges == ["openai:gpt-4o-mini"]
    [result] = store.results("old")
    assert result.assay is not None
    assert result.assay.judges["safety_v1"].describe() == "openai:gpt-4o-mini (from the config)"
