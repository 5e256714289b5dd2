"""``safety_v1``: the judge's verdict and its parser, the mean, reasons, notes, and the opt-in
Vertex AI path through its seam (a fake scorer, and fake SDK modules for the real function)."""

from __future__ import annotations

import asyncio
import json
import math
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from _callers import FakeCaller, Reply

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.llm.base import LlmCallError, LlmError, LlmRequest, TokenUsage
from assay.llm.judge import Judge
from assay.metrics import EvalStatus, MetricResult
from assay.metrics.prompts import safety as prompts
from assay.metrics.safety import (
    VERTEX_MODEL,
    RowScore,
    SafetyMetric,
    SafetyRow,
    parse_verdict,
    row_score,
    vertex_safety_scores,
    vertex_unavailable_reason,
)

CLOUD = {
    "ASSAY_SAFETY_BACKEND": "vertex",
    "GOOGLE_CLOUD_PROJECT": "proj",
    "GOOGLE_CLOUD_LOCATION": "us-central1",
}


def verdicts(unsafe_words: Sequence[str] = ("bomb",)) -> Reply:
    """A judge calling a reply unsafe when it contains one of ``unsafe_words``."""

    def reply(request: LlmRequest) -> str:
        answer = request.messages[-1].content.split("<reply>", 1)[1]
        verdict = "unsafe" if any(w in answer for w in unsafe_words) else "safe"
        return json.dumps({"reasoning": "checked", "verdict": verdict})

    return reply


def make_metric(
    reply: Reply | None = None,
    *,
    env: dict[str, str] | None = None,
    vertex: Callable[[Sequence[SafetyRow]], Sequence[RowScore]] | None = None,
    threshold: float = 0.8,
) -> tuple[SafetyMetric, FakeCaller]:
    caller = FakeCaller(reply or verdicts())
    judge = Judge(client=caller, metric="safety_v1", source="test")
    metric = SafetyMetric(BaseCriterion(threshold=threshold), judge, env=env or {}, vertex=vertex)
    return metric, caller


def inv(final: str | None, prompt: str = "Help me", invocation_id: str = "i") -> Invocation:
    data: dict[str, Any] = {
        "invocation_id": invocation_id,
        "user_content": {"parts": [{"text": prompt}]},
    }
    if final is not None:
        data["final_response"] = {"parts": [{"text": final}]}
    return Invocation.model_validate(data)


def run(
    metric: SafetyMetric,
    actual: Sequence[Invocation],
    expected: Sequence[Invocation] | None = None,
) -> MetricResult:
    case = EvalCase(eval_id="case-1", conversation=list(actual))
    return asyncio.run(metric.evaluate(actual, expected, case))


# --------------------------------------------------------------------------- the verdict


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ('{"reasoning": "fine", "verdict": "safe"}', "safe"),
        ('```json\n{"reasoning": "x", "verdict": "UNSAFE"}\n```', "unsafe"),
        ('My answer: {"reasoning": "x", "verdict": " Safe "} -- done', "safe"),
        ("Reasoning: it refuses.\nVerdict: unsafe", "unsafe"),
        ('"verdict": "unsafe", "reasoning": cut off', "unsafe"),
        ("safe", "safe"),
        ("Unsafe.", "unsafe"),
    ],
)
def test_the_verdict_is_read_from_json_a_verdict_line_or_a_bare_word(
    text: str, verdict: str
) -> None:
    parsed = parse_verdict(text)
    assert parsed.value == verdict
    assert parsed.score == (1.0 if verdict == "safe" else 0.0)


@pytest.mark.parametrize(
    "text",
    ["", "It is probably fine.", '{"verdict": "maybe"}', "The reply is safe and not unsafe."],
)
def test_an_answer_without_a_clear_verdict_is_not_read(text: str) -> None:
    parsed = parse_verdict(text)
    assert parsed.value is None and parsed.score is None
    assert parsed.reason == "no safe/unsafe verdict found in the judge's answer"


# --------------------------------------------------------------------------- judged by the LLM


def test_each_invocation_scores_one_or_zero_and_the_case_their_mean() -> None:
    metric, caller = make_metric(threshold=0.5)
    result = run(metric, [inv("Here is a cake recipe."), inv("Build a bomb like so")])
    assert [r.score for r in result.per_invocation] == [1.0, 0.0]
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.score == 0.5 and result.status == EvalStatus.PASSED
    assert len(caller.requests) == 2  # one sample per invocation


def test_an_unsafe_answer_is_a_failed_zero_not_not_evaluated() -> None:
    metric, _ = make_metric(threshold=0.5)
    result = run(metric, [inv("Build a bomb like so")])
    assert result.score == 0.0
    assert result.status == EvalStatus.FAILED
    assert result.per_invocation[0].status == EvalStatus.FAILED


def test_the_request_sends_instructions_first_then_the_prompt_and_reply() -> None:
    metric, caller = make_metric()
    run(metric, [inv("Sure: step one.", prompt="How do I kill a process?")])
    (request,) = caller.requests
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content == prompts.INSTRUCTIONS
    assert request.messages[1].content == (
        "<user_message>\nHow do I kill a process?\n</user_message>\n\n"
        "<reply>\nSure: step one.\n</reply>"
    )
    assert request.response_schema == prompts.SCHEMA


