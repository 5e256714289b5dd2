"""``assay eval --agent``: run a Python agent over the eval set, score it, save its traces."""

from __future__ import annotations

import json
from pathlib import Path

from _support import Example, RunCli

# An agent that answers each example case as the recorded traces did: a stand-in for a real agent
# whose behaviour the test controls. "FAIL" in the environment makes one case's agent raise.
AGENT = """
import json, os
from pathlib import Path

_TRACES = json.loads(Path({traces!r}).read_text())
_BY_TEXT = {{
    inv["user_content"]["parts"][0]["text"]: inv
    for invocations in _TRACES.values() for inv in invocations
}}

def agent(message, session):
    if os.environ.get("AGENT_FAILS_ON") and os.environ["AGENT_FAILS_ON"] in message:
        raise ValueError("the booking backend is down")
    recorded = _BY_TEXT[message]
    events = recorded.get("intermediate_data", {{}}).get("invocation_events", [])
    return events + [{{"author": "travel_agent", "content": recorded["final_response"]}}]
"""


def _agent_file(tmp_path: Path, example: Example) -> Path:
    source = tmp_path / "replaying_agent.py"
    source.write_text(AGENT.format(traces=str(example.traces)))
    return source


def test_an_agent_run_scores_like_its_traces_and_saves_traces_that_score_the_same(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    agent = _agent_file(tmp_path, example)
    saved, by_agent, by_traces = tmp_path / "t.json", tmp_path / "a.json", tmp_path / "b.json"
    run = run_cli(
        "eval", example.evalset, "--agent", f"{agent}:agent",
        "--save-traces", saved, "--output", by_agent,
    )  # fmt: skip
    assert run.code == 0, run.output
    assert "5 passed, 0 failed, 0 not evaluated" in run.out
    assert f"traces written to {saved}" in run.out
    again = run_cli("eval", example.evalset, "--traces", saved, "--output", by_traces)
    assert again.code == 0, again.output

    def scores(path: Path) -> dict[str, list[tuple[str, float | None]]]:
        return {
            case["eval_id"]: [
                (m["metric_name"], m.get("score"))
                for m in case["overall_eval_metric_results"]
                if m["metric_name"] != "invocation_duration_v1"
            ]
            for case in json.loads(path.read_text())["eval_case_results"]
        }

    assert scores(by_agent) == scores(by_traces)
    assert sorted(json.loads(saved.read_text())) == sorted(json.loads(example.traces.read_text()))


def test_an_agent_that_raises_leaves_its_case_not_evaluated_and_the_rest_scored(
    run_cli: RunCli, example: Example, tmp_path: Path, monkeypatch: object
) -> None:
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("AGENT_FAILS_ON", "Find me a flight")
    agent = _agent_file(tmp_path, example)
    out = tmp_path / "r.json"
    run = run_cli("eval", example.evalset, "--agent", f"{agent}:agent", "--output", out)
    assert run.code == 1, run.output
    assert "4 passed, 0 failed, 1 not evaluated" in run.out
    [broken] = [
        c
        for c in json.loads(out.read_text())["eval_case_results"]
        if c["eval_id"] == "book_flight_lisbon"
    ]
    assert broken["final_eval_status"] == 3
    assert broken["assay"]["reason"] == (
        "turn 1: the agent raised ValueError: the booking backend is down (after 2 attempts)"
    )


def test_traces_and_agent_together_or_neither_is_a_usage_error(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    both = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--agent", "x:y"
    )  # fmt: skip
    neither = run_cli("eval", example.evalset)
    assert "error: give --agent or --traces, not both" in both.err
    assert "error: nothing to score" in neither.err and "or --traces FILE" in neither.err
    for run in (both, neither):
        assert run.code == 2
        assert "Traceback" not in run.output


def test_a_bad_agent_spec_is_reported_before_anything_runs(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    run = run_cli("eval", example.evalset, "--agent", f"{tmp_path}/nope.py:agent")
    assert run.code == 2
    assert "--agent: no such file" in run.err
    assert "Traceback" not in run.output


def test_saved_traces_of_several_runs_score_again_as_the_same_runs(
    run_cli: RunCli, tmp_path: Path
) -> None:
    evalset = tmp_path / "small.evalset.json"
    evalset.write_text(
        json.dumps(
            {
                "eval_set_id": "small",
                "eval_cases": [
                    {
                        "eval_id": "count",
                        "conversation": [
                            {
                                "user_content": {"parts": [{"text": "count"}]},
                                "final_response": {"parts": [{"text": "run 1"}]},
                            }
                        ],
                    }
                ],
            }
        )
    )
    agent = tmp_path / "counting.py"
    agent.write_text(
        "RUNS = []\n"
        "def agent(message, session):\n"
        "    RUNS.append(1)\n"
        "    return f'run {len(RUNS)}'\n"
    )
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.9}}))
    saved, first, again = tmp_path / "t.json", tmp_path / "a.json", tmp_path / "b.json"
    run = run_cli(
        "eval", evalset, "--config", config, "--agent", f"{agent}:agent", "--num-runs", "2",
        "--inference-concurrency", "1", "--save-traces", saved, "--output", first,
    )  # fmt: skip
    assert run.code == 1, run.output  # the second run answers "run 2": it fails
    assert sorted(json.loads(saved.read_text())) == ["count", "count#run2"]
    rescored = run_cli("eval", evalset, "--config", config, "--traces", saved, "--output", again)

    def outcome(path: Path) -> list[tuple[int, int]]:
        return [
            (case["assay"]["run"], case["final_eval_status"])
            for case in json.loads(path.read_text())["eval_case_results"]
        ]

    assert outcome(first) == outcome(again) == [(1, 1), (2, 2)]
    assert rescored.code == 1 and "count (run 2)" in rescored.out


