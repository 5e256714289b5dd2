"""``multi_turn_task_success_v1``, ``multi_turn_trajectory_quality_v1`` and
``multi_turn_tool_use_quality_v1``: the whole conversation, judged once against rubrics.

ADK 2.13 sends these to Vertex AI's Gen AI evaluation service (``RubricMetric.MULTI_TURN_*``),
which needs a Google Cloud project. There each is an adaptive-rubric metric: the service writes
pass/fail rubrics for the conversation, judges each, and scores the share that pass. assay asks
the configured judge instead, in one call per case (the criterion has no judge options, so one
sample): it reads the agents' instructions and tools and the whole conversation
(:mod:`assay.metrics.conversation`: every user message, tool call, tool result and reply, turn
by turn) and answers yes or no to each of the metric's five rubrics
(:mod:`assay.metrics.prompts.multi_turn`, written after the metric's published definition). The
score is the share of rubrics answered yes (a rubric left without a yes/no verdict is left out),
in [0, 1]; it passes at ``score >= threshold``.

As in ADK, the first N-1 invocations are NOT_EVALUATED and the last carries the conversation's
score and its rubric verdicts, which are also the case's score and ``rubric_scores``. The notes
keep the judge's answer and, per rubric, its text, verdict and rationale.

Vertex AI itself is opt-in (``ASSAY_VERTEX_METRICS``, see :mod:`assay.metrics.vertex`): the
conversation is then sent as the ``AgentData`` ADK builds, and the result read as ADK reads it
(its rubric scores named by the rubric's text).

Departures from the service: the rubrics are a fixed set per metric, not written for each
conversation (the service's rubric-writing prompts are not public, and a small judge asked to
write rubrics copies its examples), so every conversation is tested on the same five points and
rubric scores are named by a short id; the judge reads the tool calls of static turns
(``tool_uses``), which ADK does not send; and it sees each tool's name and description, not its
parameter schema. Departures from ADK: a case without invocations gets a reason, and one whose
expected invocations do not pair with the actual ones (the metric does not read them) is judged
anyway, where ADK raises; a result without a score still lists every invocation, where ADK
returns an empty result.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric, RubricScore
from assay.llm.base import LlmRequest, TokenUsage
from assay.metrics import conversation
from assay.metrics import vertex as vertex_ai
from assay.metrics.base import (
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    not_evaluated,
    paired_expected,
    status_for,
)
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import SampleOutcome, ask_samples
from assay.metrics.notes import InvocationNotes, JudgeSample, MetricNotes
from assay.metrics.prompts import multi_turn as prompts
from assay.metrics.prompts import rubric_multi_turn as conversation_prompts
from assay.metrics.prompts import rubrics as rubric_prompts
from assay.metrics.rubrics import SampleVerdicts, sample_parser, vote

EARLIER_TURN = "scored once for the whole conversation, on its last invocation"
"""Why every invocation but the last is NOT_EVALUATED."""

NO_VERDICT = "the judge gave no yes/no verdict for any rubric"

ConversationScorer = Callable[[vertex_ai.AgentData], vertex_ai.VertexScore]
"""Scores a whole conversation with Vertex AI (blocking; run in a worker thread)."""


def _word(score: float | None) -> str | None:
    return None if score is None else "yes" if score == 1.0 else "no"


def _detail(rubric: Rubric, scored: RubricScore | None) -> dict[str, Any]:
    """One rubric's row in the notes: its id and text, and the judge's verdict if any."""
    score = scored.score if scored is not None else None
    return {
        "rubric_id": rubric.rubric_id,
        "property": rubric.rubric_content.text_property,
        "verdict": _word(score),
        "score": score,
        "rationale": scored.rationale if scored is not None else None,
    }


# --------------------------------------------------------------------------- the metrics


@dataclass
class _Judged:
    """The conversation's score (or why there is none), its rubric scores and its notes."""

    score: float | None
    reason: str | None
    rubric_scores: list[RubricScore] | None
    sample: JudgeSample | None = None
    details: dict[str, Any] | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)


