"""The rubric-based metrics: reading answers, matching them to rubrics, the vote, the pooled
mean, which rubrics apply, prompts, notes, and a differential test against ADK 2.13's own
evaluators with their judge replaced by a script."""

from __future__ import annotations

import asyncio
import random
import warnings
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import JudgeModelOptions as AdkJudgeModelOptions
from google.adk.evaluation.eval_metrics import RubricsBasedCriterion as AdkCriterion
from google.adk.evaluation.eval_rubrics import Rubric as AdkRubric
from google.adk.evaluation.rubric_based_evaluator import (
    DefaultAutoRaterResponseParser,
    _normalize_text,
)
from google.adk.evaluation.rubric_based_final_response_quality_v1 import (
    RubricBasedFinalResponseQualityV1Evaluator,
)
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
from google.adk.models.llm_response import LlmResponse as AdkLlmResponse
from google.genai import types as genai_types

from assay.config import RubricsBasedCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric, RubricScore
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, TokenUsage
from assay.llm.judge import Judge
from assay.metrics.base import EvalStatus, MetricResult
from assay.metrics.judge_inputs import NO_STEPS, NO_TOOLS
from assay.metrics.prompts import rubrics as prompts
from assay.metrics.rubrics import (
    AGGREGATED_RATIONALE,
    NO_VERDICT,
    RubricAnswer,
    RubricFinalResponseQualityMetric,
    RubricToolUseQualityMetric,
    SampleVerdicts,
    match_answers,
    normalize_text,
    parse_answers,
    verdict_score,
    vote,
)

FINAL = "FINAL_RESPONSE_QUALITY"
TOOL = "TOOL_USE_QUALITY"

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
        usage = TokenUsage(prompt_tokens=50, completion_tokens=5, calls=1)
        return LlmResponse(text=answer, model=self.model, usage=usage)


def _rubric(rubric_id: str, text: str, rubric_type: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"rubric_id": rubric_id, "rubric_content": {"text_property": text}}
    if rubric_type is not None:
        out["type"] = rubric_type
    return out


POLITE = _rubric("polite", "The answer is polite.")
SHORT = _rubric("short", "The answer is short.")
CITED = _rubric("cited", "The answer cites a source.")


def _invocation(index: int, **extra: Any) -> dict[str, Any]:
    return {
        "invocation_id": f"inv-{index}",
        "user_content": {"role": "user", "parts": [{"text": f"<question {index}>"}]},
        "final_response": {"role": "model", "parts": [{"text": f"answer {index}"}]},
        **extra,
    }


def _criterion(
    rubrics: Sequence[dict[str, Any]], num_samples: int = 1, threshold: float = 0.5, **more: Any
) -> RubricsBasedCriterion:
    return RubricsBasedCriterion.model_validate(
        {
            "threshold": threshold,
            "rubrics": list(rubrics),
            "judge_model_options": {"num_samples": num_samples},
            **more,
        }
    )


def _json(*entries: tuple[str, str]) -> str:
    """Our answer format: (id, verdict) pairs."""
    import json

    return json.dumps(
        {
            "verdicts": [
                {
                    "id": rid,
                    "property": "p",
                    "rationale": f"why {rid} {verdict}",
                    "verdict": verdict,
                }
                for rid, verdict in entries
            ]
        }
    )


def _lines(*entries: tuple[str | None, str, str]) -> str:
    """ADK's answer format: (id or None, property, verdict) triples."""
    out = []
    for rid, prop, verdict in entries:
        if rid is not None:
            out.append(f"ID: {rid}")
        out += [
            f"Property: {prop}",
            "Evidence: -",
            f"Rationale: because {prop}",
            f"Verdict: {verdict}",
        ]
    return "\n".join(out) + "\n"


