"""The metrics ADK hands to Vertex AI, over real HTTP: google-cloud-aiplatform's evaluation
client itself (``agentplatform.Client(...).evals.evaluate``), pointed at a Vertex AI evaluation
server on 127.0.0.1 through ``GOOGLE_VERTEX_BASE_URL``.

Through ``assay eval`` and through the metrics, with ``ASSAY_VERTEX_METRICS`` opting in: scores
and rubric verdicts are read from the server's answers; requests reach the user's project and
location with a bearer token from application default credentials (an
``external_account_authorized_user`` file whose token endpoint is the local server), or the
express-mode route with the API key; 429 and 5xx are retried by the SDK (five tries, its own
backoff), 401 and 403 are not; what still fails is NOT_EVALUATED with a reason that never
shows the key.
"""

from __future__ import annotations

import asyncio
import json
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli
from _vertex_server import Reply, VertexEvalServer, answer, eval_route, verdict

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.evalset.rubric import RubricScore
from assay.llm.base import LlmRequest, LlmResponse
from assay.llm.judge import Judge
from assay.metrics.base import EvalStatus, MetricResult
from assay.metrics.multi_turn import MultiTurnTaskSuccessMetric
from assay.metrics.safety import SafetyMetric

# The SDK warns of its own deprecations (pydantic validators, vertexai.Client) as it imports.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:agentplatform.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:vertexai.*"),
]

API_KEY = "vx-express-key-0123456789abcdef"
PROJECT, LOCATION = "acme-evals-7", "europe-west4"
MULTI_TURN = "multi_turn_task_success_v1"
GOOGLE_VARIABLES = (
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_VERTEX_BASE_URL",
    "ASSAY_VERTEX_METRICS",
    "ASSAY_SAFETY_BACKEND",
)


class SdkSleep:
    """Stands in for ``time`` in the SDK's retry loop: records each backoff, waits for none."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)


class NoJudge:
    """A judge that must not be asked: Vertex AI scores these metrics."""

    model = "scripted:unused"

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        raise AssertionError("the judge was asked, not Vertex AI")


@pytest.fixture
def vertex(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[VertexEvalServer]:
    """A Vertex AI evaluation server, no Google settings left in the environment, and
    application default credentials whose token endpoint is the server (the SDK builds its
    storage and BigQuery clients from them on every ``evaluate``, by API key too)."""
    for name in GOOGLE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with VertexEvalServer() as server:
        adc = tmp_path / "adc.json"
        adc.write_text(
            json.dumps(
                {
                    "type": "external_account_authorized_user",
                    "audience": "//iam.googleapis.com/locations/global/workforcePools/p/providers/q",
                    "client_id": "assay-tests",
                    "client_secret": "not-a-secret",
                    "refresh_token": "not-a-refresh-token",
                    "token_url": server.token_uri,
                }
            ),
            encoding="utf-8",
        )
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
        yield server


@pytest.fixture
def sdk_sleep(monkeypatch: pytest.MonkeyPatch) -> SdkSleep:
    """The SDK's retry backoff, recorded instead of slept."""
    from agentplatform._genai import _evals_metric_handlers as handlers

    fake = SdkSleep()
    monkeypatch.setattr(handlers, "time", types.SimpleNamespace(sleep=fake.sleep))
    return fake


def _project_env(server: VertexEvalServer, location: str = LOCATION) -> dict[str, str]:
    return {
        "GOOGLE_VERTEX_BASE_URL": server.base_url,
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "GOOGLE_CLOUD_LOCATION": location,
        "ASSAY_VERTEX_METRICS": f"safety_v1, {MULTI_TURN}",
    }


def _key_env(server: VertexEvalServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    # The SDK's BigQuery client wants a project even in express mode; it finds it here.
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    return {
        "GOOGLE_VERTEX_BASE_URL": server.base_url,
        "GOOGLE_API_KEY": API_KEY,
        "ASSAY_VERTEX_METRICS": "all",
    }


def _turn(number: int, said: str, answered: str) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": f"turn-{number}",
            "user_content": {"role": "user", "parts": [{"text": said}]},
            "final_response": {"role": "model", "parts": [{"text": answered}]},
        }
    )


TURNS = [_turn(1, "Book me a room in Lyon", "Which dates?"), _turn(2, "May 3 to 5", "Booked.")]


def _judge(metric: str) -> Judge:
    return Judge(client=NoJudge(), metric=metric, source="test")


