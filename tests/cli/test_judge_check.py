"""``assay eval``'s judges checked before the run (exit 2, one message, nothing called), a judge on
an Ollama server found through ``OLLAMA_HOST``, and a judge that dies mid-run said once."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer
from _judges import approve
from _support import Example, RunCli

JUDGED_NAMES = (
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "hallucinations_v1",
    "safety_v1",
    "per_turn_user_simulator_quality_v1",
)
JUDGED = ", ".join(JUDGED_NAMES[:-1]) + f" and {JUDGED_NAMES[-1]}"
NOT_EVALUATED, FAILED = 3, 2


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on (connections to it are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _flat(text: str) -> str:
    return " ".join(text.split())


def _eval(run_cli: RunCli, example: Example, *args: str | Path) -> Any:
    return run_cli("eval", example.evalset, "--traces", example.traces, "--no-cache", *args)


def _refused_before_the_run(run: Any, judge: JudgeServer, before: int) -> str:
    """The run's one error message, after checking it called nothing and wrote nothing."""
    assert run.code == 2, run.output
    assert judge.count() == before  # not one judge call
    assert run.out == ""  # no table, no results: the run never started
    assert "Traceback" not in run.output
    message = _flat(run.err)
    assert message.startswith("error: judge ") and message.count("error:") == 1
    return message


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (
            "openai:gpt-4o",
            "judge model 'openai:gpt-4o' needs OpenAI's API, and OPENAI_API_KEY is not set; "
            "set OPENAI_API_KEY, or set OPENAI_BASE_URL",
        ),
        (
            "gpt-4o",
            "OpenAI's models are written openai:<model>: --judge-model openai:gpt-4o",
        ),
        ("local:/missing.gguf", "local model file '/missing.gguf' does not exist"),
        ("scripted:/missing.yaml", "scripted: the script file '/missing.yaml' does not exist"),
    ],
)
def test_a_judge_that_cannot_work_is_exit_2_before_the_run(
    run_cli: RunCli,
    example: Example,
    judge_env: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    problem: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL")
    before = judge_env.count()

    run = _eval(run_cli, example, "--judge-model", model)

    message = _refused_before_the_run(run, judge_env, before)
    assert f"judge {model} (from --judge-model), for {JUDGED}, cannot work: " in message or (
        f"judge embedded {model} (from --judge-model), for {JUDGED}, cannot work: " in message
    )
    assert problem in message


def test_a_script_that_does_not_parse_is_exit_2_naming_the_file_and_line(
    run_cli: RunCli, example: Example, judge_env: JudgeServer, tmp_path: Path
) -> None:
    script = tmp_path / "judge.yaml"
    script.write_text("rules:\n  - match: [unclosed\n", encoding="utf-8")
    before = judge_env.count()

    run = _eval(run_cli, example, "--judge-model", f"scripted:{script}")

    message = _refused_before_the_run(run, judge_env, before)
    assert f"scripted: cannot read the script: {script}: malformed YAML at line" in message


def test_a_server_that_refuses_connections_is_exit_2_before_the_run(
    run_cli: RunCli,
    example: Example,
    judge_env: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
    closed_port: int,
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    before = judge_env.count()

    run = _eval(run_cli, example)

    message = _refused_before_the_run(run, judge_env, before)
    assert f"judge openai:stub-judge (from ASSAY_JUDGE_MODEL), for {JUDGED}, cannot work" in (
        message
    )
    assert f"could not connect to {url}: connection refused; start the server" in message


def test_a_server_is_checked_with_one_request_that_costs_no_tokens(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    seen = len(judge_env.requests)

    run = _eval(run_cli, example)

    assert run.code == 0, run.output
    checks = [r for r in judge_env.requests[seen:] if r.method == "GET"]
    assert [r.path for r in checks] == ["/v1/models"]
    assert checks[0].headers["authorization"] == "Bearer sk-test-not-a-real-key-0000"


def test_an_agent_run_checks_the_judge_before_calling_the_agent(
    run_cli: RunCli,
    example: Example,
    judge_env: JudgeServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    called = tmp_path / "called"
    agent = tmp_path / "agent.py"
    agent.write_text(
        "from pathlib import Path\n\n"
        "def agent(message, session):\n"
        f"    Path({str(called)!r}).write_text('called')\n"
        "    return 'hello'\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("ASSAY_JUDGE_MODEL", "scripted:/missing.yaml")

    run = run_cli("eval", example.evalset, "--agent", f"{agent}:agent", "--no-history")

    assert run.code == 2, run.output
    message = _flat(run.err)
    assert "judge scripted:/missing.yaml (from ASSAY_JUDGE_MODEL), for " in message
    assert "per_turn_user_simulator_quality_v1 and the simulated user, cannot work" in message
    assert not called.exists()


def test_a_url_where_the_model_belongs_says_how_to_point_at_a_server(
    run_cli: RunCli, example: Example, judge_env: JudgeServer
) -> None:
    before = judge_env.count()

    run = _eval(run_cli, example, "--judge-model", "openai:http://127.0.0.1:9/v1")

    message = _refused_before_the_run(run, judge_env, before)
    assert "'openai:http://127.0.0.1:9/v1' gives a URL where a model name belongs" in message
    assert "OPENAI_BASE_URL=http://127.0.0.1:9/v1 ... --judge-model openai:<model>" in message


def test_an_ollama_judge_is_found_through_ollama_host(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    with JudgeServer(reply=approve, model="llama3.2:latest") as ollama:
        base_url = ollama.base_url
        monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{ollama.port}")  # as Ollama reads it
        run = _eval(run_cli, example, "--judge-model", "ollama:llama3.2", "--output", out)
        missing = _eval(run_cli, example, "--judge-model", "ollama:qwen3")

    assert run.code == 0, run.output
    assert ollama.count() > 0
    judges = json.loads(out.read_text(encoding="utf-8"))["assay"]["judges"]
    assert judges["safety_v1"]["backend"] == "ollama"
    assert missing.code == 2
    assert (
        f"{base_url} does not serve the model 'qwen3' (ollama pull qwen3); "
        "it lists: llama3.2:latest" in _flat(missing.err)
    )


class DyingJudge:
    """Approves ``calls`` judge calls, then stops the server (as a judge process that dies)."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.server: JudgeServer | None = None
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.calls -= 1
            last = self.calls == 0
        if last and self.server is not None:
            threading.Thread(target=self.server.close).start()
        return approve(body)


def test_a_judge_that_dies_mid_run_is_said_once_and_the_results_are_saved(
    run_cli: RunCli, example: Example, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    dying = DyingJudge(calls=6)
    with JudgeServer(reply=dying) as server:
        dying.server = server
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        run = _eval(
            run_cli, example, "--judge-attempts", "1", "--judge-concurrency", "1", "--output", out
        )

    assert run.code == 1, run.output
    output = _flat(run.output)
    said = "judge openai:stub-judge stopped answering during the run ("
    assert output.count(said) == 1
    line = output[output.index(said) :]
    assert "could not connect to" in line and "and was not called again: " in line
    # the table's rows name the stopped judge; the error itself is written once, in the warning
    assert _flat(run.out).count("could not connect to") == 1
    assert "stopped answering (why: the warning after the table)" in _flat(run.out)
    cases = json.loads(out.read_text(encoding="utf-8"))["eval_case_results"]
    assert len(cases) == 5  # every case kept
    left = [c["eval_id"] for c in cases if "no more calls were sent" in json.dumps(c)]
    assert left and all(eval_id in line for eval_id in left[:5])
    # a case none of whose judged metrics has a verdict does not pass on the others alone
    unjudged = [
        case
        for case in cases
        if all(
            row["eval_status"] == NOT_EVALUATED
            for row in case["overall_eval_metric_results"]
            if row["metric_name"] in JUDGED_NAMES
            and row["metric_name"] not in case["assay"].get("not_applicable", [])
        )
    ]
    assert unjudged
    for case in unjudged:
        assert case["final_eval_status"] in (NOT_EVALUATED, FAILED), case["eval_id"]