def _run(
    scripts: list[list[Answer]],
    criterion: RubricsBasedCriterion,
    *,
    metric: type[RubricFinalResponseQualityMetric | RubricToolUseQualityMetric] = (
        RubricFinalResponseQualityMetric
    ),
    case_rubrics: list[dict[str, Any]] | None = None,
    expected: list[dict[str, Any]] | None = None,
    actual: list[dict[str, Any]] | None = None,
) -> tuple[MetricResult, ScriptedCaller]:
    caller = ScriptedCaller({f"<question {i}>": answers for i, answers in enumerate(scripts)})
    actual = actual or [_invocation(i) for i in range(len(scripts))]
    actual_invocations = [Invocation.model_validate(a) for a in actual]
    expected_invocations = [Invocation.model_validate(e) for e in expected] if expected else None
    case = EvalCase.model_validate(
        {
            "eval_id": "c1",
            "rubrics": case_rubrics,
            **(
                {"conversation": expected}
                if expected
                else {"conversation_scenario": {"starting_prompt": "s", "conversation_plan": "p"}}
            ),
        }
    )
    judged = metric(criterion, Judge(caller, metric.info.name, source="embedded"))
    result = asyncio.run(judged.evaluate(actual_invocations, expected_invocations, case))
    return result, caller


# --------------------------------------------------------------------------- reading answers


@pytest.mark.parametrize(
    ("verdict", "score"),
    [
        ("yes", 1.0),
        ("Yes.", 1.0),
        ("**YES** it is", 1.0),
        ("[no]", 0.0),
        ("No, because", 0.0),
        (True, 1.0),
        (False, 0.0),
        ("not applicable", None),  # ADK: contains "no" -> 0.0
        ("unknown", None),  # ADK: contains "no" -> 0.0
        ("N/A", None),
        ("yesterday", None),
        ("", None),
        (None, None),
        (1, None),
    ],
)
def test_a_verdict_is_read_from_its_first_word(verdict: object, score: float | None) -> None:
    assert verdict_score(verdict) == score


def test_adk_reads_not_applicable_as_no() -> None:
    parsed = DefaultAutoRaterResponseParser().parse(_lines((None, "x", "not applicable")))
    assert parsed[0].score == 0.0


def test_our_json_is_read_plain_fenced_or_with_text_around() -> None:
    body = _json(("polite", "yes"), ("short", "no"))
    for text in (body, f"```json\n{body}\n```", f"Sure! {body} Hope that helps."):
        answers = parse_answers(text)
        assert [(a.rubric_id, a.score) for a in answers] == [("polite", 1.0), ("short", 0.0)]
        assert answers[0].rationale == "why polite yes"


def test_json_entries_that_are_not_objects_are_skipped_and_fields_may_be_missing() -> None:
    answers = parse_answers('{"verdicts": ["x", {"property": "The answer is short."}, {"id": 3}]}')
    assert answers == [
        RubricAnswer(None, "The answer is short.", None, None),
        RubricAnswer("3", None, None, None),
    ]


def test_adks_lines_are_read_with_ids_attached_to_the_property_they_precede() -> None:
    text = _lines(("a", "First.", "yes"), (None, "Second.", "no"), ("c", "Third.", "maybe"))
    answers = parse_answers(text)
    assert [(a.rubric_id, a.property, a.score) for a in answers] == [
        ("a", "First.", 1.0),
        (None, "Second.", 0.0),  # a missing ID line does not shift "c" onto it
        ("c", "Third.", None),
    ]
    assert answers[0].rationale == "because First."
    adk = DefaultAutoRaterResponseParser().parse(text)
    assert [(a.rubric_id, a.property_text, a.rationale) for a in adk] == [
        (a.rubric_id, a.property, a.rationale) for a in answers
    ]


def test_a_partial_answer_in_adks_format_yields_nothing() -> None:
    text = _lines(("a", "First.", "yes"), ("b", "Second.", "no")).replace("Verdict: no\n", "")
    assert parse_answers(text) == []
    assert DefaultAutoRaterResponseParser().parse(text) == []


@pytest.mark.parametrize(
    "variant",
    [
        "The agent’s answer is “short”.",
        '**The agent\'s answer is "short".**',
        '  the AGENT\'S   answer is "short".  ',
        '> - The agent\'s answer is "short".',
        '`The agent\'s answer is "short".`',
    ],
)
def test_texts_are_compared_normalised_as_adk_does(variant: str) -> None:
    rubric = 'The agent\'s answer is "short".'
    assert normalize_text(variant) == normalize_text(rubric) == _normalize_text(variant)


def _rubrics(*data: dict[str, Any]) -> list[Rubric]:
    return [Rubric.model_validate(d) for d in data]