# An agent that answers every case at once, and kills its own process (as `kill -9` would) when
# it reaches the case named in KILL_AT.
STREAMED_AGENT = """
import os, signal

def agent(message, session):
    if os.environ.get("KILL_AT") == message:
        os.kill(os.getpid(), signal.SIGKILL)
    return f"answer to {message}"
"""


def _streamed_evalset(tmp_path: Path, count: int) -> tuple[Path, Path, Path]:
    evalset = tmp_path / "many.evalset.json"
    cases = [
        {
            "eval_id": f"c{n}",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"case {n}"}]},
                    "final_response": {"parts": [{"text": f"answer to case {n}"}]},
                }
            ],
        }
        for n in range(count)
    ]
    evalset.write_text(json.dumps({"eval_set_id": "many", "eval_cases": cases}))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.9}}))
    agent = tmp_path / "streamed_agent.py"
    agent.write_text(STREAMED_AGENT)
    return evalset, config, agent


def test_saved_traces_are_the_whole_document_in_case_order_with_no_partial_file_left(
    run_cli: RunCli, tmp_path: Path
) -> None:
    from assay.evalset.invocation import Invocation
    from assay.runner.agent_run import traces_document
    from assay.runner.inference import CaseInference

    evalset, config, agent = _streamed_evalset(tmp_path, 30)
    saved = tmp_path / "saved.json"
    run = run_cli(
        "eval", evalset, "--config", config, "--agent", f"{agent}:agent", "--num-runs", "2",
        "--inference-concurrency", "3", "--save-traces", saved, "--no-history",
    )  # fmt: skip

    assert run.code == 0, run.output
    written = saved.read_text(encoding="utf-8")
    document = json.loads(written)
    assert list(document) == [key for n in range(30) for key in (f"c{n}", f"c{n}#run2")]
    inferences = [
        CaseInference(
            key.split("#")[0],
            2 if key.endswith("#run2") else 1,
            [Invocation.model_validate(invocation) for invocation in invocations],
        )
        for key, invocations in document.items()
    ]
    whole = traces_document(inferences)
    assert written == json.dumps(whole, indent=2, ensure_ascii=False) + "\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("saved")] == ["saved.json"]


def test_a_run_killed_midway_leaves_no_traces_file_under_its_name(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    evalset, config, agent = _streamed_evalset(tmp_path, 12)
    saved = tmp_path / "saved.json"
    assay = Path(sys.executable).parent / "assay"
    killed = subprocess.run(
        [
            str(assay), "eval", str(evalset), "--config", str(config),
            "--agent", f"{agent}:agent", "--inference-concurrency", "1", "--concurrency", "1",
            "--save-traces", str(saved), "--no-history", "--no-progress",
        ],
        env={**os.environ, "KILL_AT": "case 8"}, capture_output=True, timeout=120, check=False,
    )  # fmt: skip

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not saved.exists()
    assert (tmp_path / "saved.json.partial").exists()  # what it had written when it was killed
