"""``final_response_match_v2``: parsing, the vote, the overall fraction, prompts, notes, and a
differential test against ADK 2.13's own evaluator with its judge replaced by a script."""

from __future__ import annotations

import asyncio
import random
import re
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import JudgeModelOptions as AdkJudgeModelOptions
from google.adk.evaluation.eval_metrics import LlmAsAJudgeCriterion as AdkCriterion
from google.adk.evaluation.final_response_match_v2 import (
    FinalResponseMatchV2Evaluator,
    _parse_critique,
)
from google.adk.evaluation.llm_as_judge_utils import Label
from google.adk.models.llm_response import LlmResponse as AdkLlmResponse
from google.genai import types as genai_types

from assay.config import LlmAsAJudgeCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, TokenUsage
from assay.llm.judge import Judge
from assay.metrics.base import EvalStatus, MetricResult
from assay.metrics.final_response_match import NO_VERDICT, FinalResponseMatchV2Metric, parse_verdict
from assay.metrics.prompts import final_response_match as v2_prompt

# --------------------------------------------------------------------------- a scripted judge

Answer = str | Exception


@dataclass
class ScriptedCaller:
    """Answers sample ``n`` of a prompt with ``scripts[key][n]`` for the key found in it."""

    scripts: dict[str, list[Answer]]
    model: str = "scripted:judge"
    requests: list[LlmRequest] = field(default_factory=list)

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        self.requests.append(request)
        prompt = request.messages[-1].content
        keys = [key for key in self.scripts if key in prompt]
        assert len(keys) == 1, f"no single script key in {prompt!r}"
        answer = self.scripts[keys[0]][sample]
        if isinstance(answer, Exception):
            raise answer
        usage = TokenUsage(prompt_tokens=100, completion_tokens=10, calls=1)
        return LlmResponse(text=answer, model=self.model, usage=usage, cached=sample == 1)


def _verdict(label: str) -> str:
    return f'{{"reasoning": "r", "is_the_agent_response_valid": "{label}"}}'


VALID, INVALID, JUNK = _verdict("valid"), _verdict("invalid"), "I cannot decide."


def _invocation(index: int) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": f"inv-{index}",
            "user_content": {"role": "user", "parts": [{"text": f"asked question {index}"}]},
            "final_response": {"role": "model", "parts": [{"text": f"<answer {index}>"}]},
        }
    )


def _expected(index: int) -> Invocation:
    return Invocation.model_validate(
        {
            "user_content": {"role": "user", "parts": [{"text": f"expected question {index}"}]},
            "final_response": {"role": "model", "parts": [{"text": f"reference {index}"}]},
        }
    )


def _criterion(
    num_samples: int = 5, threshold: float = 0.5, **options: Any
) -> LlmAsAJudgeCriterion:
    return LlmAsAJudgeCriterion.model_validate(
        {"threshold": threshold, "judge_model_options": {"num_samples": num_samples, **options}}
    )


def _run(
    scripts: list[list[Answer]], criterion: LlmAsAJudgeCriterion | None = None
) -> tuple[MetricResult, ScriptedCaller, Judge]:
    caller = ScriptedCaller({f"<answer {i}>": answers for i, answers in enumerate(scripts)})
    judge = Judge(caller, "final_response_match_v2", source="config")
    criterion = criterion or _criterion(num_samples=len(scripts[0]))
    actual = [_invocation(i) for i in range(len(scripts))]
    expected = [_expected(i) for i in range(len(scripts))]
    case = EvalCase(eval_id="c1", conversation=expected)
    metric = FinalResponseMatchV2Metric(criterion, judge)
    return asyncio.run(metric.evaluate(actual, expected, case)), caller, judge


# --------------------------------------------------------------------------- parsing

