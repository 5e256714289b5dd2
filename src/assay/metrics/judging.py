"""The steps every LLM-judged metric shares: ask the judge ``num_samples`` times, keep each
sample's verdict (or why there is none), and vote.

Where the judge's profile decides an answer otherwise (:meth:`~assay.llm.profile.CriterionProfile.
align`), the metric parses and counts the decided answer, and the sample's notes keep the judge's
own answer beside the decision and its rule (:class:`~assay.metrics.notes.Alignment`).

Samples of one invocation run concurrently (the client's ``--judge-concurrency`` bounds the whole
run; a criterion's ``parallelism_limit``, when the config sets it, bounds one invocation). A call
that finally fails is recorded with its error, and, as in ADK 2.13, makes that invocation
NOT_EVALUATED. A text that cannot be parsed is a sample without a score, with the raw text kept; it
never becomes a score.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from assay.config import LlmAsAJudgeCriterion
from assay.llm.base import (
    Choice,
    LlmError,
    LlmRequest,
    LlmResponse,
    TokenUsage,
    generation_settings,
)
from assay.llm.budget import CostCapReached
from assay.llm.profile import CriterionProfile
from assay.metrics.notes import AlignedChoice, Alignment, JudgeSample

T = TypeVar("T")


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """What a parser made of one judge text: a value, or the reason it found none.

    ``score`` and ``verdict`` (optional) are copied onto the sample's :class:`JudgeSample`, for
    reports, and so is ``reason``: a parser gives one when it has no value, or a value but no
    score (rubric verdicts that matched rubrics but said neither yes nor no).
    """

    value: T | None
    reason: str | None = None
    score: float | None = None
    verdict: str | None = None


@dataclass
class SampleOutcome(Generic[T]):
    """One sample: the parsed value (None if the call failed or the text did not parse) and its
    record for the notes."""

    value: T | None
    note: JudgeSample
    usage: TokenUsage
    stopped: str | None = None
    """Why the call was never started (the run's ``--max-cost`` was reached): the invocation's
    NOT_EVALUATED reason as it is, without "judge call failed"."""


def sample_limit(criterion: LlmAsAJudgeCriterion) -> int | None:
    """The per-invocation concurrency cap: ``parallelism_limit`` when the config sets it."""
    options = criterion.judge_model_options
    if "judge_model_options" in criterion.model_fields_set and (
        "parallelism_limit" in options.model_fields_set
    ):
        return options.parallelism_limit
    return None


class Asker(Protocol):
    """What asks a judge for one sample: a :class:`~assay.llm.judge.Judge`, or a metric's way of
    asking it (one rubric per question, say). ``profile`` is the rule that decides its answers
    (None: the judge's own answer counts) and ``profile_source`` where the rule came from."""

    @property
    def profile(self) -> CriterionProfile | None:
        """The judge profile's rule for this metric, if one applies."""
        ...

    @property
    def profile_source(self) -> str:
        """Where :attr:`profile` came from (a file, or the bundled calibration)."""
        ...

    async def ask(self, request: LlmRequest, *, sample: int, case_id: str) -> LlmResponse:
        """One sample's answer to ``request``."""
        ...


async def ask_samples(
    judge: Asker,
    request: LlmRequest,
    *,
    num_samples: int,
    case_id: str,
    parse: Callable[[str], Parsed[T]],
    limit: int | None = None,
    semaphore: asyncio.Semaphore | None = None,
    early_stop: bool | None = None,
) -> list[SampleOutcome[T]]:
    """Ask ``num_samples`` times concurrently; outcomes come back in sample order.

    ``limit`` caps this invocation's concurrent calls; a ``semaphore`` shared by the invocations
    of a case caps them all together (ADK's ``parallelism_limit`` covers a whole case).

    With ``early_stop`` (None: the judge's own setting, ``--early-stop-votes``), samples are
    asked in waves, each as small as could decide the vote (:func:`next_wave`: 3 of 5 first),
    its calls concurrent; asking stops once the majority vote is decided (the samples left
    cannot change the verdict, nor which sample gives it) or a call failed (the invocation is
    then NOT_EVALUATED whatever the rest say). Only the samples asked come back, so the notes
    record how many were taken. Sample indexes are the same as without it (0, 1, ...), so the
    response cache serves either way.
    """
    if semaphore is None and limit:
        semaphore = asyncio.Semaphore(limit)

    async def one(index: int) -> SampleOutcome[T]:
        if semaphore is None:
            return await _one_sample(judge, request, index, case_id, parse)
        async with semaphore:
            return await _one_sample(judge, request, index, case_id, parse)

    stop = _judge_setting(judge, "early_stop") if early_stop is None else early_stop
    if not stop or num_samples <= 1:
        return list(await asyncio.gather(*(one(i) for i in range(num_samples))))
    share = _judge_setting(judge, "vote_share")
    outcomes: list[SampleOutcome[T]] = []
    while len(outcomes) < num_samples:
        if any(o.note.error is not None for o in outcomes):
            break
        wave = next_wave([o.value for o in outcomes], num_samples - len(outcomes), share)
        if wave == 0:
            break
        start = len(outcomes)
        outcomes += await asyncio.gather(*(one(i) for i in range(start, start + wave)))
    return outcomes


def _judge_setting(judge: Asker, name: str) -> Any:
    """A :class:`~assay.llm.judge.Judge` setting of ``judge``, or of the judge an asker wraps
    (a rubric metric's per-rubric asker holds it as ``judge``); None without one."""
    if hasattr(judge, name):
        return getattr(judge, name)
    return getattr(getattr(judge, "judge", None), name, None)


def next_wave(values: Sequence[object], remaining: int, share: float | None = None) -> int:
    """How many more samples to ask at once: 0 when the vote over ``values`` (the samples'
    parsed values so far) is decided whatever the ``remaining`` samples say, else the fewest
    that could decide it if they all agreed (so a judge that agrees with itself costs one wave
    of a bare majority), and every remaining one when the values are of a kind whose vote this
    cannot follow.

    A value is voted on as :func:`majority_index` does: a number (one verdict) or a rubric
    sample (``scores``, each with a ``rubric_id`` and a ``score``: one vote per rubric). A
    rubric sample counts only while every sample answered the same rubrics, each once (else a
    later sample could add a rubric to the vote)."""
    tallies = _tallies(values)
    if tallies is None:
        return remaining
    waves = [_wave(positive, negative, remaining, share) for positive, negative in tallies]
    return max(waves, default=0)


def _tallies(values: Sequence[object]) -> list[tuple[int, int]] | None:
    """(positive, negative) votes per question so far; None when they cannot be followed."""
    found = [v for v in values if v is not None]
    if not found:
        return [(0, 0)]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in found):
        return [_count(found)]
    ballots: list[dict[str, float | None]] = []
    for value in found:
        scores = getattr(value, "scores", None)
        if not isinstance(scores, list):
            return None
        ids = [getattr(s, "rubric_id", None) for s in scores]
        if not ids or len(set(ids)) != len(ids) or any(not isinstance(i, str) for i in ids):
            return None
        ballots.append(
            dict(zip(map(str, ids), (getattr(s, "score", None) for s in scores), strict=True))
        )
    if any(b.keys() != ballots[0].keys() for b in ballots):
        return None
    return [_count([b[key] for b in ballots]) for key in ballots[0]]


def _count(scores: Sequence[object]) -> tuple[int, int]:
    positive = sum(1 for s in scores if s == 1.0)
    negative = sum(1 for s in scores if s is not None and s != 1.0)
    return positive, negative


def _wave(positive: int, negative: int, remaining: int, share: float | None) -> int:
    """The fewest more samples that could decide one question (0: decided)."""
    for more in range(remaining + 1):
        left = remaining - more
        if _decided(positive + more, negative, left, share) or _decided(
            positive, negative + more, left, share
        ):
            return more
    return remaining


def _decided(positive: int, negative: int, remaining: int, share: float | None) -> bool:
    """Whether :func:`majority_index` gives the same verdict, from a sample already taken,
    whatever ``remaining`` more samples say (each yes, no or unparsed)."""
    if share is None:
        return positive > negative + remaining or (
            negative > 0 and positive + remaining <= negative
        )
    total = positive + negative + remaining
    if total == 0:
        return False
    yes = positive > 0 and positive / total >= share
    no = negative > 0 and (positive + remaining) / total < share
    return yes or no


async def _one_sample(
    judge: Asker,
    request: LlmRequest,
    index: int,
    case_id: str,
    parse: Callable[[str], Parsed[T]],
) -> SampleOutcome[T]:
    try:
        response = await judge.ask(request, sample=index, case_id=case_id)
    except CostCapReached as exc:
        note = JudgeSample(sample=index, error=str(exc))
        return SampleOutcome(None, note, TokenUsage(), stopped=str(exc))
    except LlmError as exc:
        return SampleOutcome(None, JudgeSample(sample=index, error=str(exc)), TokenUsage())
    own = parse(response.text)
    profile = judge.profile
    decided = profile.align(response) if profile is not None else None
    counted, aligned = own, None
    if profile is not None and decided is not None and decided.changed:
        counted = parse(decided.response.text)
        aligned = Alignment(
            score=counted.score,
            verdict=counted.verdict,
            choices=[
                AlignedChoice(
                    path=c.path, judge_said=c.chosen, probability=c.probability(c.chosen), decided=d
                )
                for c, d in decided.changed
            ],
            rule=profile.rule_words(judge.profile_source),
        )
    note = JudgeSample(
        sample=index,
        score=own.score,
        verdict=own.verdict,
        probability=_own_probability(response.choices, profile),
        text=response.text,
        reason=counted.reason,
        cached=response.cached,
        choices=list(response.choices) or None,
        aligned=aligned,
    )
    return SampleOutcome(counted.value, note, response.usage)


def _own_probability(choices: Sequence[Choice], profile: CriterionProfile | None) -> float | None:
    """The judge's probability of its own verdict: of the one choice of the profile's field (any
    field without a profile) the answer has; None with none, or with several (each rubric's is
    among ``choices``)."""
    field = profile.field if profile is not None else None
    found = [c for c in choices if field is None or c.path.rsplit(".", 1)[-1] == field]
    return found[0].probability(found[0].chosen) if len(found) == 1 else None


async def gather_in_order(calls: Sequence[Awaitable[T]]) -> list[T]:
    """Run awaitables concurrently; results in input order."""
    return list(await asyncio.gather(*calls))


def call_failure(outcomes: Sequence[SampleOutcome[T]]) -> str | None:
    """The first failed call's error, if any sample's call failed (ADK: the invocation is then
    NOT_EVALUATED)."""
    for outcome in outcomes:
        if outcome.stopped is not None:
            return outcome.stopped
        if outcome.note.error is not None:
            return f"judge call failed (sample {outcome.note.sample}): {outcome.note.error}"
    return None


def majority_index(scores: Sequence[float | None], share: float | None = None) -> int:
    """ADK's vote over sample scores: the first 1.0 sample if 1.0s outnumber 0.0s, else the first
    0.0 sample (a tie counts as 0.0); with neither, the first sample. Scores other than 1.0 count
    as negative; None is ignored. With ``share`` (a votes judge profile's threshold), the 1.0s win
    when they are at least that share of the counted samples."""
    positive = [i for i, s in enumerate(scores) if s is not None and s == 1.0]
    negative = [i for i, s in enumerate(scores) if s is not None and s != 1.0]
    if not positive and not negative:
        return 0
    if share is not None:
        wins = len(positive) / (len(positive) + len(negative)) >= share
        return positive[0] if wins and positive else (negative or positive)[0]
    if len(positive) > len(negative):
        return positive[0]
    return negative[0]


def total_usage(outcomes: Sequence[SampleOutcome[T]]) -> TokenUsage:
    """The usage of a list of samples."""
    out = TokenUsage()
    for outcome in outcomes:
        out = out + outcome.usage
    return out


def judge_request(
    criterion: LlmAsAJudgeCriterion,
    *,
    system: str,
    user: str,
    schema: dict[str, Any] | None = None,
    schema_name: str = "verdict",
) -> LlmRequest:
    """The request for one invocation: static instructions as the system message (first, so a
    prefix cache reuses them), the invocation's inputs as the user message.

    The criterion's ``judge_model_config`` sets ``temperature`` and ``max_output_tokens`` (either
    spelling); its other entries go to the backend in ``params``. Without it the temperature is
    left to the backend.
    """
    return LlmRequest.user(
        user,
        system=system,
        response_schema=schema,
        schema_name=schema_name,
        **generation_settings(criterion.judge_model_options.judge_model_config),
    )


_DECODER = json.JSONDecoder()


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``text``, outermost first, in order: the whole text, one inside a
    markdown fence, or one with prose around it."""
    start = text.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            yield value
        start = text.find("{", end)