def test_an_answer_is_matched_by_id_first_then_by_text() -> None:
    answers = [
        RubricAnswer("short", "The answer is polite.", "a", 1.0),  # the id wins
        RubricAnswer("nope", "**The answer is polite.**", "b", 0.0),  # unknown id: by text
        RubricAnswer(None, "Something else", "c", 1.0),
    ]
    verdicts = match_answers(answers, _rubrics(POLITE, SHORT))
    assert verdicts.scores == [
        RubricScore(rubric_id="short", rationale="a", score=1.0),
        RubricScore(rubric_id="polite", rationale="b", score=0.0),
    ]
    assert verdicts.unmatched == ["Something else"]


# --------------------------------------------------------------------------- the vote


def _sample(*scores: tuple[str, float | None]) -> SampleVerdicts:
    return SampleVerdicts(
        [RubricScore(rubric_id=r, rationale=f"{r}-{i}", score=s) for i, (r, s) in enumerate(scores)]
    )


def test_each_rubric_takes_the_majority_and_a_tie_is_no() -> None:
    samples = [
        _sample(("a", 1.0), ("b", 1.0)),
        _sample(("a", 0.0), ("b", 0.0)),
        None,  # a sample with no verdicts does not vote
        _sample(("a", 1.0), ("b", None)),
        _sample(("b", 0.0), ("a", 0.0)),
        _sample(("a", 1.0), ("b", 1.0)),
    ]
    voted = vote(samples)
    assert [(s.rubric_id, s.score) for s in voted] == [("a", 1.0), ("b", 0.0)]
    assert voted[0] is samples[0].scores[0]  # type: ignore[union-attr]  # the first "yes"
    assert voted[1] is samples[1].scores[1]  # type: ignore[union-attr]  # the first "no"


def test_a_rubric_without_any_verdict_keeps_its_first_entry() -> None:
    samples = [_sample(("a", None)), _sample(("a", None), ("c", 1.0))]
    voted = vote(samples)
    assert [(s.rubric_id, s.score, s.rationale) for s in voted] == [
        ("a", None, "a-0"),
        ("c", 1.0, "c-1"),
    ]


def test_three_yes_against_two_no_through_the_metric() -> None:
    yes, no = _json(("polite", "yes")), _json(("polite", "no"))
    result, _ = _run([[no, yes, no, yes, yes]], _criterion([POLITE], num_samples=5))
    assert result.per_invocation[0].score == 1.0
    assert result.per_invocation[0].rubric_scores == [
        RubricScore(rubric_id="polite", rationale="why polite yes", score=1.0)
    ]


def test_a_tie_with_an_unparsed_sample_is_no() -> None:
    yes, no = _json(("polite", "yes")), _json(("polite", "no"))
    result, _ = _run([[yes, "junk", no, no, yes]], _criterion([POLITE], num_samples=5))
    assert result.per_invocation[0].score == 0.0
    assert result.status is EvalStatus.FAILED


# --------------------------------------------------------------------------- scores


def test_the_case_score_pools_rubric_scores_rather_than_averaging_invocation_means() -> None:
    scripts = [
        [_json(("polite", "yes"))],
        [_json(("polite", "no"), ("short", "no"), ("cited", "yes"))],
    ]
    criterion = _criterion([POLITE, SHORT, CITED], threshold=0.55)
    result, _ = _run(scripts, criterion)
    assert [r.score for r in result.per_invocation] == [1.0, 1 / 3]
    assert result.score == 0.5  # (1 + 0 + 0 + 1) / 4; the mean of means would be 2/3
    assert result.status is EvalStatus.FAILED
    assert result.rubric_scores == [
        RubricScore(rubric_id="polite", rationale=AGGREGATED_RATIONALE, score=0.5),
        RubricScore(rubric_id="short", rationale=AGGREGATED_RATIONALE, score=0.0),
        RubricScore(rubric_id="cited", rationale=AGGREGATED_RATIONALE, score=1.0),
    ]


def test_a_rubric_left_without_a_verdict_is_left_out_of_the_means() -> None:
    result, _ = _run([[_json(("polite", "yes"), ("short", "maybe"))]], _criterion([POLITE, SHORT]))
    assert result.per_invocation[0].score == 1.0
    assert result.score == 1.0
    assert [s.score for s in result.rubric_scores or []] == [1.0, None]