# (judge text, ADK's label): ADK's own parser agrees with ours on every one of these.
ADK_CASES = [
    (VALID, Label.VALID),
    (INVALID, Label.INVALID),
    ('{"reasoning": "x",\n "is_the_agent_response_valid": [valid],\n}', Label.VALID),
    ('"is_the_agent_response_valid": [ "invalid" ]\n', Label.INVALID),
    ('"is_the_agent_response_valid":valid}', Label.VALID),
    ('"is_the_agent_response_valid": valid,,\n', Label.VALID),  # ADK strips trailing commas
    ('"is_the_agent_response_valid": "almost",', Label.INVALID),
    ('"is_the_agent_response_valid": false}', Label.INVALID),
    ('"is_the_agent_response_valid": true}', Label.VALID),
    ('"is_the_agent_response_valid": "partially_valid"}', Label.INVALID),
    ('"is_the_agent_response_valid": "partially"}', Label.INVALID),
    ('"is_the_agent_response_valid": "yes"}', Label.NOT_FOUND),  # not one of ADK's labels
    ('"is_the_agent_response_valid": ""}', Label.NOT_FOUND),
    ('"is_the_agent_response_valid": valid', Label.NOT_FOUND),  # no comma, newline or brace
    ('"is_the_agent_response_invalid": true}', Label.INVALID),  # the inverted key
    ('"is_the_agent_response_invalid": "invalid"}', Label.INVALID),
    ('"is_the_agent_response_invalid": false}', Label.VALID),
    ('"is_the_agent_response_invalid": "banana"}', Label.VALID),  # anything else is valid
    (
        '"is_the_agent_response_valid": "maybe",\n"is_the_agent_response_invalid": true}',
        Label.NOT_FOUND,
    ),
    ("```json\n" + INVALID + "\n```", Label.INVALID),
    ("Here it is: " + VALID + " Done.", Label.VALID),
    (JUNK, Label.NOT_FOUND),
    ("", Label.NOT_FOUND),
]

_SCORES = {Label.VALID: 1.0, Label.INVALID: 0.0, Label.NOT_FOUND: None}


@pytest.mark.parametrize(("text", "label"), ADK_CASES)
def test_the_parser_reads_what_adks_parser_reads(text: str, label: Label) -> None:
    assert _parse_critique(text) == label  # the case is what we say ADK does
    assert parse_verdict(text).value == _SCORES[label]


@pytest.mark.parametrize(
    ("text", "score"),
    [
        (_verdict("Valid"), 1.0),
        (_verdict("INVALID"), 0.0),
        ('"is_the_agent_response_valid": True,\n', 1.0),
        ('"is_the_agent_response_invalid": True}', 0.0),
        ('"is_the_agent_response_valid": "partially valid"}', 0.0),
        ('"is_the_agent_response_valid": partially valid,\n', 0.0),
    ],
)
def test_labels_are_read_case_insensitively_and_partially_valid_with_a_space(
    text: str, score: float
) -> None:
    assert parse_verdict(text).value == score


def test_adk_misses_the_labels_we_fixed() -> None:
    assert _parse_critique(_verdict("Valid")) == Label.NOT_FOUND
    assert _parse_critique('"is_the_agent_response_valid": "partially valid"}') == Label.NOT_FOUND


def test_a_json_object_is_read_as_json() -> None:
    assert parse_verdict('{"is_the_agent_response_valid" : "invalid"}').value == 0.0
    assert parse_verdict('{"is_the_agent_response_valid": ["valid"]}').value == 1.0
    assert parse_verdict('{"is_the_agent_response_valid": false}').value == 0.0


def test_the_answer_object_wins_over_an_earlier_draft_in_prose() -> None:
    text = 'Draft: "is_the_agent_response_valid": invalid,\nFinal: ' + VALID
    assert parse_verdict(text).value == 1.0


def test_an_unparseable_answer_is_no_score_with_a_reason() -> None:
    assert parse_verdict(JUNK) == parse_verdict(JUNK)
    parsed = parse_verdict(JUNK)
    assert (parsed.value, parsed.reason, parsed.score) == (None, NO_VERDICT, None)
    unknown = parse_verdict(_verdict("maybe"))
    assert unknown.value is None
    assert unknown.reason == "unknown verdict label 'maybe'"


