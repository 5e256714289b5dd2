"""The Gemini judge over real HTTP: google-genai itself, pointed at a Gemini API server on
127.0.0.1 through its own ``GOOGLE_GEMINI_BASE_URL`` / ``GOOGLE_VERTEX_BASE_URL`` variables.

The API-key route scores verdicts through ``assay eval``; the Vertex route authenticates with
application default credentials (an ``external_account_authorized_user`` file whose token
endpoint is the local server) and must reach the user's project, location and model, or the
Vertex resource named as the model, at the path google-genai builds for it and at the regional
host of the resource's own location (seen through an HTTPS proxy that refuses every host); 429 and
503 are retried (429 after its ``Retry-After``, else its ``RetryInfo`` delay), 401 and 403 are
not; the key is never shown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _gemini_server import GeminiServer, HostProxy, Reply
from _support import Example, RunCli

from assay.llm.backends.gemini import GeminiBackend
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, LlmUnavailableError, Message
from assay.llm.client import LlmClient, RetryPolicy

from .conftest import FakeSleep

API_KEY = "AIzaSyD-not-a-real-key-0123456789abcdefg"
PROJECT, LOCATION = "acme-evals-7", "europe-west4"
VALID = json.dumps({"reasoning": "stub", "is_the_agent_response_valid": "valid"})
INVALID = json.dumps({"reasoning": "stub", "is_the_agent_response_valid": "invalid"})
REQUEST = LlmRequest(
    messages=(Message(role="system", content="You grade."), Message(role="user", content="Ok?")),
    response_schema={"type": "object", "properties": {"label": {"type": "string"}}},
)
JUDGE = ("--judge-model", "gemini-2.5-flash")
RETRY = RetryPolicy(max_attempts=4, initial_delay_s=0.5, max_delay_s=0.5)


@pytest.fixture
def gemini(monkeypatch: pytest.MonkeyPatch) -> Iterator[GeminiServer]:
    """A Gemini API server, with google-genai's base URLs pointed at it and no Google
    credentials left in the environment (each test sets the ones it uses)."""
    for name in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ):
        monkeypatch.delenv(name, raising=False)
    with GeminiServer() as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        monkeypatch.setenv("GOOGLE_VERTEX_BASE_URL", server.base_url)
        yield server


@pytest.fixture
def vertex_env(gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Vertex AI as a user sets it up: project, location, and application default credentials
    whose token endpoint is the local server (so no request leaves the machine)."""
    adc = tmp_path / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "external_account_authorized_user",
                "audience": "//iam.googleapis.com/locations/global/workforcePools/p/providers/q",
                "client_id": "assay-tests",
                "client_secret": "not-a-secret",
                "refresh_token": "not-a-refresh-token",
                "token_url": gemini.token_uri,
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", LOCATION)


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "judged.json"
    criterion = {"threshold": 0.8, "judge_model_options": {"num_samples": 1}}
    config.write_text(json.dumps({"criteria": {"final_response_match_v2": criterion}}))
    return config


def _evalset(example: Example, tmp_path: Path) -> Path:
    """The example's cases that have expected answers (its scenario case has none to judge)."""
    evalset = json.loads(example.evalset.read_text(encoding="utf-8"))
    evalset["eval_cases"] = [c for c in evalset["eval_cases"] if not c.get("conversation_scenario")]
    path = tmp_path / "judged.evalset.json"
    path.write_text(json.dumps(evalset), encoding="utf-8")
    return path


def _eval(
    run_cli: RunCli, example: Example, tmp_path: Path, *, judge: tuple[str, ...] = JUDGE
) -> tuple[Any, Any]:
    """``assay eval`` of the judged cases with ``judge`` (its options), and the results."""
    out = tmp_path / "results.json"
    run = run_cli(
        "eval",
        _evalset(example, tmp_path),
        "--traces",
        example.traces,
        "--config",
        _config(tmp_path),
        "--no-cache",
        "--no-progress",
        "--output",
        out,
        *judge,
    )
    return run, json.loads(out.read_text()) if out.exists() else None


def _scores(results: Any) -> list[float | None]:
    """Each case's final_response_match_v2 score."""
    return [
        metric.get("score")
        for case in results["eval_case_results"]
        for metric in case["overall_eval_metric_results"]
        if metric["metric_name"] == "final_response_match_v2"
    ]


def _ask(model: str = "gemini-2.5-flash", *, sleeps: FakeSleep | None = None) -> LlmResponse:
    async def go() -> LlmResponse:
        client = LlmClient(GeminiBackend(model), retry=RETRY, sleep=sleeps or FakeSleep())
        async with client:
            return await client.generate(REQUEST)

    return asyncio.run(go())