def test_a_failed_call_makes_its_invocation_not_evaluated_and_the_rest_still_count() -> None:
    error = LlmCallError("connection refused")
    scripts = [[_json(("polite", "yes")), error], [_json(("polite", "no"))] * 2]
    result, _ = _run(scripts, _criterion([POLITE], num_samples=2))
    first = result.per_invocation[0]
    assert (first.score, first.status, first.rubric_scores) == (
        None,
        EvalStatus.NOT_EVALUATED,
        None,
    )
    assert result.notes is not None
    assert (
        result.notes.per_invocation[0].reason == "judge call failed (sample 1): connection refused"
    )
    assert (result.score, result.status) == (0.0, EvalStatus.FAILED)


def test_nothing_readable_is_not_evaluated_with_reasons() -> None:
    result, _ = _run([["no idea", _json(("other", "yes"))]], _criterion([POLITE], num_samples=2))
    assert (result.score, result.status) == (None, EvalStatus.NOT_EVALUATED)
    assert result.per_invocation[0].rubric_scores == []
    assert result.reason == "no rubric was scored: no verdict on any rubric in the 2 judge answers"
    assert result.notes is not None
    samples = result.notes.per_invocation[0].samples
    assert samples[0].reason == NO_VERDICT
    assert samples[1].reason == "the judge's verdicts match none of the rubrics: 'other'"
    assert result.notes.per_invocation[0].details is not None
    assert result.notes.per_invocation[0].details["unmatched"] == ["other"]


# --------------------------------------------------------------------------- which rubrics


def test_case_rubrics_alone_are_enough_without_criterion_rubrics() -> None:  # ADK issue #4926
    result, caller = _run(
        [[_json(("polite", "yes"))]], _criterion([]), case_rubrics=[{**POLITE, "type": FINAL}]
    )
    assert (result.score, result.status) == (1.0, EvalStatus.PASSED)
    assert "[id: polite] The answer is polite." in caller.requests[0].messages[1].content


def test_case_and_invocation_rubrics_are_filtered_by_type_criterion_ones_never() -> None:
    case_rubrics = [
        _rubric("f", "Final rubric.", FINAL),
        _rubric("t", "Tool rubric.", TOOL),
        _rubric("u", "Untyped rubric."),
    ]
    expected = [_invocation(0, rubrics=[_rubric("e", "Expected rubric.", TOOL)])]
    answer = [_json(("polite", "yes"), ("f", "yes"), ("t", "yes"), ("e", "yes"))]
    final, caller = _run(
        [answer], _criterion([POLITE]), case_rubrics=case_rubrics, expected=expected
    )
    assert [s.rubric_id for s in final.per_invocation[0].rubric_scores or []] == ["polite", "f"]
    assert "Untyped" not in caller.requests[0].messages[1].content
    tool, _ = _run(
        [answer],
        _criterion([POLITE]),
        metric=RubricToolUseQualityMetric,
        case_rubrics=case_rubrics,
        expected=expected,
    )
    assert [s.rubric_id for s in tool.per_invocation[0].rubric_scores or []] == [
        "polite",
        "t",
        "e",
    ]


def test_expected_invocation_rubrics_go_to_the_actual_invocation_at_the_same_position() -> None:
    expected = [_invocation(0), _invocation(1, rubrics=[_rubric("e1", "Second only.", FINAL)])]
    scripts = [[_json(("polite", "yes"))], [_json(("polite", "no"), ("e1", "yes"))]]
    result, caller = _run(scripts, _criterion([POLITE]), expected=expected)
    prompts_sent = sorted(r.messages[1].content for r in caller.requests)
    assert "Second only." not in prompts_sent[0] and "Second only." in prompts_sent[1]
    assert result.per_invocation[1].expected is not None


def test_a_duplicate_rubric_id_is_not_evaluated_and_named_before_any_call() -> None:
    result, caller = _run(
        [[_json(("polite", "yes"))]],
        _criterion([POLITE]),
        case_rubrics=[{**POLITE, "type": FINAL}],
    )
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.reason == "rubric id 'polite' is given twice (again by the eval set)"
    assert caller.requests == []


def test_a_duplicate_between_case_and_expected_invocation_clashes_whatever_the_type() -> None:
    result, _ = _run(
        [[""], [""]],
        _criterion([POLITE]),
        case_rubrics=[_rubric("x", "X.", TOOL)],
        expected=[_invocation(0), _invocation(1, rubrics=[_rubric("x", "Y.", "OTHER")])],
    )
    assert result.reason == (
        "invocation 2: rubric id 'x' is given twice (again by the expected invocation)"
    )