def test_a_parsed_answer_carries_its_score_and_verdict_word() -> None:
    parsed = parse_verdict(INVALID)
    assert (parsed.value, parsed.score, parsed.verdict, parsed.reason) == (
        0.0,
        0.0,
        "invalid",
        None,
    )


# --------------------------------------------------------------------------- the vote


def test_three_valid_against_two_invalid_is_valid() -> None:
    result, _, _ = _run([[INVALID, VALID, INVALID, VALID, VALID]])
    assert result.per_invocation[0].score == 1.0
    assert result.per_invocation[0].status is EvalStatus.PASSED


def test_a_tie_is_invalid_and_unparsed_samples_do_not_vote() -> None:
    result, _, _ = _run([[VALID, JUNK, INVALID, VALID, INVALID]])
    assert result.per_invocation[0].score == 0.0
    assert result.per_invocation[0].status is EvalStatus.FAILED
    assert result.notes is not None
    assert result.notes.per_invocation[0].details == {
        "votes": {"valid": 2, "invalid": 2, "none": 1}
    }


def test_a_single_parsed_sample_decides_among_unparsed_ones() -> None:
    result, _, _ = _run([[JUNK, JUNK, VALID]])
    assert result.per_invocation[0].score == 1.0


def test_no_parsed_sample_leaves_the_invocation_not_evaluated_with_a_reason() -> None:
    result, _, _ = _run([[JUNK, JUNK, JUNK], [VALID, VALID, INVALID]])
    first = result.per_invocation[0]
    assert (first.score, first.status) == (None, EvalStatus.NOT_EVALUATED)
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == "no verdict found in any of the 3 judge answers"
    assert (result.score, result.status) == (1.0, EvalStatus.PASSED)  # over the evaluated one


def test_a_failed_call_makes_the_invocation_not_evaluated_even_if_others_parsed() -> None:
    error = LlmCallError("HTTP 500 from the judge", status=500)
    result, _, _ = _run([[VALID, error, VALID], [INVALID, INVALID, VALID]])
    assert result.per_invocation[0].status is EvalStatus.NOT_EVALUATED
    assert result.notes is not None
    notes = result.notes.per_invocation[0]
    assert notes.reason == "judge call failed (sample 1): HTTP 500 from the judge"
    assert notes.samples[1].error == "HTTP 500 from the judge"
    assert notes.samples[0].score == 1.0  # the other samples are still recorded
    assert (result.score, result.status) == (0.0, EvalStatus.FAILED)


# --------------------------------------------------------------------------- the overall score


def test_the_score_is_the_fraction_of_evaluated_invocations_judged_valid() -> None:
    result, _, _ = _run(
        [[VALID], [INVALID], [VALID], [JUNK]], _criterion(num_samples=1, threshold=0.6)
    )
    assert result.score == 2 / 3
    assert result.status is EvalStatus.PASSED
    assert [r.status for r in result.per_invocation] == [
        EvalStatus.PASSED,
        EvalStatus.FAILED,
        EvalStatus.PASSED,
        EvalStatus.NOT_EVALUATED,
    ]


def test_no_evaluated_invocation_is_not_evaluated_with_the_first_reason() -> None:
    result, _, _ = _run([[JUNK], [JUNK]], _criterion(num_samples=1))
    assert (result.score, result.status) == (None, EvalStatus.NOT_EVALUATED)
    assert result.reason == (
        "no invocation was evaluated: no verdict found in any of the 1 judge answers"
    )


def test_without_expected_invocations_nothing_is_asked() -> None:
    caller = ScriptedCaller({})
    metric = FinalResponseMatchV2Metric(_criterion(), Judge(caller, "final_response_match_v2"))
    case = EvalCase.model_validate(
        {
            "eval_id": "s",
            "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p"},
        }
    )
    result = asyncio.run(metric.evaluate([_invocation(0)], None, case))
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.reason is not None and "needs expected invocations" in result.reason
    mismatch = asyncio.run(metric.evaluate([_invocation(0)], [_expected(0), _expected(1)], case))
    assert mismatch.reason == "expected 2 invocations, got 1"
    assert caller.requests == []


