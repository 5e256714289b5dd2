"""``response_evaluation_score``: how coherent is each final response? A rating from 1 to 5,
averaged over the invocations.

ADK 2.13 sends each invocation to Vertex AI's prebuilt COHERENCE metric, which needs a Google
Cloud project. assay asks the configured judge instead: one call per invocation (the criterion
has no judge options, so one sample), given the user's prompt and the final response, rating
the response 1 (incoherent) to 5 (completely coherent) after the criteria and rating rubric
Vertex AI publishes for the metric (:mod:`assay.metrics.prompts.coherence`). The case scores the
mean of the invocations' ratings; each invocation, and the case, passes at
``score >= threshold``.

As in ADK, the metric needs the expected invocations of a static conversation, paired one to one
with the actual ones (ADK raises without them; assay returns NOT_EVALUATED with the reason),
although the rating reads only the prompt and the response. An invocation without final response
text is NOT_EVALUATED, with that reason. Each scored invocation keeps the judge's explanation as
its one rubric score, named ``explanation``, as ADK keeps Vertex's; the notes keep the rating and
the judge's answer.

Vertex AI itself is opt-in (``ASSAY_VERTEX_METRICS``, see :mod:`assay.metrics.vertex`): each
invocation is then one row (``prompt``, ``reference``: the expected final response,
``response``) sent to ``PrebuiltMetric.COHERENCE`` in its own call, an empty response too, and
its score is the row's mean score.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.evalset.case import EvalCase
from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import RubricScore
from assay.llm.base import LlmRequest, TokenUsage
from assay.metrics import vertex as vertex_ai
from assay.metrics.base import (
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    mean_result,
    not_evaluated,
    paired_or_reason,
    status_for,
)
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import Parsed, ask_samples, gather_in_order, json_objects
from assay.metrics.notes import InvocationNotes, JudgeSample, MetricNotes
from assay.metrics.prompts import coherence as prompts

NAME = "response_evaluation_score"

RowScorer = Callable[[Sequence[vertex_ai.Row]], Sequence[vertex_ai.VertexScore]]
"""Scores rows with Vertex AI, one call per row (blocking; run in a worker thread)."""

NO_RATING = "no 1-5 rating found in the judge's answer"

# --------------------------------------------------------------------------- the judge's rating


@dataclass(frozen=True)
class Rating:
    """The judge's rating (1-5) and its explanation."""

    value: int
    explanation: str | None = None


_LEADING = re.compile(r"\s*([1-5])(?:\.0*)?(?!\.?\d)")
_RATING_FIELD = re.compile(
    r"""["']?(?:rating|score)["']?\s*[:=]\s*["']?([1-5])(?!\.?\d)""", re.IGNORECASE
)
_BARE = re.compile(r"\W*([1-5])\W*")


