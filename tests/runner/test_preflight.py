"""Judges checked before a run: chosen as the run chooses them, grouped per model, and each
problem one line naming the judge, its metrics, what is wrong and what to do."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer

from assay.config import parse_config
from assay.llm.selection import JudgeChoice
from assay.runner.preflight import JudgeNeed, JudgeRecorder, check_judges


def _problems(needs: list[JudgeNeed], env: dict[str, str]) -> list[str]:
    return asyncio.run(check_judges(needs, env=env))


def _need(model: str, *metrics: str) -> JudgeNeed:
    return JudgeNeed(JudgeChoice(model, "--judge-model"), list(metrics))


class _Rejecting(BaseHTTPRequestHandler):
    """Answers every request 401, as a server does to a wrong key."""

    def do_GET(self) -> None:
        body = b'{"error": {"message": "invalid api key"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def rejecting() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rejecting)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_metrics_are_grouped_under_the_judge_the_run_would_choose() -> None:
    config = parse_config(
        {
            "criteria": {
                "safety_v1": 0.8,
                "hallucinations_v1": {
                    "threshold": 0.8,
                    "judge_model_options": {"judge_model": "openai:from-config"},
                },
            }
        }
    )
    recorder = JudgeRecorder(override=None, env={"ASSAY_JUDGE_MODEL": "ollama:from-env"})
    for name, criterion in config.criteria.items():
        recorder.judge_for(name, criterion)
    recorder.judge_for("user_simulator", None)

    [need] = recorder.needs()  # ASSAY_JUDGE_MODEL comes before the config's judge, as in a run
    assert (need.choice.model, need.choice.source) == ("ollama:from-env", "ASSAY_JUDGE_MODEL")
    assert need.names() == "safety_v1, hallucinations_v1 and the simulated user"


def test_a_judge_that_works_has_no_problem(tmp_path: Path) -> None:
    script = tmp_path / "judge.json"
    script.write_text('["valid"]', encoding="utf-8")
    with JudgeServer() as server:
        env = {"OPENAI_BASE_URL": server.base_url}
        needs = [_need(f"scripted:{script}", "safety_v1"), _need("openai:m", "hallucinations_v1")]
        assert _problems(needs, env) == []
        assert server.count() == 0  # the check asks for the models, never a completion
        assert [r.path for r in server.requests] == ["/v1/models"]


def test_a_rejected_key_is_found_before_the_run_without_showing_the_key(rejecting: str) -> None:
    key = "sk-test-rejected-0123456789"
    env = {"OPENAI_BASE_URL": rejecting, "OPENAI_API_KEY": key}

    [problem] = _problems([_need("openai:m", "safety_v1")], env)

    assert problem == (
        "judge openai:m (from --judge-model), for safety_v1, cannot work: HTTP 401 from "
        f"{rejecting}: the server rejected the API key; check OPENAI_API_KEY"
    )
    assert key not in problem


def test_a_file_that_is_no_gguf_model_is_refused_without_loading_it(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"<html>404 Not Found</html>")  # a download that went wrong

    [problem] = _problems([_need(f"local:{model}", "safety_v1")], {})

    assert problem.startswith(f"judge embedded local:{model} (from --judge-model), for safety_v1")
    assert "is not a GGUF model (it does not start with GGUF's magic bytes)" in problem


def test_each_judge_that_cannot_work_is_one_line_in_the_order_asked(tmp_path: Path) -> None:
    needs = [
        _need("scripted:/missing.yaml", "safety_v1"),
        _need(f"scripted:{tmp_path / 'judge.json'}", "hallucinations_v1"),
        _need("nonsense", "final_response_match_v2"),
    ]
    (tmp_path / "judge.json").write_text('["valid"]', encoding="utf-8")

    problems = _problems(needs, {})

    assert [p.split(",")[0] for p in problems] == [
        "judge scripted:/missing.yaml (from --judge-model)",
        "judge nonsense (from --judge-model)",
    ]