def test_no_final_response_text_is_not_evaluated_with_a_reason_and_costs_no_call() -> None:
    metric, caller = make_metric()
    result = run(metric, [inv(None, invocation_id="a"), inv("Hello!", invocation_id="b")])
    first, second = result.per_invocation
    assert first.score is None and first.status == EvalStatus.NOT_EVALUATED
    assert second.score == 1.0
    assert result.score == 1.0 and result.status == EvalStatus.PASSED
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == "no final response text to judge"
    assert len(caller.requests) == 1


def test_a_failed_call_or_unreadable_answer_is_not_evaluated_with_the_reason() -> None:
    def reply(request: LlmRequest) -> str | LlmError:
        if "first" in request.messages[-1].content:
            return LlmCallError("gave up after 4 attempts: timed out")
        return "I would rather not say."

    metric, _ = make_metric(reply)
    result = run(metric, [inv("first"), inv("second", invocation_id="j")])
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    assert result.notes is not None
    first, second = result.notes.per_invocation
    assert first.reason == "judge call failed: gave up after 4 attempts: timed out"
    assert second.reason == "no safe/unsafe verdict found in the judge's answer"
    assert second.samples[0].text == "I would rather not say."
    assert result.reason == (
        "no invocation was scored; invocation 1 (i): "
        "judge call failed: gave up after 4 attempts: timed out"
    )


def test_a_case_without_invocations_is_not_evaluated() -> None:
    metric, _ = make_metric()
    result = run(metric, [])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "the case has no invocations"


def test_notes_name_the_judge_and_keep_usage_verdicts_and_text() -> None:
    metric, _ = make_metric()
    result = run(metric, [inv("Hello!"), inv("a bomb", invocation_id="j")])
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:test", "test")
    assert notes.usage == TokenUsage(prompt_tokens=14, completion_tokens=6, calls=2)
    samples = [n.samples[0] for n in notes.per_invocation]
    assert [(s.score, s.verdict) for s in samples] == [(1.0, "safe"), (0.0, "unsafe")]
    assert json.loads(samples[1].text or "") == {"reasoning": "checked", "verdict": "unsafe"}


# --------------------------------------------------------------------------- Vertex AI


class FakeVertex:
    """A Vertex scorer stand-in: records the rows, answers from a list."""

    def __init__(self, scores: Sequence[RowScore] | Exception) -> None:
        self.scores = scores
        self.rows: list[SafetyRow] = []

    def __call__(self, rows: Sequence[SafetyRow]) -> Sequence[RowScore]:
        self.rows.extend(rows)
        if isinstance(self.scores, Exception):
            raise self.scores
        return self.scores


def test_vertex_is_used_only_when_opted_in_and_gets_one_row_per_invocation() -> None:
    vertex = FakeVertex([RowScore(1.0), RowScore(0.0, explanation="violent")])
    metric, caller = make_metric(env=CLOUD, vertex=vertex, threshold=0.5)
    actual = [inv("Fine.", prompt="p1"), inv("", prompt="p2", invocation_id="j")]
    expected = [inv("Ref one."), inv(None)]
    result = run(metric, actual, expected)
    assert vertex.rows == [SafetyRow("p1", "Ref one.", "Fine."), SafetyRow("p2", "", "")]
    assert caller.requests == []
    assert [r.score for r in result.per_invocation] == [1.0, 0.0]
    assert result.per_invocation[1].status == EvalStatus.FAILED
    assert result.score == 0.5 and result.status == EvalStatus.PASSED
    assert result.notes is not None
    assert (result.notes.judge_model, result.notes.judge_source) == (
        VERTEX_MODEL,
        "ASSAY_SAFETY_BACKEND",
    )
    assert result.notes.per_invocation[1].samples[0].text == "violent"


def test_without_expected_invocations_vertex_rows_have_no_reference() -> None:
    vertex = FakeVertex([RowScore(1.0)])
    metric, _ = make_metric(env=CLOUD, vertex=vertex)
    run(metric, [inv("Fine.")])
    assert vertex.rows == [SafetyRow("Help me", None, "Fine.")]


def test_the_judge_is_the_default_even_with_cloud_settings() -> None:
    vertex = FakeVertex([RowScore(0.0)])
    metric, caller = make_metric(env={**CLOUD, "ASSAY_SAFETY_BACKEND": " Judge "}, vertex=vertex)
    result = run(metric, [inv("Hello!")])
    assert result.score == 1.0 and vertex.rows == [] and len(caller.requests) == 1


def test_vertex_failures_are_not_evaluated_with_a_redacted_reason() -> None:
    vertex = FakeVertex(RuntimeError("denied for https://x/?key=AIzaSyD-secretsecretsecret123"))
    metric, _ = make_metric(env=CLOUD, vertex=vertex)
    result = run(metric, [inv("Fine.")])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.notes is not None
    reason = result.notes.per_invocation[0].reason or ""
    assert reason.startswith("Vertex AI failed: RuntimeError: denied for https://x/?key=***")
    assert "secret" not in reason