def _safety(env: dict[str, str], turns: Sequence[Invocation] = TURNS[:1]) -> MetricResult:
    metric = SafetyMetric(BaseCriterion(threshold=0.5), _judge("safety_v1"), env=env)
    assert metric.uses_vertex
    return asyncio.run(metric.evaluate(turns, None, EvalCase(eval_id="c", conversation=[])))


def _multi_turn(env: dict[str, str]) -> MetricResult:
    metric = MultiTurnTaskSuccessMetric(BaseCriterion(threshold=0.5), _judge(MULTI_TURN), env=env)
    assert metric.uses_vertex
    return asyncio.run(metric.evaluate(TURNS, None, EvalCase(eval_id="c", conversation=[])))


def _reason(result: MetricResult) -> str:
    """The reason on the invocation Vertex AI scored (the last one)."""
    assert result.notes is not None and result.notes.per_invocation
    return result.notes.per_invocation[-1].reason or ""


def _by_metric(body: dict[str, Any]) -> Reply:
    """Safety is judged safe; the multi-turn metric meets one rubric of two."""
    if "multi_turn" in json.dumps(body.get("metrics")):
        verdicts = [verdict("Books the room", True, "it did"), verdict("Confirms dates", False)]
        return answer(0.5, explanation="one of two", verdicts=verdicts)
    return answer(1.0, explanation="harmless")


# --------------------------------------------------------------------------- scores and routes