def test_no_rubrics_at_all_is_not_evaluated() -> None:
    result, caller = _run([[""]], _criterion([]), case_rubrics=[_rubric("t", "T.", TOOL)])
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.reason == (
        "no rubrics: the criterion has none, and neither the case nor the invocation has any of "
        "type FINAL_RESPONSE_QUALITY"
    )
    assert caller.requests == []


def test_a_count_mismatch_only_matters_when_expected_invocations_carry_rubrics() -> None:
    expected = [_invocation(0), _invocation(1)]
    plain, _ = _run([[_json(("polite", "yes"))]], _criterion([POLITE]), expected=expected)
    assert plain.status is EvalStatus.PASSED
    expected[1]["rubrics"] = [_rubric("e", "E.", FINAL)]
    clash, _ = _run([[_json(("polite", "yes"))]], _criterion([POLITE]), expected=expected)
    assert clash.reason == (
        "expected 2 invocations, got 1: the expected invocations' rubrics cannot be matched to "
        "the actual ones"
    )


# --------------------------------------------------------------------------- prompts

APP = {
    "agent_details": {
        "root": {
            "name": "root",
            "instructions": "You book trains.",
            "tool_declarations": [{"function_declarations": [{"name": "book"}]}],
        }
    }
}


def _rich_invocation() -> dict[str, Any]:
    return _invocation(
        0,
        final_response={"parts": [{"text": "Booked."}]},
        intermediate_data={
            "invocation_events": [
                {"author": "root", "content": {"parts": [{"text": "One moment."}]}},
                {
                    "author": "root",
                    "content": {
                        "parts": [{"function_call": {"id": "1", "name": "book", "args": {}}}]
                    },
                },
            ]
        },
        app_details=APP,
    )


def test_the_final_response_prompt_gives_every_input_after_the_static_instructions() -> None:
    _, caller = _run(
        [[_json(("polite", "yes"))]], _criterion([POLITE, SHORT]), actual=[_rich_invocation()]
    )
    request = caller.requests[0]
    assert [m.role for m in request.messages] == ["system", "user"]
    assert request.messages[0].content == prompts.RUBRIC_SYSTEM
    user = request.messages[1].content
    order = [
        "<developer_instructions>\nYou book trains.\n",
        '<available_tools>\n{"tool_declarations": {"root": [',
        "<user_prompt>\n<question 0>\n",
        '<response_steps>\n{"tool_calls_and_response": [\n{"step": 0, "tool_call": {"id": "1"',
        "<final_answer>\nBooked.\n</final_answer>",
        "<final_answer_properties>\n[id: polite] The answer is polite.\n"
        "[id: short] The answer is short.\n",
    ]
    positions = [user.index(part) for part in order]
    assert positions == sorted(positions)
    assert "<grounding_metadata>" not in user


def test_the_final_answer_includes_intermediate_text_when_asked() -> None:
    criterion = _criterion([POLITE], include_intermediate_responses_in_final=True)
    _, caller = _run([[_json(("polite", "yes"))]], criterion, actual=[_rich_invocation()])
    assert (
        "<final_answer>\nOne moment.\nBooked.\n</final_answer>"
        in caller.requests[0].messages[1].content
    )


def test_the_tool_use_prompt_is_the_turn_without_its_final_answer() -> None:
    _, caller = _run(
        [[_json(("polite", "yes"))]],
        _criterion([POLITE]),
        metric=RubricToolUseQualityMetric,
        actual=[_rich_invocation()],
    )
    request = caller.requests[0]
    assert request.messages[0].content == prompts.RUBRIC_SYSTEM
    user = request.messages[1].content
    assert "Booked." not in user and "<final_answer>" not in user
    order = [
        "<developer_instructions>\nYou book trains.\n",
        "<available_tools>",
        "<user_prompt>",
        "<response_steps>",
        "<tool_use_properties>\n[id: polite] The answer is polite.\n</tool_use_properties>",
    ]
    positions = [user.index(part) for part in order]
    assert positions == sorted(positions)


