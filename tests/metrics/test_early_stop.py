"""Early-stopped votes (``--early-stop-votes``): once the majority vote over an invocation's
samples is decided, the remaining samples are not asked, and the verdict is the one every
sample would have given."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from _judge_server import JudgeServer

from assay.config import LlmAsAJudgeCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.base import LlmRequest, LlmResponse
from assay.llm.client import LlmClient
from assay.llm.judge import Judge
from assay.llm.profile import CriterionProfile
from assay.metrics.base import EvalStatus
from assay.metrics.final_response_match import FinalResponseMatchV2Metric
from assay.metrics.judging import Parsed, ask_samples, majority_index, next_wave

_WORD = {1.0: "yes", 0.0: "no", None: "?"}


def _parse(text: str) -> Parsed[float]:
    value = {"yes": 1.0, "no": 0.0}.get(text)
    return Parsed(value, score=value)


@dataclass
class _Recorded:
    """An asker answering each sample index from a recorded list, counting the calls."""

    answers: tuple[float | None, ...]
    early_stop: bool = True
    vote_share: float | None = None
    asked: int = 0

    @property
    def profile(self) -> CriterionProfile | None:
        return None

    @property
    def profile_source(self) -> str:
        return ""

    async def ask(self, request: LlmRequest, *, sample: int, case_id: str) -> LlmResponse:
        self.asked += 1
        await asyncio.sleep(0)
        return LlmResponse(text=_WORD[self.answers[sample]], model="recorded")


def _every_recording(n: int) -> Iterator[tuple[float | None, ...]]:
    return itertools.product((1.0, 0.0, None), repeat=n)


@pytest.mark.parametrize("share", [None, 0.5, 0.7])
def test_early_stop_gives_the_same_verdict_from_the_same_sample_for_every_recording(
    share: float | None,
) -> None:
    request = LlmRequest.user("judge this")
    asked_in_all, recordings = 0, 0
    for answers in _every_recording(5):
        asker = _Recorded(answers, vote_share=share)
        outcomes = asyncio.run(
            ask_samples(asker, request, num_samples=5, case_id="c", parse=_parse)
        )
        taken = [o.value for o in outcomes]
        assert taken == list(answers[: len(taken)])
        full = majority_index(list(answers), share)
        assert majority_index(taken, share) == full
        assert asker.asked == len(taken)
        asked_in_all += asker.asked
        recordings += 1
    assert asked_in_all < 5 * recordings


def test_a_unanimous_judge_is_asked_a_bare_majority_in_one_wave() -> None:
    asker = _Recorded((1.0,) * 5)
    outcomes = asyncio.run(
        ask_samples(asker, LlmRequest.user("q"), num_samples=5, case_id="c", parse=_parse)
    )
    assert [o.note.sample for o in outcomes] == [0, 1, 2]
    assert next_wave([], 5) == 3
    assert next_wave([1.0, 1.0, 0.0], 2) == 1
    assert next_wave([1.0, 1.0, 1.0], 2) == 0


def test_without_early_stop_every_sample_is_asked() -> None:
    asker = _Recorded((1.0,) * 5, early_stop=False)
    outcomes = asyncio.run(
        ask_samples(asker, LlmRequest.user("q"), num_samples=5, case_id="c", parse=_parse)
    )
    assert len(outcomes) == 5 and asker.asked == 5


@dataclass
class _Rubric:
    rubric_id: str
    score: float | None


@dataclass
class _RubricSample:
    scores: list[_Rubric]


def test_rubric_votes_stop_only_when_every_rubric_is_decided() -> None:
    agree = _RubricSample([_Rubric("a", 1.0), _Rubric("b", 0.0)])
    split = _RubricSample([_Rubric("a", 1.0), _Rubric("b", 1.0)])
    assert next_wave([agree, agree, agree], 2) == 0
    assert next_wave([agree, agree, split], 2) == 1
    partial = _RubricSample([_Rubric("a", 1.0)])
    assert next_wave([agree, agree, partial], 2) == 2  # a later sample could add rubric b


def _verdict(label: str) -> str:
    return json.dumps({"reasoning": "r", "is_the_agent_response_valid": label})


def _invocation(text: str) -> Invocation:
    return Invocation.model_validate(
        {
            "invocation_id": text,
            "user_content": {"role": "user", "parts": [{"text": "question"}]},
            "final_response": {"role": "model", "parts": [{"text": text}]},
        }
    )


def test_early_stop_over_http_records_the_samples_taken_in_the_notes() -> None:
    """A real OpenAI-compatible server; one invocation the judge agrees on (3 calls), one it
    splits 2-2 before the fifth sample decides (5 calls)."""
    split = iter(["valid", "invalid", "invalid", "valid", "valid"])

    def reply(body: dict[str, object]) -> str:
        text = json.dumps(body["messages"])
        return _verdict("valid" if "steady answer" in text else next(split))

    criterion = LlmAsAJudgeCriterion.model_validate(
        {"threshold": 0.5, "judge_model_options": {"num_samples": 5, "parallelism_limit": 1}}
    )

    async def run(server: JudgeServer) -> list[int]:
        backend = OpenAICompatBackend("openai:judge", base_url=server.base_url)
        async with LlmClient(backend, concurrency=4) as client:
            judge = Judge(client, "final_response_match_v2", early_stop=True)
            metric = FinalResponseMatchV2Metric(criterion, judge)
            actual = [_invocation("steady answer"), _invocation("wavering answer")]
            expected = [_invocation("reference"), _invocation("reference")]
            case = EvalCase(eval_id="c", conversation=expected)
            result = await metric.evaluate(actual, expected, case)
        assert result.status is EvalStatus.PASSED
        notes = result.notes
        assert notes is not None
        assert notes.usage.calls == server.count()
        return [len(inv.samples) for inv in notes.per_invocation]

    with JudgeServer(reply=reply) as server:
        taken = asyncio.run(run(server))
        assert taken == [3, 5]
        assert server.count() == 8