class MultiTurnMetric(vertex_ai.VertexBacked[ConversationScorer]):
    """What the three conversation-level metrics share; subclasses name the metric and the
    Vertex AI metric it stands for."""

    info: ClassVar[MetricInfo]
    vertex_metric: ClassVar[str]
    """The attribute of the SDK's ``RubricMetric`` ADK uses (``MULTI_TURN_TASK_SUCCESS``)."""

    def vertex_scorer(self) -> ConversationScorer:
        """Vertex AI's multi-turn metric, one call per conversation."""
        return self._vertex_call

    def _vertex_call(self, data: vertex_ai.AgentData) -> vertex_ai.VertexScore:
        metric = self.vertex_metric
        return vertex_ai.score_agent_data(
            data, self._env, lambda sdk: getattr(sdk.types.RubricMetric, metric)
        )

    @property
    def rubrics(self) -> tuple[Rubric, ...]:
        """The rubrics the judge answers, in order."""
        return prompts.RUBRICS[self.info.name]

    def request(self, actual: Sequence[Invocation]) -> LlmRequest:
        """The judge request: the conversation judge's instructions, then the agents, the whole
        conversation and the metric's rubrics."""
        return LlmRequest.user(
            conversation_prompts.render(
                instructions=conversation.agents_instructions(actual),
                tools=conversation.agents_tools(actual),
                conversation=conversation.transcript(actual),
                rubrics=self.rubrics,
            ),
            system=conversation_prompts.SYSTEM,
            response_schema=rubric_prompts.schema(self.rubrics),
            schema_name=rubric_prompts.SCHEMA_NAME,
        )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Judge the whole conversation once; the last invocation carries the score."""
        if not actual:
            return not_evaluated(
                self.info.name, self.criterion, actual, "the case has no invocations"
            )
        if self._unavailable is not None:
            judged = _Judged(None, self._unavailable, None)
        elif self.uses_vertex:
            judged = await self._by_vertex(actual)
        else:
            judged = await self._by_judge(actual, case)
        return self._result(actual, expected, judged)

    async def _by_judge(self, actual: Sequence[Invocation], case: EvalCase) -> _Judged:
        (outcome,) = await ask_samples(
            self.judge,
            self.request(actual),
            num_samples=1,
            case_id=case.eval_id,
            parse=sample_parser(self.rubrics),
        )
        failed = outcome.note.error is not None
        voted = (
            {s.rubric_id: s for s in vote([outcome.value], self.judge.vote_share)}
            if not failed
            else {}
        )
        scores = [voted[r.rubric_id] for r in self.rubrics if r.rubric_id in voted]
        judged = [s.score for s in scores if s.score is not None]
        score = statistics.mean(judged) if judged else None
        details: dict[str, Any] = {
            "rubrics": [_detail(rubric, voted.get(rubric.rubric_id)) for rubric in self.rubrics]
        }
        if outcome.value is not None and outcome.value.unmatched:
            details["unmatched"] = sorted(set(outcome.value.unmatched))
        return _Judged(
            score,
            _reason(outcome, score),
            scores or None,
            outcome.note,
            details,
            outcome.usage,
        )

    async def _by_vertex(self, actual: Sequence[Invocation]) -> _Judged:
        try:
            scored = await asyncio.to_thread(self._vertex, vertex_ai.agent_data(actual))
        except Exception as exc:  # an SDK or credentials failure
            return _Judged(None, f"Vertex AI failed: {vertex_ai.describe(exc)}", None)
        verdicts = [
            s
            for s in scored.rubric_scores or []
            if s.rubric_id not in (vertex_ai.EXPLANATION_RUBRIC_ID, vertex_ai.ERROR_RUBRIC_ID)
        ]
        details: dict[str, Any] = {
            "rubrics": [
                {
                    "rubric_id": str(number),
                    "property": s.rubric_id,
                    "verdict": _word(s.score),
                    "score": s.score,
                    "rationale": s.rationale,
                }
                for number, s in enumerate(verdicts, start=1)
            ]
        }
        if scored.explanation:
            details["explanation"] = scored.explanation
        note = JudgeSample(sample=0, score=scored.score, text=scored.explanation)
        return _Judged(scored.score, scored.reason, scored.rubric_scores, note, details)

    def _result(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        judged: _Judged,
    ) -> MetricResult:
        paired = paired_expected(actual, expected)
        threshold = self.criterion.threshold
        per_invocation = [
            PerInvocationResult(inv, paired[i] if paired else None)
            for i, inv in enumerate(actual[:-1])
        ]
        per_invocation.append(
            PerInvocationResult(
                actual[-1],
                paired[-1] if paired else None,
                judged.score,
                status_for(judged.score, threshold),
                rubric_scores=judged.rubric_scores,
            )
        )
        notes = [
            InvocationNotes(invocation_id=inv.invocation_id, reason=EARLIER_TURN)
            for inv in actual[:-1]
        ]
        reason = judged.reason if judged.score is None else None
        notes.append(
            InvocationNotes(
                invocation_id=actual[-1].invocation_id,
                samples=[judged.sample] if judged.sample is not None else [],
                reason=reason,
                details=judged.details,
            )
        )
        vertex = self.uses_vertex
        return MetricResult(
            metric_name=self.info.name,
            criterion=self.criterion,
            score=judged.score,
            status=status_for(judged.score, threshold),
            per_invocation=per_invocation,
            reason=reason,
            rubric_scores=judged.rubric_scores,
            notes=MetricNotes(
                judge_model=vertex_ai.model_name(self.info.name) if vertex else self.judge.model,
                judge_source=self._choice.variable if vertex else self.judge.source,
                usage=judged.usage,
                per_invocation=notes,
            ),
        )


def _reason(outcome: SampleOutcome[SampleVerdicts], score: float | None) -> str | None:
    if outcome.note.error is not None:
        return f"judge call failed: {outcome.note.error}"
    if score is None:
        return outcome.note.reason or NO_VERDICT
    return None


class MultiTurnTaskSuccessMetric(MultiTurnMetric):
    """Did the agent achieve the user's goals over the whole conversation?"""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="multi_turn_task_success_v1",
        description=(
            "Whether the agent achieved the goals of the whole conversation: the share of "
            "conversation-specific rubrics an LLM judge (or Vertex AI) finds met."
        ),
        needs_judge=True,
        source="vertex",
    )
    vertex_metric: ClassVar[str] = "MULTI_TURN_TASK_SUCCESS"


