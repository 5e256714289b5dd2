"""The vote every judged metric shares (ADK's majority, or a votes judge profile's share), and
the judge's own answer kept beside a profile's decision."""

from __future__ import annotations

import asyncio
import json

import pytest

from assay.llm.base import Choice, LlmRequest, LlmResponse
from assay.llm.profile import CriterionProfile, bundled_source
from assay.metrics.final_response_match import parse_verdict
from assay.metrics.judging import SampleOutcome, ask_samples, majority_index
from assay.metrics.notes import JudgeSample


def test_adk_majority_takes_the_first_of_the_larger_side_and_ties_go_negative() -> None:
    assert majority_index([1.0, 0.0, 1.0]) == 0
    assert majority_index([0.0, 1.0, 1.0]) == 1
    assert majority_index([1.0, 0.0]) == 1
    assert majority_index([None, None]) == 0


def test_a_profile_share_lets_a_minority_of_positive_votes_win() -> None:
    scores = [0.0, 1.0, 0.0, 0.0, 1.0]  # two positive of five
    assert scores[majority_index(scores)] == 0.0
    assert scores[majority_index(scores, share=0.4)] == 1.0
    assert scores[majority_index(scores, share=0.5)] == 0.0
    negatives = [None, 0.0, 0.0]  # no positive vote at all: the first negative, whatever share
    assert majority_index(negatives, share=0.0) == 1


class _Answers:
    """An asker that gives one fixed answer (the judge's own) and has a profile's rule."""

    def __init__(self, answer: LlmResponse, profile: CriterionProfile | None) -> None:
        self.answer = answer
        self.profile = profile
        self.profile_source = bundled_source()

    async def ask(self, request: LlmRequest, *, sample: int, case_id: str) -> LlmResponse:
        return self.answer


def _valid(probability: float) -> LlmResponse:
    verdict = "valid" if probability >= 0.5 else "invalid"
    text = json.dumps({"reasoning": "same facts", "is_the_agent_response_valid": verdict})
    choice = Choice(
        path="is_the_agent_response_valid",
        start=text.index(f'"{verdict}"'),
        chosen=verdict,
        probabilities={"valid": probability, "invalid": 1 - probability},
    )
    return LlmResponse(text=text, model="m", choices=(choice,))


RULE = CriterionProfile(
    decision="probability", field="is_the_agent_response_valid", positive=["valid"], threshold=0.84
)


def _sample(answer: LlmResponse, profile: CriterionProfile | None) -> SampleOutcome[float]:
    (outcome,) = asyncio.run(
        ask_samples(
            _Answers(answer, profile),
            LlmRequest.user("judge it"),
            num_samples=1,
            case_id="c",
            parse=parse_verdict,
        )
    )
    return outcome


def test_a_verdict_the_profile_decides_otherwise_is_counted_and_the_judges_own_is_kept() -> None:
    answer = _valid(0.80)  # the judge says valid, the rule asks P(valid) >= 0.84

    outcome = _sample(answer, RULE)

    assert outcome.value == 0.0  # the metric counts the rule's decision
    note = outcome.note
    assert note.text == answer.text  # as the judge wrote it
    assert (note.verdict, note.score, note.probability) == ("valid", 1.0, pytest.approx(0.8))
    assert note.aligned is not None
    assert (note.aligned.verdict, note.aligned.score) == ("invalid", 0.0)
    assert (note.counted_verdict, note.counted_score) == ("invalid", 0.0)
    assert note.aligned.words() == (
        'judge said "valid" (P(valid) 0.80); aligned to "invalid": the embedded judge\'s '
        "calibration asks P(valid) >= 0.84 on this criterion"
    )
    assert [c.chosen for c in note.choices or []] == ["valid"]  # the judge's own choice


def test_a_verdict_the_profile_agrees_with_or_without_a_profile_is_the_judges_alone() -> None:
    for answer, profile in ((_valid(0.9), RULE), (_valid(0.8), None)):
        outcome = _sample(answer, profile)
        assert outcome.value == 1.0
        assert outcome.note.aligned is None
        assert outcome.note.counted_score == outcome.note.score == 1.0
        assert outcome.note.probability == pytest.approx(answer.choices[0].probabilities["valid"])


def test_a_sample_written_before_alignments_were_recorded_still_loads() -> None:
    old = {"sample": 0, "score": 0.0, "verdict": "invalid", "text": "{}", "cached": True}
    note = JudgeSample.model_validate(old)
    assert note.aligned is None and note.probability is None
    assert (note.counted_score, note.counted_verdict) == (0.0, "invalid")