# --------------------------------------------------------------------------- prompts


def test_the_prompt_uses_the_expected_user_prompt_the_actual_answer_and_the_reference() -> None:
    _, caller, _ = _run([[VALID]], _criterion(num_samples=1))
    request = caller.requests[0]
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content == v2_prompt.SYSTEM  # static, first: prefix-cacheable
    user = request.messages[1].content
    assert "<user_prompt>\nexpected question 0\n</user_prompt>" in user
    assert "asked question" not in user  # ADK takes the user prompt from the expected invocation
    assert re.search(r"<agent_response>\n<answer 0>\n</agent_response>", user)
    assert re.search(r"<reference_response>\nreference 0\n</reference_response>", user)
    assert user.index("<user_prompt>") < user.index("<agent_response>") < user.index("<reference")


def test_the_request_asks_for_adks_fields_in_a_json_schema() -> None:
    _, caller, _ = _run([[VALID]], _criterion(num_samples=1))
    request = caller.requests[0]
    assert request.schema_name == v2_prompt.SCHEMA_NAME
    assert request.response_schema is not None
    properties = request.response_schema["properties"]
    assert properties["is_the_agent_response_valid"]["enum"] == ["valid", "invalid"]
    assert properties["reasoning"]["maxLength"] == 150
    assert request.temperature is None and request.max_tokens is None and request.params == {}


def test_judge_model_config_sets_temperature_and_passes_the_rest_through() -> None:
    config = {"temperature": 0, "maxOutputTokens": 256, "topP": 0.9, "seed": 7}
    _, caller, _ = _run([[VALID]], _criterion(num_samples=1, judge_model_config=config))
    request = caller.requests[0]
    assert (request.temperature, request.max_tokens) == (0.0, 256)
    assert request.params == {"topP": 0.9, "seed": 7}


def test_the_system_prompt_is_compact() -> None:
    assert len(v2_prompt.SYSTEM.split()) < 250


def test_intermediate_responses_are_included_when_the_criterion_asks() -> None:
    actual = Invocation.model_validate(
        {
            "user_content": {"parts": [{"text": "q"}]},
            "final_response": {"parts": [{"text": "final"}]},
            "intermediate_data": {"intermediate_responses": [["sub", [{"text": "step one"}]]]},
        }
    )
    expected = _expected(0)
    judge = Judge(ScriptedCaller({}), "final_response_match_v2")
    plain = FinalResponseMatchV2Metric(_criterion(), judge).prompt(actual, expected)
    assert "<agent_response>\nfinal\n</agent_response>" in plain
    criterion = _criterion().model_copy(update={"include_intermediate_responses_in_final": True})
    both = FinalResponseMatchV2Metric(criterion, judge).prompt(actual, expected)
    assert "<agent_response>\nstep one\nfinal\n</agent_response>" in both


# --------------------------------------------------------------------------- notes


def test_notes_record_the_judge_usage_and_every_sample() -> None:
    result, _, judge = _run([[VALID, JUNK], [INVALID, VALID]], _criterion(num_samples=2))
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:judge", "config")
    assert notes.usage == TokenUsage(prompt_tokens=400, completion_tokens=40, calls=4)
    assert judge.ledger.for_case("c1") == {"final_response_match_v2": notes.usage}
    assert [n.invocation_id for n in notes.per_invocation] == ["inv-0", "inv-1"]
    first = notes.per_invocation[0].samples
    assert (first[0].score, first[0].verdict, first[0].text) == (1.0, "valid", VALID)
    assert (first[1].score, first[1].reason, first[1].text, first[1].cached) == (
        None,
        NO_VERDICT,
        JUNK,
        True,
    )


