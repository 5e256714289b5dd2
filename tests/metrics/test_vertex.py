"""The Vertex AI plumbing shared by the metrics ADK hands to Vertex: who opted in (safety too),
how a result is read (as ADK 2.13 reads it), and which SDK client is built."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Sequence

import pytest
from _fake_vertex import FakeService, fake_modules, ns, verdict, vertex_result

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.evalset.rubric import RubricScore
from assay.llm.base import LlmRequest, LlmResponse
from assay.llm.judge import Judge
from assay.metrics import vertex as vertex_ai
from assay.metrics.safety import RowScore, SafetyMetric, SafetyRow
from assay.metrics.vertex import Backend, VertexScore, choose_backend, read_result


@pytest.mark.parametrize(
    ("env", "metric", "backend"),
    [
        ({}, "safety_v1", Backend(False)),
        ({"ASSAY_VERTEX_METRICS": " "}, "safety_v1", Backend(False)),
        (
            {"ASSAY_VERTEX_METRICS": "ALL"},
            "response_evaluation_score",
            Backend(True, "ASSAY_VERTEX_METRICS", "ASSAY_VERTEX_METRICS=ALL"),
        ),
        (
            {"ASSAY_VERTEX_METRICS": "safety_v1,  response_evaluation_score"},
            "response_evaluation_score",
            Backend(
                True,
                "ASSAY_VERTEX_METRICS",
                "ASSAY_VERTEX_METRICS=safety_v1,  response_evaluation_score",
            ),
        ),
        ({"ASSAY_VERTEX_METRICS": "safety_v1"}, "multi_turn_task_success_v1", Backend(False)),
    ],
)
def test_assay_vertex_metrics_names_the_metrics_vertex_scores(
    env: dict[str, str], metric: str, backend: Backend
) -> None:
    assert choose_backend(env, metric) == backend


def test_the_older_safety_switch_wins_when_it_is_set() -> None:
    legacy = "ASSAY_SAFETY_BACKEND"
    everything = {"ASSAY_VERTEX_METRICS": "all"}
    assert not choose_backend(
        {**everything, legacy: "judge"}, "safety_v1", legacy_variable=legacy
    ).vertex
    assert choose_backend({legacy: " Vertex "}, "safety_v1", legacy_variable=legacy) == Backend(
        True, legacy, "ASSAY_SAFETY_BACKEND=vertex"
    )
    assert choose_backend(everything, "safety_v1", legacy_variable=legacy).vertex
    assert choose_backend({legacy: "cloud"}, "safety_v1", legacy_variable=legacy).problem == (
        "ASSAY_SAFETY_BACKEND must be 'judge' or 'vertex', not 'cloud'"
    )


def test_a_name_vertex_cannot_score_is_a_problem_for_every_metric() -> None:
    env = {"ASSAY_VERTEX_METRICS": "safety_v1 final_response_match_v2"}
    for metric in vertex_ai.VERTEX_METRIC_NAMES:
        backend = choose_backend(env, metric)
        assert not backend.vertex
        assert (backend.problem or "").startswith(
            "ASSAY_VERTEX_METRICS names 'final_response_match_v2', which Vertex AI cannot score"
        )


def test_results_are_read_as_adk_reads_them() -> None:
    result = vertex_result(
        0.25,
        verdicts=[
            verdict("Books it", True, "it did"),
            verdict(None, None, rubric_id="r2"),
            verdict("", False, ""),
        ],
        explanation="one of three",
        error="partial",
    )
    assert read_result(result) == VertexScore(
        0.25,
        explanation="one of three",
        rubric_scores=[
            RubricScore(rubric_id="Books it", rationale="it did", score=1.0),
            RubricScore(rubric_id="r2", score=0.0),
            RubricScore(rubric_id="rubric_2", score=0.0),
            RubricScore(rubric_id="explanation", rationale="one of three"),
            RubricScore(rubric_id="error", rationale="partial"),
        ],
    )


@pytest.mark.parametrize("mean", [None, float("nan"), True, "0.5"])
def test_a_mean_that_is_not_a_number_is_no_score(mean: object) -> None:
    scored = read_result(vertex_result(mean, error="bad case"))
    assert scored.score is None
    assert scored.reason == "Vertex AI gave no score: bad case"
    assert read_result(ns(summary_metrics=[])) == VertexScore(
        None, reason="Vertex AI gave no score"
    )


@pytest.mark.parametrize(
    ("env", "settings"),
    [
        ({"GOOGLE_API_KEY": "k", "GOOGLE_CLOUD_PROJECT": "p"}, {"api_key": "k"}),
        (
            {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"},
            {"project": "p", "location": "l"},
        ),
    ],
)
def test_the_client_comes_from_agentplatform_else_vertexai(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], settings: dict[str, str]
) -> None:
    modules = fake_modules(FakeService([]))
    monkeypatch.setitem(sys.modules, "agentplatform", modules["agentplatform"])
    monkeypatch.setitem(sys.modules, "vertexai", types.ModuleType("vertexai"))
    assert vertex_ai.client(env).settings == settings
    monkeypatch.setitem(sys.modules, "agentplatform", None)  # not installed
    monkeypatch.setitem(sys.modules, "vertexai", modules["vertexai"])
    assert vertex_ai.client(env).settings == settings


def test_safety_takes_the_shared_opt_in_unless_its_own_switch_says_otherwise() -> None:
    class Caller:
        model = "scripted:test"

        async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
            return LlmResponse(text='{"reasoning": "", "verdict": "safe"}', model=self.model)

    rows: list[SafetyRow] = []

    def scorer(given: Sequence[SafetyRow]) -> list[RowScore]:
        rows.extend(given)
        return [RowScore(0.0)]

    invocation = Invocation.model_validate(
        {"user_content": {"parts": [{"text": "Hi"}]}, "final_response": {"parts": [{"text": "Yo"}]}}
    )
    case = EvalCase(eval_id="c", conversation=[invocation])
    cloud = {"GOOGLE_API_KEY": "k", "ASSAY_VERTEX_METRICS": "safety_v1"}

    def score(env: dict[str, str]) -> tuple[float | None, str | None]:
        judge = Judge(client=Caller(), metric="safety_v1", source="test")
        metric = SafetyMetric(BaseCriterion(threshold=0.5), judge, env=env, vertex=scorer)
        result = asyncio.run(metric.evaluate([invocation], None, case))
        assert result.notes is not None
        return result.score, result.notes.judge_source

    assert score(cloud) == (0.0, "ASSAY_VERTEX_METRICS")
    assert rows == [SafetyRow("Hi", None, "Yo")]
    assert score({**cloud, "ASSAY_SAFETY_BACKEND": "judge"}) == (1.0, "test")
