"""``response_evaluation_score``: the judge's 1-5 coherence rating and its parser, the mean,
the expected invocations it needs, reasons, notes, and the opt-in Vertex path, compared with ADK
2.13's own ``ResponseEvaluator`` run against the same fake service."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from _callers import FakeCaller, Reply
from _fake_vertex import FakeService, fake_sdk, plain, vertex_result

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.evalset.rubric import RubricScore
from assay.llm.base import LlmCallError, LlmError, LlmRequest, TokenUsage
from assay.llm.judge import Judge
from assay.metrics import EvalStatus, MetricResult
from assay.metrics import vertex as vertex_ai
from assay.metrics.coherence import NO_RATING, CoherenceMetric, Rating, parse_rating
from assay.metrics.prompts import coherence as prompts

CLOUD = {
    "ASSAY_VERTEX_METRICS": "response_evaluation_score",
    "GOOGLE_CLOUD_PROJECT": "proj",
    "GOOGLE_CLOUD_LOCATION": "us-central1",
}


def by_reply(ratings: dict[str, int]) -> Reply:
    """A judge rating a reply by the first word of ``ratings`` it contains (else 3)."""

    def reply(request: LlmRequest) -> str:
        answer = request.messages[-1].content.split("<reply>", 1)[1]
        rating = next((r for word, r in ratings.items() if word in answer), 3)
        return json.dumps({"explanation": f"rated {rating}", "rating": str(rating)})

    return reply


def make(
    reply: Reply | None = None,
    *,
    threshold: float = 4.0,
    env: dict[str, str] | None = None,
    vertex: Callable[[Sequence[vertex_ai.Row]], Sequence[vertex_ai.VertexScore]] | None = None,
) -> tuple[CoherenceMetric, FakeCaller]:
    caller = FakeCaller(
        reply or by_reply({"clear": 5, "muddled": 2}),
        TokenUsage(prompt_tokens=9, completion_tokens=4, calls=1),
    )
    judge = Judge(client=caller, metric="response_evaluation_score", source="test")
    metric = CoherenceMetric(
        BaseCriterion(threshold=threshold), judge, env=env or {}, vertex=vertex
    )
    return metric, caller


def inv(final: str | None, prompt: str = "Explain it", invocation_id: str = "i") -> Invocation:
    data: dict[str, Any] = {
        "invocation_id": invocation_id,
        "user_content": {"role": "user", "parts": [{"text": prompt}]},
    }
    if final is not None:
        data["final_response"] = {"role": "model", "parts": [{"text": final}]}
    return Invocation.model_validate(data)


def run(
    metric: CoherenceMetric,
    actual: Sequence[Invocation],
    expected: Sequence[Invocation] | None,
) -> MetricResult:
    case = EvalCase(eval_id="case-1", conversation=list(expected or actual))
    return asyncio.run(metric.evaluate(actual, expected, case))


def refs(count: int) -> list[Invocation]:
    return [inv(f"Reference {n}.", invocation_id=f"e{n}") for n in range(count)]


# --------------------------------------------------------------------------- the rating


@pytest.mark.parametrize(
    ("text", "rating"),
    [
        ('{"explanation": "flows well", "rating": "5"}', Rating(5, "flows well")),
        ('```json\n{"rating": 4, "explanation": " ok "}\n```', Rating(4, "ok")),
        ('Answer: {"score": 2.0, "reasoning": "jumps around"} done', Rating(2, "jumps around")),
        ('{"rating": "3 (somewhat coherent)"}', Rating(3)),
        ("Explanation: fine.\nRating: 4", Rating(4)),
        ('"rating": "1", "explanation": cut off', Rating(1)),
        ("5", Rating(5)),
        (" 2. ", Rating(2)),
    ],
)
def test_the_rating_is_read_from_json_a_rating_line_or_a_bare_digit(
    text: str, rating: Rating
) -> None:
    parsed = parse_rating(text)
    assert parsed.value == rating
    assert parsed.score == float(rating.value)
    assert parsed.verdict == f"{rating.value} ({prompts.RATINGS[rating.value]})"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "It is coherent.",
        '{"rating": "6"}',
        '{"rating": 0}',
        '{"rating": 4.5}',
        '{"rating": "4.5"}',
        '{"rating": true}',
        '{"rating": "10"}',
        "Rating: 7",
    ],
)
def test_anything_but_a_whole_rating_from_1_to_5_is_not_read(text: str) -> None:
    parsed = parse_rating(text)
    assert parsed.value is None and parsed.score is None
    assert parsed.reason == NO_RATING


# --------------------------------------------------------------------------- judged by the LLM


def test_each_invocation_is_rated_and_the_case_scores_the_mean() -> None:
    metric, caller = make(threshold=4.0)
    actual = [inv("A clear answer."), inv("A muddled answer.", invocation_id="j")]
    result = run(metric, actual, refs(2))
    assert [r.score for r in result.per_invocation] == [5.0, 2.0]
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert [r.expected for r in result.per_invocation] == refs(2)
    assert result.score == 3.5 and result.status == EvalStatus.FAILED
    assert len(caller.requests) == 2  # one sample per invocation
    assert result.per_invocation[0].rubric_scores == [
        RubricScore(rubric_id="explanation", rationale="rated 5")
    ]


def test_the_request_sends_instructions_then_the_prompt_and_reply_but_not_the_reference() -> None:
    metric, caller = make()
    run(metric, [inv("Step one, then two.", prompt="How?")], [inv("SECRET reference")])
    (request,) = caller.requests
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content == prompts.INSTRUCTIONS
    assert request.messages[1].content == (
        "<user_message>\nHow?\n</user_message>\n\n<reply>\nStep one, then two.\n</reply>"
    )
    assert request.response_schema == prompts.SCHEMA
    assert "SECRET" not in request.messages[1].content


def test_notes_keep_the_rating_its_name_and_the_judges_answer() -> None:
    metric, _ = make()
    result = run(metric, [inv("A clear answer.")], refs(1))
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:test", "test")
    assert notes.usage == TokenUsage(prompt_tokens=9, completion_tokens=4, calls=1)
    (entry,) = notes.per_invocation
    assert entry.details == {"rating": 5, "label": "completely coherent", "explanation": "rated 5"}
    assert (entry.samples[0].score, entry.samples[0].verdict) == (5.0, "5 (completely coherent)")
    assert json.loads(entry.samples[0].text or "") == {"explanation": "rated 5", "rating": "5"}


@pytest.mark.parametrize(
    ("expected", "reason"),
    [
        (
            None,
            "needs expected invocations: the case has a conversation_scenario, not a conversation",
        ),
        (refs(2), "expected 2 invocations, got 1"),
    ],
)
def test_without_paired_expected_invocations_it_is_not_evaluated_without_asking(
    expected: list[Invocation] | None, reason: str
) -> None:
    metric, caller = make()
    result = run(metric, [inv("A clear answer.")], expected)
    assert result.status == EvalStatus.NOT_EVALUATED and result.reason == reason
    assert [r.status for r in result.per_invocation] == [EvalStatus.NOT_EVALUATED]
    assert caller.requests == []


def test_a_case_without_invocations_is_not_evaluated() -> None:
    metric, caller = make()
    result = run(metric, [], [])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "the case has no invocations"
    assert caller.requests == []


def test_no_final_response_text_is_not_evaluated_and_costs_no_call() -> None:
    metric, caller = make()
    result = run(metric, [inv(None), inv("A clear answer.", invocation_id="j")], refs(2))
    assert [r.status for r in result.per_invocation] == [
        EvalStatus.NOT_EVALUATED,
        EvalStatus.PASSED,
    ]
    assert result.score == 5.0
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == "no final response text to judge"
    assert len(caller.requests) == 1


def test_a_failed_call_or_unreadable_answer_is_not_evaluated_with_the_reason() -> None:
    def reply(request: LlmRequest) -> str | LlmError:
        if "first" in request.messages[-1].content:
            return LlmCallError("gave up after 4 attempts: timed out")
        return "Quite coherent, I would say."

    metric, _ = make(reply)
    result = run(metric, [inv("first"), inv("second", invocation_id="j")], refs(2))
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    assert result.notes is not None
    first, second = result.notes.per_invocation
    assert first.reason == "judge call failed: gave up after 4 attempts: timed out"
    assert second.reason == NO_RATING
    assert second.samples[0].text == "Quite coherent, I would say."
    assert result.reason == (
        "no invocation was scored; invocation 1 (i): "
        "judge call failed: gave up after 4 attempts: timed out"
    )
    assert all(r.rubric_scores is None for r in result.per_invocation)


def test_the_metric_says_what_it_is() -> None:
    info = CoherenceMetric.info
    assert (info.name, info.min_value, info.max_value) == ("response_evaluation_score", 1.0, 5.0)
    assert info.needs_expected and info.needs_judge and info.source == "vertex"
    assert prompts.SCHEMA["properties"]["rating"]["enum"] == ["1", "2", "3", "4", "5"]


# --------------------------------------------------------------------------- Vertex AI


class FakeRows:
    """A row scorer stand-in: records the rows, answers from a list."""

    def __init__(self, scores: Sequence[vertex_ai.VertexScore] | Exception) -> None:
        self.scores = scores
        self.rows: list[vertex_ai.Row] = []

    def __call__(self, rows: Sequence[vertex_ai.Row]) -> Sequence[vertex_ai.VertexScore]:
        self.rows.extend(rows)
        if isinstance(self.scores, Exception):
            raise self.scores
        return self.scores


def test_vertex_gets_one_row_per_invocation_with_the_reference_and_an_empty_response() -> None:
    explained = [RubricScore(rubric_id="explanation", rationale="logical")]
    vertex = FakeRows(
        [
            vertex_ai.VertexScore(4.0, explanation="logical", rubric_scores=explained),
            vertex_ai.VertexScore(None, reason="Vertex AI gave no score: empty"),
        ]
    )
    metric, caller = make(env=CLOUD, vertex=vertex, threshold=3.0)
    result = run(metric, [inv("Fine.", prompt="p1"), inv(None, prompt="p2")], refs(2))
    assert vertex.rows == [
        vertex_ai.Row("p1", "Reference 0.", "Fine."),
        vertex_ai.Row("p2", "Reference 1.", ""),
    ]
    assert caller.requests == []
    assert [r.score for r in result.per_invocation] == [4.0, None]
    assert result.per_invocation[0].rubric_scores == explained
    assert result.score == 4.0 and result.status == EvalStatus.PASSED
    assert result.notes is not None
    assert (result.notes.judge_model, result.notes.judge_source) == (
        "vertex-ai:response_evaluation_score",
        "ASSAY_VERTEX_METRICS",
    )
    assert result.notes.per_invocation[1].reason == "Vertex AI gave no score: empty"


def test_vertex_failures_and_miscounts_are_not_evaluated_with_the_reason() -> None:
    failing = FakeRows(RuntimeError("denied for https://x/?key=AIzaSyD-secretsecretsecret123"))
    metric, _ = make(env=CLOUD, vertex=failing)
    result = run(metric, [inv("Fine.")], refs(1))
    assert (result.reason or "").startswith(
        "no invocation was scored; invocation 1 (i): Vertex AI failed: RuntimeError: denied"
    )
    assert "secret" not in (result.reason or "")
    metric, _ = make(env=CLOUD, vertex=FakeRows([]))
    result = run(metric, [inv("Fine.")], refs(1))
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == "Vertex AI returned 0 scores for 1 rows"


@pytest.mark.parametrize(
    ("env", "installed", "reason"),
    [
        (
            CLOUD,
            False,
            "ASSAY_VERTEX_METRICS=response_evaluation_score needs the Vertex AI SDK: "
            "pip install 'assay[vertex]' (google-cloud-aiplatform[evaluation])",
        ),
        (
            {"ASSAY_VERTEX_METRICS": "all", "GOOGLE_CLOUD_LOCATION": "l"},
            True,
            "ASSAY_VERTEX_METRICS=all needs GOOGLE_CLOUD_PROJECT set (or GOOGLE_API_KEY), "
            "and Google Cloud credentials",
        ),
    ],
)
def test_an_opt_in_that_cannot_be_honoured_is_not_evaluated_never_a_silent_fallback(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], installed: bool, reason: str
) -> None:
    monkeypatch.setattr("assay.metrics.vertex.sdk_installed", lambda: installed)
    metric, caller = make(env=env)
    result = run(metric, [inv("Fine.")], refs(1))
    assert result.status == EvalStatus.NOT_EVALUATED and result.reason == reason
    assert caller.requests == []
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == reason


def _adk(threshold: float, actual: Sequence[Invocation], expected: Sequence[Invocation]) -> Any:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.response_evaluator import ResponseEvaluator

    def adk(invocations: Sequence[Invocation]) -> list[Any]:
        return [
            AdkInvocation.model_validate(i.model_dump(mode="json", exclude_none=True))
            for i in invocations
        ]

    evaluator = ResponseEvaluator(threshold=threshold, metric_name="response_evaluation_score")
    return evaluator.evaluate_invocations(adk(actual), adk(expected))


def test_the_vertex_path_matches_adks_response_evaluator_on_the_same_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    answers: list[Any] = [
        vertex_result(4.5, explanation="logical"),
        vertex_result(float("nan"), error="response missing"),
        vertex_result(2),
    ]
    actual = [inv("Fine.", prompt=f"p{n}", invocation_id=f"i{n}") for n in range(2)]
    actual.append(inv(None, prompt="p2", invocation_id="i2"))
    theirs_service, ours_service = FakeService(answers), FakeService(answers)
    with fake_sdk(monkeypatch, theirs_service):
        theirs = _adk(3.0, actual, refs(3))
    with fake_sdk(monkeypatch, ours_service):
        env = {"GOOGLE_API_KEY": "k", "ASSAY_VERTEX_METRICS": "all"}
        metric, caller = make(env=env, threshold=3.0)
        ours = run(metric, actual, refs(3))
    assert caller.requests == []
    # the same rows (an empty response too), one call each, to the same metric
    assert ours_service.calls == theirs_service.calls
    assert ours_service.calls[0]["metrics"] == ["PrebuiltMetric.COHERENCE"]
    assert [(r.score, r.status.value, plain(r.rubric_scores)) for r in ours.per_invocation] == [
        (r.score, r.eval_status.value, plain(r.rubric_scores))
        for r in theirs.per_invocation_results
    ]
    assert ours.score == theirs.overall_score == 3.25
    assert ours.status.value == theirs.overall_eval_status.value


def test_a_failed_vertex_call_leaves_that_row_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    service = FakeService([vertex_result(5), RuntimeError("quota exceeded")])
    with fake_sdk(monkeypatch, service):
        metric, _ = make(env={"GOOGLE_API_KEY": "k", "ASSAY_VERTEX_METRICS": "all"})
        result = run(metric, [inv("Fine."), inv("Also fine.", invocation_id="j")], refs(2))
    assert [r.score for r in result.per_invocation] == [5.0, None]
    assert result.notes is not None
    assert (
        result.notes.per_invocation[1].reason
        == "Vertex AI call failed: RuntimeError: quota exceeded"
    )