def test_invocations_are_judged_concurrently_within_the_parallelism_limit() -> None:
    active = 0
    peak = 0

    class SlowCaller(ScriptedCaller):
        async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            active -= 1
            return await super().generate(request, sample=sample)

    def peak_for(criterion: LlmAsAJudgeCriterion) -> int:
        nonlocal peak
        peak = 0
        caller = SlowCaller({f"<answer {i}>": [VALID] * 2 for i in range(3)})
        metric = FinalResponseMatchV2Metric(criterion, Judge(caller, "final_response_match_v2"))
        expected = [_expected(i) for i in range(3)]
        case = EvalCase(eval_id="c", conversation=expected)
        asyncio.run(metric.evaluate([_invocation(i) for i in range(3)], expected, case))
        return peak

    assert peak_for(_criterion(num_samples=2)) == 6
    assert peak_for(_criterion(num_samples=2, parallelism_limit=2)) == 2


# --------------------------------------------------------------------------- against ADK


class _AdkStubJudge:
    """Stands in for ADK's judge model: answers by the marker found in the prompt."""

    def __init__(self, scripts: dict[str, list[Answer]]) -> None:
        self.scripts = scripts
        self.asked: dict[str, int] = {}

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncIterator[AdkLlmResponse]:
        prompt = llm_request.contents[0].parts[0].text
        key = next(k for k in self.scripts if k in prompt)
        index = self.asked.get(key, 0)
        self.asked[key] = index + 1
        answer = self.scripts[key][index]
        if isinstance(answer, Exception):
            raise answer
        yield AdkLlmResponse(
            content=genai_types.Content(role="model", parts=[genai_types.Part(text=answer)])
        )


# Texts on which ADK's parser and ours agree (the departures are tested above).
_POOL: list[Answer] = [
    VALID,
    INVALID,
    _verdict("almost"),
    '"is_the_agent_response_valid": [valid],\n',
    '"is_the_agent_response_valid": true}',
    '"is_the_agent_response_valid": "partially"}',
    '"is_the_agent_response_invalid": true}',
    '"is_the_agent_response_invalid": "no"}',
    '"is_the_agent_response_valid": valid',
    _verdict("unsure"),
    JUNK,
    "",
    RuntimeError("judge down"),
]


def _adk_score(
    scripts: list[list[Answer]], num_samples: int, threshold: float
) -> tuple[Any, list[tuple[Any, int]]]:
    criterion = AdkCriterion(
        threshold=threshold, judge_model_options=AdkJudgeModelOptions(num_samples=num_samples)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = FinalResponseMatchV2Evaluator(
            AdkEvalMetric(metric_name="final_response_match_v2", criterion=criterion)
        )
    evaluator._judge_model = _AdkStubJudge(  # type: ignore[assignment]
        {f"<answer {i}>": answers for i, answers in enumerate(scripts)}
    )
    actual = [
        AdkInvocation.model_validate(_invocation(i).model_dump(exclude_none=True))
        for i in range(len(scripts))
    ]
    expected = [
        AdkInvocation.model_validate(_expected(i).model_dump(exclude_none=True))
        for i in range(len(scripts))
    ]
    result = asyncio.run(evaluator.evaluate_invocations(actual, expected))
    per = [(r.score, r.eval_status.value) for r in result.per_invocation_results]
    return (result.overall_score, result.overall_eval_status.value), per


def _ours(
    scripts: list[list[Answer]], num_samples: int, threshold: float
) -> tuple[Any, list[tuple[Any, int]]]:
    ours = [[LlmCallError(str(a)) if isinstance(a, Exception) else a for a in s] for s in scripts]
    result, _, _ = _run(ours, _criterion(num_samples=num_samples, threshold=threshold))
    per = [(r.score, r.status.value) for r in result.per_invocation]
    return (result.score, result.status.value), per


def test_scores_equal_adks_evaluator_fed_the_same_judge_answers() -> None:
    rng = random.Random(2_013)
    for _ in range(60):
        num_samples = rng.randint(1, 5)
        threshold = rng.choice([0.0, 0.5, 0.75, 1.0])
        scripts = [
            [rng.choice(_POOL) for _ in range(num_samples)] for _ in range(rng.randint(1, 4))
        ]
        assert _ours(scripts, num_samples, threshold) == _adk_score(scripts, num_samples, threshold)