def test_both_rubric_judges_share_everything_up_to_the_tool_steps() -> None:
    """A prompt cache that read one judge's prompt reads only the other's last lines."""
    requests = []
    for metric in (RubricFinalResponseQualityMetric, RubricToolUseQualityMetric):
        _, caller = _run(
            [[_json(("polite", "yes"))]],
            _criterion([POLITE]),
            metric=metric,
            actual=[_rich_invocation()],
        )
        requests.append(caller.requests[0])
    final, tool_use = (request.messages for request in requests)
    assert final[0].content == tool_use[0].content
    shared = tool_use[1].content.split("<tool_use_properties>")[0]
    assert final[1].content.startswith(shared)
    assert "</response_steps>" in shared


def test_an_invocation_without_tools_or_steps_says_so() -> None:
    _, caller = _run([[_json(("polite", "yes"))]], _criterion([POLITE]))
    user = caller.requests[0].messages[1].content
    assert f"<available_tools>\n{NO_TOOLS}\n" in user
    assert f"<response_steps>\n{NO_STEPS}\n" in user
    assert "<developer_instructions>\n(none)\n" in user


def test_the_schema_asks_for_one_verdict_per_rubric_by_id() -> None:
    _, caller = _run([[_json(("polite", "yes"))]], _criterion([POLITE, SHORT]))
    request = caller.requests[0]
    assert request.schema_name == prompts.SCHEMA_NAME
    assert request.response_schema is not None
    verdicts = request.response_schema["properties"]["verdicts"]
    assert (verdicts["minItems"], verdicts["maxItems"]) == (2, 2)
    entry = verdicts["items"]["properties"]
    assert entry["id"]["enum"] == ["polite", "short"]
    assert entry["verdict"]["enum"] == ["yes", "no"]
    assert entry["rationale"]["maxLength"] == 150


def test_the_static_prompts_are_compact() -> None:
    assert len(prompts.RUBRIC_SYSTEM.split()) < 300


# --------------------------------------------------------------------------- notes


def test_notes_hold_every_sample_and_each_rubrics_votes() -> None:
    scripts = [
        [
            _json(("polite", "yes"), ("short", "no")),
            _lines((None, "The answer is polite.", "no"), ("short", "x", "no")),
        ]
    ]
    result, _ = _run(scripts, _criterion([POLITE, SHORT, CITED], num_samples=2))
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:judge", "embedded")
    assert notes.usage == TokenUsage(prompt_tokens=100, completion_tokens=10, calls=2)
    invocation = notes.per_invocation[0]
    assert invocation.invocation_id == "inv-0"
    assert [(s.score, s.verdict) for s in invocation.samples] == [
        (0.5, "polite: yes, short: no"),
        (0.0, "polite: no, short: no"),
    ]
    assert invocation.samples[1].text == scripts[0][1]
    assert invocation.details is not None
    assert invocation.details["rubrics"] == [
        {
            "rubric_id": "polite",
            "property": "The answer is polite.",
            "score": 0.0,
            "verdict": "no",
            "rationale": "because The answer is polite.",
            "votes": {"yes": 1, "no": 1, "none": 0},
        },
        {
            "rubric_id": "short",
            "property": "The answer is short.",
            "score": 0.0,
            "verdict": "no",
            "rationale": "why short no",
            "votes": {"yes": 0, "no": 2, "none": 0},
        },
        {
            "rubric_id": "cited",
            "property": "The answer cites a source.",
            "score": None,
            "verdict": None,
            "rationale": None,
            "votes": {"yes": 0, "no": 0, "none": 0},
        },
    ]


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


_TEXTS = [
    "The answer is polite.",
    "The agent's answer is short.",
    'The answer says "hello".',
    "The answer cites a source.",
    "A tool was called.",
    "The right tool was called.",
]
_VERDICTS = ["yes", "no", "Yes.", "**no**", "YES, clearly", "maybe", "No"]


def _variant(rng: random.Random, text: str) -> str:
    return rng.choice(
        [
            text,
            text,
            f"**{text}**",
            text.upper(),
            text.replace("'", "\u2019").replace('"', "\u201c", 1).replace('"', "\u201d"),
            f"  {text}  ",
            "Something else entirely.",
        ]
    )