class MultiTurnTrajectoryQualityMetric(MultiTurnMetric):
    """How good is the path the agent took through the conversation?"""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="multi_turn_trajectory_quality_v1",
        description=(
            "Quality of the path the agent took over the whole conversation: the share of "
            "conversation-specific rubrics an LLM judge (or Vertex AI) finds met."
        ),
        needs_judge=True,
        source="vertex",
    )
    vertex_metric: ClassVar[str] = "MULTI_TURN_TRAJECTORY_QUALITY"


class MultiTurnToolUseQualityMetric(MultiTurnMetric):
    """How well does the agent call its tools over the conversation?"""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="multi_turn_tool_use_quality_v1",
        description=(
            "Quality of the agent's tool calls over the whole conversation: the share of "
            "conversation-specific rubrics an LLM judge (or Vertex AI) finds met."
        ),
        needs_judge=True,
        source="vertex",
    )
    vertex_metric: ClassVar[str] = "MULTI_TURN_TOOL_USE_QUALITY"


def _declaration(metric: type[MultiTurnMetric]) -> MetricDeclaration:
    # People label the conversation; the judge's label is its score (the share of the five
    # rubrics met) against the criterion's threshold.
    return MetricDeclaration(
        metric,
        prompts="multi_turn",
        shared_prompts="rubric_multi_turn",
        labelling=Labelling(
            labels=("yes", "no"),
            field="verdict",
            positive=("yes",),
            unit="conversation",
            threshold=None,
            last_turn=True,
        ),
    )


TASK_SUCCESS_DECLARATION = _declaration(MultiTurnTaskSuccessMetric)
TRAJECTORY_QUALITY_DECLARATION = _declaration(MultiTurnTrajectoryQualityMetric)
TOOL_USE_QUALITY_DECLARATION = _declaration(MultiTurnToolUseQualityMetric)