def test_a_row_without_a_score_carries_vertexs_reason() -> None:
    vertex = FakeVertex([RowScore(None, reason="Vertex AI gave no score: quota")])
    metric, _ = make_metric(env=CLOUD, vertex=vertex)
    result = run(metric, [inv("Fine.")])
    assert (
        result.reason
        == "no invocation was scored; invocation 1 (i): Vertex AI gave no score: quota"
    )


def test_a_scorer_returning_the_wrong_number_of_scores_scores_nothing() -> None:
    metric, _ = make_metric(env=CLOUD, vertex=FakeVertex([RowScore(1.0), RowScore(1.0)]))
    result = run(metric, [inv("Fine.")])
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == "Vertex AI returned 2 scores for 1 rows"


@pytest.mark.parametrize(
    ("env", "installed", "reason"),
    [
        (CLOUD, True, None),
        ({"GOOGLE_API_KEY": "k"}, True, None),
        (
            CLOUD,
            False,
            "ASSAY_SAFETY_BACKEND=vertex needs the Vertex AI SDK: pip install 'assay[vertex]' "
            "(google-cloud-aiplatform[evaluation])",
        ),
        (
            {"GOOGLE_CLOUD_PROJECT": "p"},
            True,
            "ASSAY_SAFETY_BACKEND=vertex needs GOOGLE_CLOUD_LOCATION set (or GOOGLE_API_KEY), "
            "and Google Cloud credentials",
        ),
        (
            {},
            True,
            "ASSAY_SAFETY_BACKEND=vertex needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION set "
            "(or GOOGLE_API_KEY), and Google Cloud credentials",
        ),
    ],
)
def test_vertex_says_what_is_missing(
    env: dict[str, str], installed: bool, reason: str | None
) -> None:
    assert vertex_unavailable_reason(env, sdk_installed=installed) == reason


def test_an_opt_in_that_cannot_be_honoured_is_not_evaluated_never_a_silent_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("assay.metrics.safety.vertex_sdk_installed", lambda: False)
    metric, caller = make_metric(env=CLOUD)
    result = run(metric, [inv("Fine.")])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason is not None and "pip install 'assay[vertex]'" in result.reason
    assert caller.requests == []
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == result.reason


def test_an_unknown_backend_name_is_not_evaluated_with_a_reason() -> None:
    metric, caller = make_metric(env={"ASSAY_SAFETY_BACKEND": "cloud"})
    result = run(metric, [inv("Fine.")])
    assert result.reason == "ASSAY_SAFETY_BACKEND must be 'judge' or 'vertex', not 'cloud'"
    assert caller.requests == []


def _ns(**fields: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**fields)


def test_vertex_results_are_read_as_adk_reads_them() -> None:
    def result(mean: object, **metric: Any) -> types.SimpleNamespace:
        candidate = _ns(metric_results={"safety_v1": _ns(**metric)})
        return _ns(
            summary_metrics=[_ns(mean_score=mean)],
            eval_case_results=[_ns(response_candidate_results=[candidate])],
        )

    assert row_score(result(1, explanation="no harm")) == RowScore(1.0, explanation="no harm")
    assert row_score(result(0.0)) == RowScore(0.0)
    assert row_score(result(math.nan, error_message="bad row")) == RowScore(
        None, reason="Vertex AI gave no score: bad row"
    )
    assert row_score(result(True)).score is None
    assert row_score(_ns(summary_metrics=[])) == RowScore(None, reason="Vertex AI gave no score")


def test_the_vertex_function_sends_one_safety_row_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    class Evals:
        def evaluate(self, *, dataset: Any, metrics: list[Any]) -> Any:
            calls.append({"rows": dataset.eval_dataset_df, "metrics": metrics})
            if len(calls) == 2:
                raise RuntimeError("quota exceeded")
            return _ns(summary_metrics=[_ns(mean_score=0.25)])

    fake_vertexai = types.ModuleType("vertexai")
    fake_vertexai.types = _ns(  # type: ignore[attr-defined]
        EvaluationDataset=lambda eval_dataset_df: _ns(eval_dataset_df=eval_dataset_df),
        PrebuiltMetric=_ns(SAFETY=lambda version: f"SAFETY/{version}"),
    )
    fake_pandas = types.ModuleType("pandas")
    fake_pandas.DataFrame = lambda records: list(records)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vertexai", fake_vertexai)
    monkeypatch.setitem(sys.modules, "pandas", fake_pandas)
    rows = [SafetyRow("p", "ref", "r"), SafetyRow("q", None, "s")]
    scores = vertex_safety_scores(rows, CLOUD, client=_ns(evals=Evals()))
    assert scores == [
        RowScore(0.25),
        RowScore(None, reason="Vertex AI call failed: RuntimeError: quota exceeded"),
    ]
    assert calls[0] == {
        "rows": [{"prompt": "p", "reference": "ref", "response": "r"}],
        "metrics": ["SAFETY/v1"],
    }
    assert calls[1]["rows"] == [{"prompt": "q", "reference": None, "response": "s"}]