def _adk_answer(rng: random.Random, pool: list[dict[str, Any]]) -> Answer:
    roll = rng.random()
    if roll < 0.05:
        return RuntimeError("judge down")
    if roll < 0.1:
        return "I will not answer in that format."
    entries = rng.sample(pool, rng.randint(0, len(pool)))
    if rng.random() < 0.2 and entries:
        entries.append(rng.choice(entries))  # a rubric answered twice
    lines = []
    for rubric in entries:
        rid = rng.choice([rubric["rubric_id"], rubric["rubric_id"], None, "zz"])
        if rid is not None:
            lines.append(f"ID: {rid}")
        lines.append(f"Property: {_variant(rng, rubric['rubric_content']['text_property'])}")
        lines.append(f"Rationale: r{rng.randint(0, 9)}")
        if rng.random() > 0.03:  # sometimes a verdict goes missing: nothing parses
            lines.append(f"Verdict: {rng.choice(_VERDICTS)}")
    return "\n".join(lines)


@dataclass
class _Generated:
    criterion: list[dict[str, Any]]
    case: list[dict[str, Any]] | None
    actual: list[dict[str, Any]]
    expected: list[dict[str, Any]]
    scripts: list[list[Answer]]
    num_samples: int
    threshold: float


def _generate(rng: random.Random) -> _Generated:
    pool = [
        _rubric(f"r{i}", text, rng.choice([FINAL, TOOL, None, FINAL]))
        for i, text in enumerate(_TEXTS)
    ]
    rng.shuffle(pool)
    taken = iter(pool)

    def some(most: int) -> list[dict[str, Any]]:
        out = [r for _, r in zip(range(rng.randint(0, most)), taken, strict=False)]
        if rng.random() < 0.05:
            out.append(rng.choice(pool))  # a clash
        return out

    criterion = [{k: v for k, v in r.items() if k != "type"} for r in some(2)]
    case = some(2) or None
    count = rng.randint(1, 3)
    expected = [_invocation(i, rubrics=some(1) or None) for i in range(count)]
    actual = [_invocation(i, rubrics=some(1) or None) for i in range(count)]
    num_samples = rng.randint(1, 4)
    scripts = [[_adk_answer(rng, pool) for _ in range(num_samples)] for _ in range(count)]
    return _Generated(
        criterion, case, actual, expected, scripts, num_samples, rng.choice([0.0, 0.5, 1.0])
    )


def _adk_copy_rubrics(
    actual: list[AdkInvocation], case: list[dict[str, Any]] | None, expected: list[AdkInvocation]
) -> None:
    """What ADK's LocalEvalService does before scoring (its module needs ADK's heavy deps)."""
    for index, invocation in enumerate(actual):
        extra = [AdkRubric.model_validate(r) for r in case or []]
        extra += expected[index].rubrics or []
        invocation.rubrics = list(invocation.rubrics or [])
        seen = {r.rubric_id for r in invocation.rubrics}
        for rubric in extra:
            if rubric.rubric_id in seen:
                raise ValueError(rubric.rubric_id)
            invocation.rubrics.append(rubric)
            seen.add(rubric.rubric_id)


def _with_per_invocation_rubrics(evaluator_type: type[Any]) -> type[Any]:
    """ADK's evaluator with one bug fixed: ADK 2.13 formats every invocation's prompt (each
    replacing the evaluator's one "effective rubrics" list) before any sample is parsed, so all
    invocations' answers are matched against the LAST invocation's rubrics. assay matches each
    invocation's answers against its own rubrics. With ADK's default parallelism_limit of 1 only
    one sample runs at a time, so resetting the list per sample is safe here."""

    class Fixed(evaluator_type):  # type: ignore[misc, valid-type]
        async def _evaluate_single_sample(
            self, llm_request: Any, actual: AdkInvocation, expected: AdkInvocation | None
        ) -> Any:
            self.create_effective_rubrics_list(actual.rubrics)
            return await super()._evaluate_single_sample(llm_request, actual, expected)

    return Fixed