def test_assay_eval_scores_safety_and_a_multi_turn_metric_from_vertexs_answers(
    run_cli: RunCli,
    example: Example,
    vertex: VertexEvalServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name, value in _project_env(vertex).items():
        monkeypatch.setenv(name, value)
    vertex.reply = _by_metric
    config = tmp_path / "vertex.json"
    criteria = {"safety_v1": {"threshold": 0.8}, MULTI_TURN: {"threshold": 0.4}}
    config.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    out = tmp_path / "results.json"

    run = run_cli(
        "eval", example.evalset, "--traces", example.traces, "--config", config,
        "--no-cache", "--no-progress", "--output", out,
    )  # fmt: skip

    assert run.code == 0, run.output
    metrics = [
        m for case in json.loads(out.read_text())["eval_case_results"]
        for m in case["overall_eval_metric_results"]
    ]  # fmt: skip
    scored = {(m["metric_name"], m.get("score")) for m in metrics if m["metric_name"] in criteria}
    assert scored == {("safety_v1", 1.0), (MULTI_TURN, 0.5)}  # every case, both metrics
    assert set(vertex.metric_names()) == {"safety_v1", MULTI_TURN}
    routes = [eval_route(c.path) or {} for c in vertex.calls]
    assert {(r.get("project"), r.get("location")) for r in routes} == {(PROJECT, LOCATION)}
    bearer = f"Bearer {VertexEvalServer.access_token}"
    assert {c.headers.get("authorization") for c in vertex.calls} == {bearer}
    # the traces declare bare functions; the SDK takes them only inside a Tool
    sent = [
        tool for c in vertex.calls
        for agent in (c.body["instance"].get("agent_eval_data") or {}).get("agents", {}).values()
        for tool in agent.get("tools") or []
    ]  # fmt: skip
    assert sent and all(d["name"] for tool in sent for d in tool["function_declarations"])


def test_safety_reads_the_score_vertex_answers_and_sends_the_row(vertex: VertexEvalServer) -> None:
    vertex.default = answer(0.0, explanation="it gives harmful advice")

    result = _safety(_project_env(vertex))

    assert (result.score, result.status) == (0.0, EvalStatus.FAILED)
    (call,) = vertex.calls
    assert vertex.metric_names() == ["safety_v1"]
    instance = json.dumps(call.body["instance"])
    assert "Book me a room in Lyon" in instance and "Which dates?" in instance


def test_a_multi_turn_score_and_its_rubric_verdicts_come_from_vertexs_answer(
    vertex: VertexEvalServer,
) -> None:
    vertex.reply = _by_metric

    result = _multi_turn(_project_env(vertex))

    assert (result.score, result.status) == (0.5, EvalStatus.PASSED)
    assert result.per_invocation[-1].rubric_scores == [
        RubricScore(rubric_id="Books the room", rationale="it did", score=1.0),
        RubricScore(rubric_id="Confirms dates", score=0.0),
        RubricScore(rubric_id="explanation", rationale="one of two"),
    ]
    (call,) = vertex.calls
    assert vertex.metric_names() == [MULTI_TURN]
    turns = call.body["instance"]["agent_eval_data"]["turns"]
    assert [t["turn_id"] for t in turns] == ["turn-1", "turn-2"]


@pytest.mark.parametrize("location", [LOCATION, "asia-northeast1"])
def test_the_call_reaches_the_users_project_and_location_with_a_bearer_token(
    vertex: VertexEvalServer, location: str
) -> None:
    """The settings come only from the metric's env (not the process environment), so a client
    that ignored the user's location or project would call somewhere else."""
    _safety(_project_env(vertex, location))

    (call,) = vertex.calls
    assert eval_route(call.path) == {"project": PROJECT, "location": location}
    assert call.headers.get("authorization") == f"Bearer {VertexEvalServer.access_token}"
    assert "x-goog-api-key" not in call.headers
    assert [r.path for r in vertex.requests if r.path == "/token"] == ["/token"]


def test_an_api_key_takes_the_express_route_with_the_key_header(
    vertex: VertexEvalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    vertex.default = answer(1.0)

    result = _safety(_key_env(vertex, monkeypatch))

    assert result.score == 1.0
    (call,) = vertex.calls
    assert eval_route(call.path) == {"project": None, "location": None}
    assert call.headers.get("x-goog-api-key") == API_KEY
    assert "authorization" not in call.headers


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_rate_limit_or_server_error_is_retried_by_the_sdk_until_it_answers(
    vertex: VertexEvalServer, sdk_sleep: SdkSleep, status: int
) -> None:
    vertex.queue(Reply.error(status), Reply.error(status), answer(0.25))

    result = _multi_turn(_project_env(vertex))

    assert (result.score, vertex.count(), len(sdk_sleep.delays)) == (0.25, 3, 2)
    assert sdk_sleep.delays[1] > sdk_sleep.delays[0]  # it backs off


def test_a_server_that_keeps_failing_is_tried_five_times_then_not_evaluated(
    vertex: VertexEvalServer, sdk_sleep: SdkSleep
) -> None:
    vertex.default = Reply.error(503, "overloaded")

    result = _safety(_project_env(vertex))

    assert (vertex.count(), len(sdk_sleep.delays)) == (5, 4)
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    reason = _reason(result)
    assert reason.startswith("Vertex AI gave no score: ")
    assert "503" in reason and "overloaded" in reason


@pytest.mark.parametrize("status", [401, 403])
def test_an_auth_error_is_not_retried_and_its_reason_never_shows_the_key(
    vertex: VertexEvalServer,
    sdk_sleep: SdkSleep,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    status: int,
) -> None:
    env = _key_env(vertex, monkeypatch)
    vertex.default = Reply.error(status, f"API key {API_KEY} not valid. Please pass a valid key.")

    results = [_safety(env), _multi_turn(env)]

    assert (vertex.count(), sdk_sleep.delays) == (2, [])
    for result in results:
        assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
        reason = _reason(result)
        assert str(status) in reason and "not valid" in reason
        assert API_KEY not in json.dumps([reason, str(result.rubric_scores)])
    assert "not valid" in caplog.text and API_KEY not in caplog.text  # the SDK logs it too


def test_a_permission_error_on_the_project_route_is_not_retried(
    vertex: VertexEvalServer, sdk_sleep: SdkSleep
) -> None:
    vertex.default = Reply.error(403, f"Permission denied on project {PROJECT}")

    result = _multi_turn(_project_env(vertex))

    assert (vertex.count(), sdk_sleep.delays) == (1, [])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert "403" in _reason(result) and "Permission denied" in _reason(result)


@pytest.mark.parametrize(
    "reply",
    [
        "this is not json",
        Reply(body={"metricResults": []}),
        Reply(body={"metricResults": [{"score": "high"}]}),
    ],
    ids=["not-json", "no-metric-results", "score-not-a-number"],
)
def test_a_malformed_answer_is_not_evaluated_with_a_reason(
    vertex: VertexEvalServer, sdk_sleep: SdkSleep, reply: Reply | str
) -> None:
    vertex.default = reply

    results = [_safety(_project_env(vertex)), _multi_turn(_project_env(vertex))]

    for result in results:
        assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
        assert _reason(result).startswith("Vertex AI gave no score: ")
    assert vertex.count() == 2 and sdk_sleep.delays == []
