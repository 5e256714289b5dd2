"""``final_response_match_v2``: an LLM judge decides whether each final response is valid
against the expected one; the case's score is the fraction of invocations judged valid.

As in google-adk 2.13.0:

* the judge sees the user prompt of the **expected** invocation, the actual final response and
  the expected one (each with the intermediate responses' text first when the criterion's
  ``include_intermediate_responses_in_final`` is set);
* each of ``num_samples`` samples (asked concurrently) scores 1.0 (valid), 0.0 (invalid) or
  nothing (no verdict found); the invocation takes the majority, a tie counting as invalid, and
  with no verdict at all it is NOT_EVALUATED; a sample whose call failed makes the invocation
  NOT_EVALUATED;
* the case's score is valid / evaluated over the evaluated invocations.

The judge is asked for ``{"reasoning": ..., "is_the_agent_response_valid": "valid" | "invalid"}``.
:func:`parse_verdict` reads that JSON and ADK's free-text form (the field followed by a label,
or the ``is_the_agent_response_invalid`` field), with ADK's labels. Departures from ADK's parser:
labels are read case-insensitively (ADK finds no verdict in ``"Valid"``), ``partially valid``
with a space counts as invalid (ADK's pattern cannot reach it), and when a well-formed JSON
object holds the field its value is what counts (ADK takes the first match anywhere in the text).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from assay.config import LlmAsAJudgeCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.llm.judge import Judge
from assay.metrics import judge_inputs
from assay.metrics.base import (
    EvalStatus,
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    not_evaluated,
    paired_or_reason,
    status_for,
)
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import (
    Parsed,
    SampleOutcome,
    ask_samples,
    call_failure,
    gather_in_order,
    json_objects,
    judge_request,
    majority_index,
    sample_limit,
    total_usage,
)
from assay.metrics.notes import InvocationNotes, MetricNotes
from assay.metrics.prompts import final_response_match as v2_prompt

INVALID_FIELD = "is_the_agent_response_invalid"
_INVALID_LABELS = frozenset(
    {"invalid", "almost", "false", "partially_valid", "partially valid", "partially"}
)
_VALID_LABELS = frozenset({"valid", "true"})

# ADK's pattern for a label field: the key, optional brackets, optional quotes, a token without
# quotes, brackets, carets or whitespace, and a comma, newline or closing brace after it. Ours
# also takes "partially valid" (with its space) as one token.
_FIELD_PATTERN = (
    r'"{key}":\s*\[*[\n\s]*"*((?i:partially[ _]valid)|[^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}}]'
)
_VALID_PATTERN = re.compile(_FIELD_PATTERN.format(key=v2_prompt.VALID_FIELD))
_INVALID_PATTERN = re.compile(_FIELD_PATTERN.format(key=INVALID_FIELD))

NO_VERDICT = "no verdict found in the judge's answer"


def _clean(label: str) -> str:
    return label.strip().rstrip(",}").lower()


def _valid_field_score(label: str) -> float | None:
    label = _clean(label)
    if label in _INVALID_LABELS:
        return 0.0
    if label in _VALID_LABELS:
        return 1.0
    return None


def _invalid_field_score(label: str) -> float:
    # As ADK: only "true" or "invalid" under the inverted key mean invalid; anything else valid.
    return 0.0 if _clean(label) in {"true", "invalid"} else 1.0


def _json_label(value: Any) -> str | None:
    """A JSON field's value as a label, when it is a string, a boolean or a one-item list."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else None


def _field_label(text: str, key: str, pattern: re.Pattern[str]) -> str | None:
    for obj in json_objects(text):
        if key in obj:
            label = _json_label(obj[key])
            if label is not None:
                return label
    match = pattern.search(text)
    return match.group(1) if match else None


def parse_verdict(text: str) -> Parsed[float]:
    """1.0 (valid) or 0.0 (invalid) from a judge's answer, or no value with the reason."""
    label = _field_label(text, v2_prompt.VALID_FIELD, _VALID_PATTERN)
    if label is not None:
        score = _valid_field_score(label)
        if score is None:
            return Parsed(None, f"unknown verdict label {label.strip()[:40]!r}")
    else:
        inverted = _field_label(text, INVALID_FIELD, _INVALID_PATTERN)
        if inverted is None:
            return Parsed(None, NO_VERDICT)
        score = _invalid_field_score(inverted)
    return Parsed(score, score=score, verdict="valid" if score == 1.0 else "invalid")


def _vote(
    outcomes: Sequence[SampleOutcome[float]], share: float | None = None
) -> tuple[float | None, str | None]:
    """The invocation's score by majority vote (or a votes profile's ``share``), or None and
    the reason."""
    failure = call_failure(outcomes)
    if failure is not None:
        return None, failure
    scores = [outcome.value for outcome in outcomes]
    score = scores[majority_index(scores, share)] if scores else None
    if score is None:
        return None, f"no verdict found in any of the {len(outcomes)} judge answers"
    return score, None