def _adk_result(generated: _Generated, evaluator_type: type[Any]) -> Any:
    criterion = AdkCriterion(
        threshold=generated.threshold,
        rubrics=[AdkRubric.model_validate(r) for r in generated.criterion],
        judge_model_options=AdkJudgeModelOptions(num_samples=generated.num_samples),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = evaluator_type(AdkEvalMetric(metric_name="rubrics", criterion=criterion))
    evaluator._judge_model = _AdkStubJudge(
        {f"<question {i}>": s for i, s in enumerate(generated.scripts)}
    )
    actual = [AdkInvocation.model_validate(a) for a in generated.actual]
    expected = [AdkInvocation.model_validate(e) for e in generated.expected]
    try:
        _adk_copy_rubrics(actual, generated.case, expected)
        # ADK raises while formatting the prompts when an invocation's rubrics clash or are
        # missing; ask its own method first, so no sample coroutine is left un-awaited.
        for invocation in actual:
            evaluator.create_effective_rubrics_list(invocation.rubrics)
    except ValueError:
        return None
    result = asyncio.run(evaluator.evaluate_invocations(actual, expected))
    return (
        (result.overall_score, result.overall_eval_status.value),
        [(s.rubric_id, s.score) for s in result.overall_rubric_scores or []],
        [
            (
                r.score,
                r.eval_status.value,
                None
                if r.rubric_scores is None
                else [(s.rubric_id, s.score, s.rationale) for s in r.rubric_scores],
            )
            for r in result.per_invocation_results
        ],
    )


def _our_result(
    generated: _Generated,
    metric: type[RubricFinalResponseQualityMetric | RubricToolUseQualityMetric],
) -> Any:
    scripts = [
        [LlmCallError(str(a)) if isinstance(a, Exception) else a for a in s]
        for s in generated.scripts
    ]
    result, caller = _run(
        scripts,
        _criterion(generated.criterion, generated.num_samples, generated.threshold),
        metric=metric,
        case_rubrics=generated.case,
        expected=generated.expected,
        actual=generated.actual,
    )
    if result.rubric_scores is None:  # the rubrics could not be put together: nothing asked
        assert result.status is EvalStatus.NOT_EVALUATED and result.reason
        assert caller.requests == []
        return None
    return (
        (result.score, result.status.value),
        [(s.rubric_id, s.score) for s in result.rubric_scores],
        [
            (
                r.score,
                r.status.value,
                None
                if r.rubric_scores is None
                else [(s.rubric_id, s.score, s.rationale) for s in r.rubric_scores],
            )
            for r in result.per_invocation
        ],
    )


@pytest.mark.parametrize(
    ("metric", "evaluator"),
    [
        (RubricFinalResponseQualityMetric, RubricBasedFinalResponseQualityV1Evaluator),
        (RubricToolUseQualityMetric, RubricBasedToolUseV1Evaluator),
    ],
)
def test_scores_equal_adks_evaluator_fed_the_same_judge_answers(
    metric: type[RubricFinalResponseQualityMetric | RubricToolUseQualityMetric],
    evaluator: type[Any],
) -> None:
    rng = random.Random(4_926)
    outcomes = {"scored": 0, "raised": 0}
    for _ in range(80):
        generated = _generate(rng)
        ours = _our_result(generated, metric)
        assert ours == _adk_result(generated, _with_per_invocation_rubrics(evaluator))
        outcomes["raised" if ours is None else "scored"] += 1
    assert outcomes["scored"] > 40 and outcomes["raised"] > 5  # both paths were exercised


def test_each_invocation_is_matched_against_its_own_rubrics_unlike_adk() -> None:
    expected = [
        _invocation(0, rubrics=[_rubric("e0", "First turn only.", FINAL)]),
        _invocation(1),
    ]
    first = _lines(("e0", "First turn only.", "yes"), ("polite", "The answer is polite.", "no"))
    second = _lines(("polite", "The answer is polite.", "yes"))
    generated = _Generated(
        [POLITE], None, [_invocation(0), _invocation(1)], expected, [[first], [second]], 1, 0.5
    )
    ours = _our_result(generated, RubricFinalResponseQualityMetric)
    assert ours[2][0][2] == [
        ("e0", 1.0, "because First turn only."),
        ("polite", 0.0, "because The answer is polite."),
    ]
    fixed = _with_per_invocation_rubrics(RubricBasedFinalResponseQualityV1Evaluator)
    assert ours == _adk_result(generated, fixed)
    # ADK 2.13 matches every invocation's answers against the last invocation's rubrics, so the
    # verdict on "e0" is dropped.
    adk = _adk_result(generated, RubricBasedFinalResponseQualityV1Evaluator)
    assert adk[2][0][2] == [("polite", 0.0, "because The answer is polite.")]