def _value(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return int(raw) if raw in (1, 2, 3, 4, 5) else None
    if isinstance(raw, str):
        match = _LEADING.match(raw)
        return int(match.group(1)) if match else None
    return None


def _rated(value: int, explanation: str | None) -> Parsed[Rating]:
    return Parsed(
        Rating(value, explanation),
        score=float(value),
        verdict=f"{value} ({prompts.RATINGS[value]})",
    )


def parse_rating(text: str) -> Parsed[Rating]:
    """The judge's rating: our JSON (``{"explanation": ..., "rating": "4"}``, a number too, or
    ``score`` for ``rating``; fenced or with text around it), a ``rating: 4`` line, or a bare
    digit. Only the whole numbers 1 to 5 count; a JSON rating that is none of them is no rating."""
    for obj in json_objects(text):
        if "rating" in obj or "score" in obj:
            value = _value(obj.get("rating", obj.get("score")))
            if value is None:
                return Parsed(None, NO_RATING)
            said = next(
                (
                    obj[k].strip()
                    for k in ("explanation", "reasoning", "rationale")
                    if isinstance(obj.get(k), str) and obj[k].strip()
                ),
                None,
            )
            return _rated(value, said)
    match = _RATING_FIELD.search(text) or _BARE.fullmatch(text)
    if match:
        return _rated(int(match.group(1)), None)
    return Parsed(None, NO_RATING)


# --------------------------------------------------------------------------- the metric


@dataclass
class _Outcome:
    result: PerInvocationResult
    notes: InvocationNotes
    usage: TokenUsage = field(default_factory=TokenUsage)


def _explained(explanation: str | None) -> list[RubricScore] | None:
    if not explanation:
        return None
    return [RubricScore(rubric_id=vertex_ai.EXPLANATION_RUBRIC_ID, rationale=explanation)]


class CoherenceMetric(vertex_ai.VertexBacked[RowScorer]):
    """Rates the coherence of each final response from 1 to 5, averaged."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name=NAME,
        description=(
            "Coherence of each final response as an LLM judge (or Vertex AI) rates it, "
            "1 (incoherent) to 5 (completely coherent), averaged."
        ),
        min_value=1.0,
        max_value=5.0,
        needs_expected=True,
        needs_judge=True,
        source="vertex",
    )

    def vertex_scorer(self) -> RowScorer:
        """Vertex AI's prebuilt COHERENCE metric, one call per row."""
        return self._vertex_call

    def _vertex_call(self, rows: Sequence[vertex_ai.Row]) -> list[vertex_ai.VertexScore]:
        return vertex_ai.score_rows(rows, self._env, lambda sdk: sdk.types.PrebuiltMetric.COHERENCE)

    def request(self, invocation: Invocation) -> LlmRequest:
        """The judge request for one invocation: the user prompt and the final response."""
        return LlmRequest.user(
            prompts.judge_input(
                content_text(invocation.user_content), content_text(invocation.final_response)
            ),
            system=prompts.INSTRUCTIONS,
            response_schema=prompts.SCHEMA,
            schema_name=prompts.SCHEMA_NAME,
        )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Rate every invocation's final response and average."""
        unpaired = paired_or_reason(actual, expected)
        if unpaired is not None or expected is None:
            reason = unpaired or "needs expected invocations"
            return not_evaluated(NAME, self.criterion, actual, reason, expected)
        pairs = list(zip(actual, expected, strict=True))
        if self._unavailable is not None:
            outcomes = [_skipped(inv, exp, self._unavailable) for inv, exp in pairs]
        elif self.uses_vertex:
            outcomes = await self._by_vertex(pairs)
        else:
            outcomes = await gather_in_order([self._judged(inv, exp, case) for inv, exp in pairs])
        return self._result(outcomes)

    async def _judged(
        self, invocation: Invocation, expected: Invocation, case: EvalCase
    ) -> _Outcome:
        if not content_text(invocation.final_response):
            return _skipped(invocation, expected, "no final response text to judge")
        (sample,) = await ask_samples(
            self.judge,
            self.request(invocation),
            num_samples=1,
            case_id=case.eval_id,
            parse=parse_rating,
        )
        rating = sample.value
        reason = None
        if sample.note.error is not None:
            reason = f"judge call failed: {sample.note.error}"
        elif rating is None:
            reason = sample.note.reason or NO_RATING
        score = float(rating.value) if rating is not None and reason is None else None
        details: dict[str, Any] | None = None
        if rating is not None:
            details = {
                "rating": rating.value,
                "label": prompts.RATINGS[rating.value],
                "explanation": rating.explanation,
            }
        return _Outcome(
            PerInvocationResult(
                invocation,
                expected,
                score,
                status_for(score, self.criterion.threshold),
                rubric_scores=_explained(rating.explanation) if rating is not None else None,
            ),
            InvocationNotes(
                invocation_id=invocation.invocation_id,
                samples=[sample.note],
                reason=reason,
                details=details,
            ),
            sample.usage,
        )

    async def _by_vertex(self, pairs: Sequence[tuple[Invocation, Invocation]]) -> list[_Outcome]:
        # As ADK's facade: every invocation is a row, even one with an empty response.
        rows = [
            vertex_ai.Row(
                prompt=content_text(inv.user_content),
                reference=content_text(exp.final_response),
                response=content_text(inv.final_response),
            )
            for inv, exp in pairs
        ]
        scored = await self._score_rows(rows)
        outcomes = []
        for (inv, exp), row in zip(pairs, scored, strict=True):
            note = JudgeSample(sample=0, score=row.score, text=row.explanation)
            details = {"explanation": row.explanation} if row.explanation else None
            outcomes.append(
                _Outcome(
                    PerInvocationResult(
                        inv,
                        exp,
                        row.score,
                        status_for(row.score, self.criterion.threshold),
                        rubric_scores=row.rubric_scores,
                    ),
                    InvocationNotes(
                        invocation_id=inv.invocation_id,
                        samples=[note],
                        reason=row.reason if row.score is None else None,
                        details=details,
                    ),
                )
            )
        return outcomes

    async def _score_rows(self, rows: Sequence[vertex_ai.Row]) -> list[vertex_ai.VertexScore]:
        try:
            scored = list(await asyncio.to_thread(self._vertex, rows))
        except Exception as exc:  # an SDK or credentials failure: every row is unscored
            reason = f"Vertex AI failed: {vertex_ai.describe(exc)}"
            return [vertex_ai.VertexScore(None, reason=reason) for _ in rows]
        if len(scored) != len(rows):
            reason = f"Vertex AI returned {len(scored)} scores for {len(rows)} rows"
            return [vertex_ai.VertexScore(None, reason=reason) for _ in rows]
        return scored

    def _result(self, outcomes: Sequence[_Outcome]) -> MetricResult:
        usage = TokenUsage()
        for outcome in outcomes:
            usage = usage + outcome.usage
        vertex = self.uses_vertex
        result = mean_result(NAME, self.criterion, [outcome.result for outcome in outcomes])
        result.notes = MetricNotes(
            judge_model=vertex_ai.model_name(NAME) if vertex else self.judge.model,
            judge_source=self._choice.variable if vertex else self.judge.source,
            usage=usage,
            per_invocation=[outcome.notes for outcome in outcomes],
        )
        if result.score is None:
            result.reason = self._unavailable or _first_reason(outcomes)
        return result


def _skipped(invocation: Invocation, expected: Invocation, reason: str) -> _Outcome:
    return _Outcome(
        PerInvocationResult(invocation, expected),
        InvocationNotes(invocation_id=invocation.invocation_id, reason=reason),
    )


def _first_reason(outcomes: Sequence[_Outcome]) -> str:
    first = outcomes[0].notes
    label = f"invocation 1 ({first.invocation_id})" if first.invocation_id else "invocation 1"
    return f"no invocation was scored; {label}: {first.reason}"


DECLARATION = MetricDeclaration(
    CoherenceMetric,
    applies_to="conversation",
    prompts="coherence",
    labelling=Labelling(
        labels=("coherent", "incoherent"),
        field="rating",
        positive=("3", "4", "5"),
        threshold=3.0,  # "somewhat coherent": the least 1-5 rating that is the judge saying yes
        needs_expected=True,
    ),
)
"""What ``response_evaluation_score`` is; a turn is labelled ``coherent`` when its rating is at
least 3, whatever the criterion's threshold (which applies to the mean over the turns)."""
