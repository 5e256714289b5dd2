"""``assay eval`` records its runs; ``assay runs``, ``show``, ``import`` and ``--resume``."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _judges import approve
from _support import Example, RunCli

from assay.evalset.io import load_eval_set
from assay.history.records import default_history_path
from assay.history.sources import read_results_file, results_for
from assay.history.store import HistoryStore
from assay.results.model import EvalSetResult


def history() -> Path:
    return default_history_path()


def test_an_eval_run_is_recorded_and_reads_back_as_its_output(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--output", out)

    with HistoryStore(history()) as store:
        [info] = store.runs()
    assert run.code == 0 and f"recorded as run {info.id}" in run.out
    assert (info.status, info.cases, info.passed) == ("finished", 5, 5)
    assert info.judges == ["openai:stub-judge (from ASSAY_JUDGE_MODEL)"] and info.tokens > 0
    assert info.config["sets"][0]["eval_set_id"] == "travel_assistant"
    assert results_for(info.id) == read_results_file(out)
    assert results_for("latest") == read_results_file(out)


def test_no_history_records_nothing(run_cli: RunCli, example: Example) -> None:
    run = run_cli("eval", example.evalset, "--traces", example.traces, "--no-history")
    assert run.code == 0 and "recorded as run" not in run.out
    assert not history().exists()


def test_eval_sets_sharing_an_id_are_refused_a_history_that_would_merge_their_cases(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    twin = tmp_path / "twin.evalset.json"
    twin.write_bytes(example.evalset.read_bytes())

    given = ("--traces", example.traces, "--config", example.config)
    refused = run_cli("eval", example.evalset, twin, *given)
    kept = run_cli("eval", example.evalset, twin, *given, "--no-history")

    assert refused.code == 2 and not history().exists()
    assert f"{twin}: eval_set_id: eval set id 'travel_assistant' is also that of" in refused.err
    assert "--no-history" in refused.err
    assert kept.code == 0 and "10 passed" in kept.out


@pytest.mark.parametrize("stream", ["100000", "0"])  # 0: the eval set streamed
def test_cases_sharing_an_eval_id_are_refused_a_history_that_would_merge_them(
    run_cli: RunCli, example: Example, tmp_path: Path, stream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_STREAM_MB", stream)
    data = json.loads(example.evalset.read_text(encoding="utf-8"))
    data["eval_cases"].append(data["eval_cases"][0])
    repeated = tmp_path / "repeated.evalset.json"
    repeated.write_text(json.dumps(data), encoding="utf-8")

    given = ("--traces", example.traces, "--config", example.config)
    refused = run_cli("eval", repeated, *given)
    kept = run_cli("eval", repeated, *given, "--no-history")

    assert refused.code == 2 and not history().exists()
    assert f"{repeated}: eval_cases[5].eval_id: eval_id 'forecast_paris' repeats" in refused.err
    assert kept.code == 0 and "6 passed" in kept.out


def test_the_history_file_option_moves_the_history(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    moved = tmp_path / "elsewhere.sqlite"
    run_cli("eval", example.evalset, "--traces", example.traces, "--history-file", moved)
    listed = run_cli("runs", "--history-file", moved)
    assert moved.is_file() and not history().exists()
    assert "travel.evalset.json" in listed.out and "100%" in listed.out


def test_runs_lists_each_run_with_its_pass_rate_judge_and_tokens(
    run_cli: RunCli, example: Example
) -> None:
    run_cli("eval", example.evalset, "--traces", example.traces)
    run_cli("eval", example.evalset, "--traces", example.regressed)
    listed = run_cli("runs")

    with HistoryStore(history()) as store:
        newest, oldest = store.runs()
    assert listed.code == 0
    assert listed.out.index(newest.id) < listed.out.index(oldest.id)
    assert "100%" in listed.out and f"{newest.pass_rate:.0%}" in listed.out
    assert f"{oldest.tokens:,}" in listed.out
    assert "openai:stub-judge (from ASSAY_JUDGE_MODEL)" in listed.out  # the judge, and why


def test_runs_and_show_name_the_judge_and_why_it_was_chosen(
    run_cli: RunCli, example: Example
) -> None:
    run_cli("eval", example.evalset, "--traces", example.traces, "--judge-model", "openai:x")
    listed = run_cli("runs")
    shown = run_cli("show", "latest")

    assert "openai:x (from --judge-model)" in listed.out
    assert "judge openai:x (from --judge-model): final_response_match_v2, " in shown.out


def test_runs_on_an_empty_history_says_so(run_cli: RunCli) -> None:
    listed = run_cli("runs")
    assert listed.code == 0 and "no runs recorded" in listed.out


def test_show_prints_a_run_as_eval_printed_it(run_cli: RunCli, example: Example) -> None:
    evaluated = run_cli("eval", example.evalset, "--traces", example.traces)
    shown = run_cli("show", "latest")

    assert shown.code == 0 and shown.out.startswith("run ")
    table = evaluated.out[evaluated.out.index("travel_assistant") : evaluated.out.index("5 passed")]
    assert table in shown.out


def test_show_lists_a_set_larger_than_max_cases_as_eval_does(
    run_cli: RunCli, example: Example
) -> None:
    evaluated = run_cli("eval", example.evalset, "--traces", example.regressed, "--max-cases", "3")
    shown = run_cli("show", "latest", "--max-cases", "3")

    assert shown.code == 0
    table = evaluated.out[evaluated.out.index("travel_assistant") : evaluated.out.index("1 passed")]
    assert "3 of the 4 cases that did not pass" in table
    assert table in shown.out


def test_show_of_an_unknown_run_names_it(run_cli: RunCli, example: Example) -> None:
    run_cli("eval", example.evalset, "--traces", example.traces)
    shown = run_cli("show", "20000101-nope")
    assert shown.code == 2 and "no run '20000101-nope'" in shown.err


def test_resume_refuses_other_inputs_than_the_run_had(run_cli: RunCli, example: Example) -> None:
    run_cli("eval", example.evalset, "--traces", example.traces)
    resumed = run_cli("eval", example.evalset, "--traces", example.regressed, "--resume", "latest")
    assert resumed.code == 2
    assert (
        "cannot be resumed with these inputs (the traces or agent options changed)" in resumed.err
    )


def test_resume_needs_the_history(run_cli: RunCli, example: Example) -> None:
    resumed = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--no-history", "--resume", "x"
    )
    assert resumed.code == 2 and "--no-history" in resumed.err


def test_resuming_a_finished_run_scores_nothing_again(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    run_cli("eval", example.evalset, "--traces", example.traces, "--no-cache")
    calls = judge_env.count()
    resumed = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--no-cache", "--resume", "latest"
    )
    assert resumed.code == 0 and "5 case result(s) kept" in resumed.out
    assert judge_env.count() == calls
    assert len(HistoryStore(history()).runs()) == 1


def test_a_run_recorded_with_criteria_written_in_full_can_still_be_resumed(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    """Runs recorded before bare thresholds were kept as numbers wrote every criterion in full
    (``"safety_v1": {"threshold": 0.8, ...}``); resuming one is not refused as changed."""
    from assay.config import read_config
    from assay.history.records import config_hash

    run_cli("eval", example.evalset, "--traces", example.traces)
    with sqlite3.connect(history()) as db:
        run_id, stored = db.execute("SELECT id, config FROM runs").fetchone()
        config = json.loads(stored)
        [entry] = config["sets"]
        assert entry["criteria"]["safety_v1"] == 0.8  # written bare, as in the config file
        full = read_config(example.evalset.parent / "test_config.json").criteria
        entry["criteria"] = {k: v.model_dump(mode="json") for k, v in full.items()}
        db.execute(
            "UPDATE runs SET config = ?, config_hash = ? WHERE id = ?",
            (json.dumps(config, sort_keys=True), config_hash(config), run_id),
        )
    resumed = run_cli("eval", example.evalset, "--traces", example.traces, "--resume", "latest")
    assert resumed.code == 0, resumed.output
    assert "5 case result(s) kept" in resumed.out


def test_import_adds_adk_results_as_runs(run_cli: RunCli, example: Example, tmp_path: Path) -> None:
    out = tmp_path / "app_1.evalset_result.json"
    run_cli("eval", example.evalset, "--traces", example.traces, "--output", out, "--no-history")
    imported = run_cli("import", out)
    again = run_cli("import", out)

    assert imported.code == 0 and "imported as run" in imported.out
    assert "already imported as run" in again.out
    assert "finished (adk)" in run_cli("runs").out


# --- a run killed halfway and resumed ------------------------------------------------------

AGENT = """
import importlib.util, os
spec = importlib.util.spec_from_file_location("travel_example_agent", {example!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

async def agent(message, session):
    with open(os.environ["AGENT_LOG"], "a", encoding="utf-8") as log:
        log.write(message.replace("\\n", " ") + "\\n")
    return await module.travel_agent(message, session)
"""


def _comparable(results: list[EvalSetResult]) -> list[Any]:
    """What must not depend on the interruption: statuses, scores and the agent's answers."""
    return [
        (
            case.eval_id,
            case.assay.run,
            case.final_eval_status,
            [
                (row.metric_name, row.score, row.eval_status)
                for row in case.overall_eval_metric_results
                if row.metric_name != "invocation_duration_v1"
            ],
            [
                row.actual_invocation.final_response
                for row in case.eval_metric_result_per_invocation
            ],
        )
        for result in results
        for case in result.eval_case_results
    ]


def _first_messages(example: Example) -> dict[str, str]:
    cases = load_eval_set(example.evalset).eval_set.eval_cases
    found = {}
    for case in cases:
        if case.conversation:
            found[case.eval_id] = case.conversation[0].user_content.parts[0].text or ""
        elif case.conversation_scenario is not None:
            found[case.eval_id] = case.conversation_scenario.starting_prompt
    return found


def _recorded(path: Path) -> list[str]:
    if not path.exists():
        return []
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT eval_id FROM case_results")]
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        db.close()


def test_a_run_killed_halfway_resumes_to_the_uninterrupted_results_without_calling_again(
    example: Example, tmp_path: Path
) -> None:
    agent_file = tmp_path / "logging_agent.py"
    agent_file.write_text(AGENT.format(example=str(example.dir / "agent.py")))
    store = tmp_path / "history.sqlite"
    assay = Path(sys.executable).parent / "assay"

    with JudgeServer(reply=approve, latency_s=0.25) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "ASSAY_HISTORY": str(store),
            "COLUMNS": "200",
        }

        def command(out: str, log: str, *extra: str) -> list[str]:
            env["AGENT_LOG"] = str(tmp_path / log)
            return [
                str(assay), "eval", str(example.evalset), "--agent", f"{agent_file}:agent",
                "--no-cache", "--concurrency", "1", "--output", str(tmp_path / out), *extra,
            ]  # fmt: skip

        killed = subprocess.Popen(
            command("killed.json", "killed.log"),
            env=dict(env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while len(_recorded(store)) < 2 and killed.poll() is None:
            assert time.monotonic() < deadline, "the run recorded no case in 60 s"
            time.sleep(0.02)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        finished = set(_recorded(store))
        before_resume = len(server.completions)
        server.latency_s = 0.0

        resumed = subprocess.run(
            command("resumed.json", "resumed.log", "--resume", "latest"),
            env=dict(env), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        after_resume = server.completions[before_resume:]
        whole = subprocess.run(
            command("whole.json", "whole.log", "--no-history"),
            env=dict(env), capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    assert killed.returncode == -signal.SIGKILL and 2 <= len(finished) < 5
    # exit 1 for both: the example's half-answered conversion fails, resumed or not
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert f"{len(finished)} case result(s) kept" in resumed.stdout
    assert whole.returncode == 1, whole.stdout + whole.stderr
    resumed_results = read_results_file(tmp_path / "resumed.json")
    assert _comparable(resumed_results) == _comparable(read_results_file(tmp_path / "whole.json"))
    assert results_for(str(tmp_path / "resumed.json")) == results_for("latest", store)

    firsts = _first_messages(example)
    agent_saw = (tmp_path / "resumed.log").read_text(encoding="utf-8")
    prompts = [json.dumps(r.body) for r in after_resume]
    for eval_id, message in firsts.items():
        was_resumed = eval_id not in finished
        assert (message in agent_saw) == was_resumed, eval_id
        asked = any(json.dumps(message)[1:-1] in prompt for prompt in prompts)
        assert asked == was_resumed, eval_id
    with HistoryStore(store) as opened:
        [info] = opened.runs()
    assert (info.status, info.cases) == ("finished", 5)


def test_a_run_reads_back_whole_after_its_input_files_change_or_go(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    evalset = tmp_path / example.evalset.name
    traces = tmp_path / "traces.json"
    evalset.write_bytes(example.evalset.read_bytes())
    (tmp_path / "test_config.json").write_bytes(example.config.read_bytes())
    traces.write_bytes(example.traces.read_bytes())
    out = tmp_path / "results.json"
    assert run_cli("eval", evalset, "--traces", traces, "--output", out).code == 0

    evalset.write_text('{"eval_set_id": "changed", "eval_cases": []}', encoding="utf-8")
    traces.unlink()

    assert results_for("latest") == read_results_file(out)
    shown = run_cli("show", "latest")
    assert shown.code == 0 and "forecast_paris" in shown.out


def test_resume_refuses_a_run_stopped_before_its_inputs_were_kept(
    run_cli: RunCli, example: Example
) -> None:
    from assay.history.records import config_hash

    run_cli("eval", example.evalset, "--traces", example.traces)
    with HistoryStore(history()) as store:
        [info] = store.runs()
        unhashed = json.loads(json.dumps(info.config))
        for entry in unhashed["sets"] + unhashed["inputs"]["traces"]:
            entry["sha256"] = None
        db = store._connection()
        db.execute("DELETE FROM run_inputs")
        db.execute(
            "UPDATE runs SET status = 'interrupted', config_hash = ?", (config_hash(unhashed),)
        )

    resumed = run_cli("eval", example.evalset, "--traces", example.traces, "--resume", "latest")

    assert resumed.code == 2 and "stopped before its input files were recorded" in resumed.err


def test_save_traces_on_a_resumed_run_includes_the_cases_it_kept(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    agent = f"{example.dir / 'agent.py'}:travel_agent"
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    # exit 1: the example's half-answered conversion fails
    assert run_cli("eval", example.evalset, "--agent", agent, "--save-traces", first).code == 1

    resumed = run_cli(
        "eval", example.evalset, "--agent", agent, "--resume", "latest", "--save-traces", again
    )

    assert resumed.code == 1 and "5 case result(s) kept" in resumed.out
    saved = json.loads(again.read_text(encoding="utf-8"))
    assert saved == json.loads(first.read_text(encoding="utf-8")) and len(saved) == 5


def test_show_prints_the_judge_cost_a_run_recorded(run_cli: RunCli, tmp_path: Path) -> None:
    from compare._results import case, eval_set, priced, scored

    result = priced(
        eval_set("s", case("a", {"m": scored(1.0)}).model_copy(update={"eval_set_id": "s"})),
        {"judge_a": 0.0042, "judge_b": 1.5},
        cap=2.0,
    )
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        run_id = store.start_run(["s.evalset.json"], {})
        for done in result.eval_case_results:
            store.record_case(run_id, done)
        store.finish_run(run_id, [result])

    shown = run_cli("show", run_id, "--history-file", path)

    assert shown.code == 0, shown.output
    assert (
        "judge cost: $1.50 (judge_a $0.0042, judge_b $1.50); --max-cost 2.00 not reached"
        in shown.out
    )
