"""The LiteLLM judge over real HTTP: LiteLLM itself (``litellm:openai/<model>``), pointed at the
OpenAI-compatible server on 127.0.0.1 through ``OPENAI_BASE_URL``. Verdicts score through
``assay eval``; 429 is retried after its ``Retry-After``; 401 is not retried and never shows
the key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _judge_server import JudgeServer, Reply
from _judges import approve, reject
from _support import Example, RunCli

from assay.llm.backends.litellm import LiteLLMBackend
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, Message
from assay.llm.client import LlmClient, RetryPolicy

from .conftest import FakeSleep

API_KEY = "sk-litellm-test-not-a-real-key-0123456789"
MODEL = "litellm:openai/stub-judge"
REQUEST = LlmRequest(
    messages=(Message(role="system", content="You grade."), Message(role="user", content="Ok?")),
    response_schema={"type": "object", "properties": {"label": {"type": "string"}}},
)
RETRY = RetryPolicy(max_attempts=4, initial_delay_s=0.5, max_delay_s=0.5)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    """An OpenAI-compatible server that OpenAI-provider LiteLLM calls go to, with a test key,
    and LiteLLM's price map read from its own copy (no download)."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with JudgeServer() as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        yield judge


def _ask(sleeps: FakeSleep) -> LlmResponse:
    async def go() -> LlmResponse:
        client = LlmClient(LiteLLMBackend(MODEL), retry=RETRY, sleep=sleeps)
        async with client:
            return await client.generate(REQUEST)

    return asyncio.run(go())


@pytest.mark.parametrize(("verdicts", "code"), [(approve, 0), (reject, 1)])
def test_a_litellm_judge_scores_the_verdicts_its_server_returns_through_assay_eval(
    run_cli: RunCli,
    example: Example,
    server: JudgeServer,
    tmp_path: Path,
    verdicts: Callable[[dict[str, Any]], str],
    code: int,
) -> None:
    server.reply = verdicts
    out = tmp_path / "results.json"

    run = run_cli(
        "eval",
        example.evalset,
        "--traces",
        example.traces,
        "--no-cache",
        "--no-progress",
        "--output",
        out,
        "--judge-model",
        MODEL,
    )

    assert run.code == code, run.output
    calls = server.completions
    assert calls and {c.body["model"] for c in calls} == {"stub-judge"}
    assert {c.headers.get("authorization") for c in calls} == {f"Bearer {API_KEY}"}
    judged = [
        metric["score"]
        for case in json.loads(out.read_text())["eval_case_results"]
        for metric in case["overall_eval_metric_results"]
        if metric["metric_name"] == "final_response_match_v2" and "score" in metric
    ]
    assert judged == [1.0 if code == 0 else 0.0] * 4  # the scenario case has no reference
    assert API_KEY not in run.output


def test_a_429_is_retried_after_the_wait_its_retry_after_asks(server: JudgeServer) -> None:
    server.queue(Reply.error(429, "slow down", headers={"Retry-After": "7"}), "fine")
    sleeps = FakeSleep()

    response = _ask(sleeps)

    assert (response.text, server.count()) == ("fine", 2)
    assert len(sleeps.delays) == 1 and sleeps.delays[0] >= 7.0


def test_a_401_is_not_retried_and_never_shows_the_key(server: JudgeServer) -> None:
    server.default = Reply.error(401, f"Incorrect API key provided: {API_KEY}")
    sleeps = FakeSleep()

    with pytest.raises(LlmCallError) as caught:
        _ask(sleeps)

    error = caught.value
    assert (server.count(), sleeps.delays) == (1, [])
    assert error.status == 401 and not error.retryable
    assert "Incorrect API key" in str(error) and API_KEY not in str(error)