def _votes(outcomes: Sequence[SampleOutcome[float]]) -> dict[str, int]:
    values = [outcome.value for outcome in outcomes]
    return {
        "valid": sum(1 for v in values if v == 1.0),
        "invalid": sum(1 for v in values if v is not None and v != 1.0),
        "none": sum(1 for v in values if v is None),
    }


class FinalResponseMatchV2Metric:
    """An LLM judge says whether each final response is valid against the expected one."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="final_response_match_v2",
        description=(
            "Fraction of invocations whose final response an LLM judge finds valid against "
            "the expected one."
        ),
        needs_expected=True,
        needs_judge=True,
    )

    def __init__(self, criterion: LlmAsAJudgeCriterion, judge: Judge) -> None:
        self.criterion = criterion
        self.judge = judge

    def prompt(self, actual: Invocation, expected: Invocation) -> str:
        """The user message for one invocation (the system message is ``v2_prompt.SYSTEM``)."""
        include = self.criterion.include_intermediate_responses_in_final
        return v2_prompt.render(
            prompt=judge_inputs.user_text(expected),
            response=judge_inputs.final_text(actual, include_intermediate=include),
            reference=judge_inputs.final_text(expected, include_intermediate=include),
        )

    async def _judge_one(
        self,
        actual: Invocation,
        expected: Invocation,
        case_id: str,
        semaphore: asyncio.Semaphore | None,
    ) -> tuple[PerInvocationResult, InvocationNotes, list[SampleOutcome[float]]]:
        request = judge_request(
            self.criterion,
            system=v2_prompt.SYSTEM,
            user=self.prompt(actual, expected),
            schema=v2_prompt.SCHEMA,
            schema_name=v2_prompt.SCHEMA_NAME,
        )
        outcomes = await ask_samples(
            self.judge,
            request,
            num_samples=self.criterion.judge_model_options.num_samples,
            case_id=case_id,
            parse=parse_verdict,
            semaphore=semaphore,
        )
        score, reason = _vote(outcomes, self.judge.vote_share)
        status = status_for(score, self.criterion.threshold)
        notes = InvocationNotes(
            invocation_id=actual.invocation_id,
            samples=[outcome.note for outcome in outcomes],
            reason=reason,
            details={"votes": _votes(outcomes)},
        )
        return PerInvocationResult(actual, expected, score, status), notes, outcomes

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Judge every invocation (concurrently) and score the fraction judged valid."""
        reason = paired_or_reason(actual, expected)
        if reason is not None or expected is None:
            return not_evaluated(self.info.name, self.criterion, actual, reason or "", expected)
        limit = sample_limit(self.criterion)
        semaphore = asyncio.Semaphore(limit) if limit else None
        judged = await gather_in_order(
            [
                self._judge_one(act, exp, case.eval_id, semaphore)
                for act, exp in zip(actual, expected, strict=True)
            ]
        )
        per_invocation = [result for result, _, _ in judged]
        notes = MetricNotes(
            judge_model=self.judge.model,
            judge_source=self.judge.source,
            usage=total_usage([o for _, _, outcomes in judged for o in outcomes]),
            per_invocation=[note for _, note, _ in judged],
        )
        return self._overall(per_invocation, notes)

    def _overall(
        self, per_invocation: list[PerInvocationResult], notes: MetricNotes
    ) -> MetricResult:
        valid = 0.0
        evaluated = 0
        for result in per_invocation:
            if result.score is None or result.status is EvalStatus.NOT_EVALUATED:
                continue
            evaluated += 1
            valid += result.score
        if evaluated == 0:
            first = next((n.reason for n in notes.per_invocation if n.reason), None)
            return MetricResult(
                metric_name=self.info.name,
                criterion=self.criterion,
                per_invocation=per_invocation,
                reason=(
                    f"no invocation was evaluated: {first}"
                    if first
                    else "no invocation was evaluated"
                ),
                notes=notes,
            )
        score = valid / evaluated
        return MetricResult(
            metric_name=self.info.name,
            criterion=self.criterion,
            score=score,
            status=status_for(score, self.criterion.threshold),
            per_invocation=per_invocation,
            notes=notes,
        )


DECLARATION = MetricDeclaration(
    FinalResponseMatchV2Metric,
    criterion=LlmAsAJudgeCriterion,
    applies_to="conversation",
    prompts="final_response_match",
    labelling=Labelling(
        labels=("valid", "invalid"),
        field="is_the_agent_response_valid",
        positive=("valid",),
        exemplars=True,
    ),
)
"""What ``final_response_match_v2`` is (:class:`~assay.metrics.declaration.MetricDeclaration`)."""