def _refused(sleeps: FakeSleep | None = None) -> LlmCallError:
    with pytest.raises(LlmCallError) as caught:
        _ask(sleeps=sleeps)
    return caught.value


def _host_of_call(model: str, proxy: HostProxy) -> list[str]:
    """The hosts one ``generate`` call for ``model`` asked ``proxy`` to reach (the proxy refuses
    them, so the call fails)."""

    async def go() -> None:
        backend = GeminiBackend(model)
        try:
            with pytest.raises(LlmCallError):
                await backend.generate(REQUEST)
        finally:
            await backend.aclose()

    asyncio.run(go())
    return proxy.hosts


@pytest.mark.parametrize(("verdict", "score", "code"), [(VALID, 1.0, 0), (INVALID, 0.0, 1)])
def test_an_api_key_judge_scores_the_verdicts_gemini_returns_through_assay_eval(
    run_cli: RunCli,
    example: Example,
    gemini: GeminiServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    verdict: str,
    score: float,
    code: int,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.default = verdict

    run, results = _eval(run_cli, example, tmp_path)

    assert run.code == code, run.output
    assert results is not None and _scores(results) == [score] * 4
    calls = gemini.calls
    assert calls and {c.path for c in calls} == {"/v1beta/models/gemini-2.5-flash:generateContent"}
    assert {c.headers.get("x-goog-api-key") for c in calls} == {API_KEY}
    assert all("authorization" not in c.headers for c in calls)
    body = calls[0].body
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert "is_the_agent_response_valid" in json.dumps(body["generationConfig"])
    assert API_KEY not in run.output


def test_google_credentials_make_gemini_the_judge_when_none_is_named(
    run_cli: RunCli,
    example: Example,
    gemini: GeminiServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("ASSAY_JUDGE_MODEL")
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.default = VALID

    run, results = _eval(run_cli, example, tmp_path, judge=())

    assert run.code == 0, run.output
    assert results is not None and _scores(results) == [1.0] * 4
    assert {c.path for c in gemini.calls} == {"/v1beta/models/gemini-2.5-flash:generateContent"}
    assert "judge gemini-2.5-flash (ADK's default: Gemini credentials present)" in run.output


def test_a_vertex_judge_calls_the_users_project_location_and_model_with_a_bearer_token(
    run_cli: RunCli, example: Example, gemini: GeminiServer, vertex_env: None, tmp_path: Path
) -> None:
    gemini.default = VALID

    run, results = _eval(run_cli, example, tmp_path)

    assert run.code == 0, run.output
    assert results is not None and _scores(results) == [1.0] * 4
    path = (
        f"/v1beta1/projects/{PROJECT}/locations/{LOCATION}"
        "/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    calls = gemini.calls
    assert calls and {c.path for c in calls} == {path}
    bearer = f"Bearer {GeminiServer.access_token}"
    assert {c.headers.get("authorization") for c in calls} == {bearer}
    assert all("x-goog-api-key" not in c.headers for c in calls)


@pytest.mark.usefixtures("vertex_env")
def test_a_vertex_judge_sends_the_model_named_by_the_user(gemini: GeminiServer) -> None:
    gemini.default = "fine"

    response = _ask("gemini-2.0-flash-lite-001")

    assert response.text == "fine"
    assert [c.route for c in gemini.calls] == [
        {"project": PROJECT, "location": LOCATION, "model": "gemini-2.0-flash-lite-001"}
    ]


def test_a_429_is_retried_after_the_wait_its_retry_after_asks(
    gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.queue(Reply.error(429, "quota", headers={"Retry-After": "7"}), "fine")
    sleeps = FakeSleep()

    response = _ask(sleeps=sleeps)

    assert (response.text, gemini.count()) == ("fine", 2)
    assert len(sleeps.delays) == 1 and sleeps.delays[0] >= 7.0


def test_a_429_without_retry_after_waits_the_retry_delay_its_retry_info_asks(
    gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}
    error = {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}
    body = {"error": {**error, "details": [retry_info]}}
    gemini.queue(Reply(status=429, body=body), "fine")  # no Retry-After header
    sleeps = FakeSleep()

    response = _ask(sleeps=sleeps)

    assert (response.text, gemini.count()) == ("fine", 2)
    assert sleeps.delays == [13.0]


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error_is_retried_until_it_answers(
    gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.queue(Reply.error(status), Reply.error(status), "fine")

    response = _ask()

    assert (response.text, gemini.count()) == ("fine", 3)


def test_a_server_that_keeps_failing_is_tried_max_attempts_times(
    gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.default = Reply.error(503, "overloaded")

    error = _refused()

    assert gemini.count() == RETRY.max_attempts
    assert error.status == 503 and "overloaded" in str(error)


@pytest.mark.parametrize("status", [401, 403])
def test_an_auth_error_is_not_retried_and_never_shows_the_key(
    gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.default = Reply.error(status, f"API key {API_KEY} not valid. Please pass a valid key.")
    sleeps = FakeSleep()

    error = _refused(sleeps)

    assert (gemini.count(), sleeps.delays) == (1, [])
    assert error.status == status and not error.retryable
    assert "not valid" in str(error) and API_KEY not in str(error) and API_KEY not in repr(error)


def test_an_auth_error_in_assay_eval_never_shows_the_key(
    run_cli: RunCli,
    example: Example,
    gemini: GeminiServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)
    gemini.default = Reply.error(400, f"API key not valid: {API_KEY}")

    run, _ = _eval(run_cli, example, tmp_path)

    assert run.code != 0
    assert gemini.count() >= 1 and "API key not valid" in run.output
    assert API_KEY not in run.output


ENDPOINT = f"projects/{PROJECT}/locations/{LOCATION}/endpoints/1234567890"
PUBLISHER_MODEL = (
    f"projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/gemini-2.5-flash"
)


@pytest.mark.parametrize("resource", [ENDPOINT, PUBLISHER_MODEL])
def test_a_vertex_resource_named_as_the_judge_is_called_at_the_path_genai_builds_for_it(
    run_cli: RunCli,
    example: Example,
    gemini: GeminiServer,
    vertex_env: None,
    tmp_path: Path,
    resource: str,
) -> None:
    gemini.default = VALID

    run, results = _eval(run_cli, example, tmp_path, judge=("--judge-model", resource))

    assert run.code == 0, run.output
    assert results is not None and _scores(results) == [1.0] * 4
    calls = gemini.calls
    assert calls and {c.path for c in calls} == {f"/v1beta1/{resource}:generateContent"}
    bearer = f"Bearer {GeminiServer.access_token}"
    assert {c.headers.get("authorization") for c in calls} == {bearer}


@pytest.fixture
def proxy(gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[HostProxy]:
    """No Vertex base URL of the test's, so google-genai picks its real regional host; an HTTPS
    proxy shows which host that is (and refuses it). The token endpoint stays direct."""
    monkeypatch.delenv("GOOGLE_VERTEX_BASE_URL")
    for name in ("HTTP_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with HostProxy() as host_proxy:
        monkeypatch.setenv("HTTPS_PROXY", host_proxy.url)
        yield host_proxy


@pytest.mark.usefixtures("vertex_env")
@pytest.mark.parametrize(
    ("model", "host"),
    [
        ("gemini-2.5-flash", f"{LOCATION}-aiplatform.googleapis.com:443"),
        (ENDPOINT, f"{LOCATION}-aiplatform.googleapis.com:443"),
        (ENDPOINT.replace(LOCATION, "us-east1"), "us-east1-aiplatform.googleapis.com:443"),
        (PUBLISHER_MODEL.replace(LOCATION, "global"), "aiplatform.googleapis.com:443"),
    ],
)
def test_a_vertex_call_goes_to_the_host_of_the_location_its_model_lives_in(
    proxy: HostProxy, model: str, host: str
) -> None:
    assert _host_of_call(model, proxy) == [host]


def test_a_vertex_resource_with_an_api_key_is_refused_in_one_line_naming_what_to_set(
    gemini: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)

    with pytest.raises(LlmUnavailableError) as caught:
        GeminiBackend(ENDPOINT)

    message = str(caught.value)
    assert "\n" not in message and ENDPOINT in message and API_KEY not in message
    assert "Vertex AI resource name" in message and "GOOGLE_GENAI_USE_VERTEXAI=true" in message
    assert gemini.requests == []


def test_a_vertex_resource_with_an_api_key_stops_assay_eval_before_any_call(
    run_cli: RunCli,
    example: Example,
    gemini: GeminiServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", API_KEY)

    run, _ = _eval(run_cli, example, tmp_path, judge=("--judge-model", ENDPOINT))

    assert run.code == 2, run.output
    assert "Vertex AI resource name" in run.output and "Traceback" not in run.output
    assert gemini.calls == [] and API_KEY not in run.output
