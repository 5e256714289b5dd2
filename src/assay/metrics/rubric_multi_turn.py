"""``rubric_based_multi_turn_trajectory_quality_v1``: an LLM judge gives a yes/no verdict per rubric
on the whole conversation (every user turn, tool call, tool result and reply), once per case.

Semantics are google-adk 2.13.0's (``RubricBasedMultiTurnTrajectoryEvaluator``):

* **Which rubrics.** The criterion's rubrics, then the last invocation's rubrics of type
  ``TRAJECTORY_QUALITY`` (its own, then the case's, then those of the last expected
  invocation), as :mod:`assay.metrics.rubrics` merges them. A rubric id given twice in any
  invocation, or a last invocation left with no rubrics, makes the metric NOT_EVALUATED with the
  reason before any judge call (ADK stops the case).
* **One judgement.** The judge sees the conversation once, ``num_samples`` times; the verdicts
  are read, matched to rubrics and voted exactly as by the single-turn rubric metrics.
* **Scores.** The first N-1 invocations are NOT_EVALUATED; the last carries the conversation's
  score (the mean of its voted rubric scores) and its rubric verdicts, which are also the case's
  score and ``overall_rubric_scores``.

Departures from ADK (besides those of :mod:`assay.metrics.rubrics`, e.g. the verdict's first
word): the judge reads the tool calls of static turns (``tool_uses``) too, where ADK shows only
recorded events' calls; actual and expected invocations that do not pair up are judged anyway
when the expected ones carry no rubrics (ADK stops the case).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

from assay.config import RubricsBasedCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric
from assay.metrics import conversation
from assay.metrics.base import MetricInfo, MetricResult, PerInvocationResult, not_evaluated
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import sample_limit, total_usage
from assay.metrics.notes import InvocationNotes, MetricNotes
from assay.metrics.prompts import rubric_multi_turn as prompts
from assay.metrics.rubrics import RubricMetricBase, effective_rubrics, merged_rubrics

TRAJECTORY_QUALITY = "TRAJECTORY_QUALITY"


class RubricMultiTurnTrajectoryQualityMetric(RubricMetricBase):
    """An LLM judge checks the whole conversation against yes/no rubrics."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="rubric_based_multi_turn_trajectory_quality_v1",
        description=(
            "Mean of an LLM judge's yes/no verdicts on the whole conversation (replies and "
            "tool use over every turn) against the rubrics."
        ),
        takes_rubrics=True,
        needs_judge=True,
    )
    rubric_type: ClassVar[str] = TRAJECTORY_QUALITY
    system: ClassVar[str] = prompts.SYSTEM

    def last_rubrics(
        self, actual: Sequence[Invocation], expected: Sequence[Invocation] | None, case: EvalCase
    ) -> list[Rubric] | str:
        """The last invocation's effective rubrics, or why the metric cannot run (a clash in any
        invocation, or none for the last)."""
        merged = merged_rubrics(actual, expected, case)
        if isinstance(merged, str):
            return merged
        if not merged:
            return "the case has no invocations"
        return effective_rubrics(self.criterion.rubrics, merged[-1], self.rubric_type)

    def conversation_prompt(self, actual: Sequence[Invocation], rubrics: Sequence[Rubric]) -> str:
        """The judge's user message: instructions, tools, the whole conversation, the rubrics."""
        return prompts.render(
            instructions=conversation.agents_instructions(actual),
            tools=conversation.agents_tools(actual),
            conversation=conversation.transcript(actual),
            rubrics=rubrics,
        )

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Judge the conversation once; the last invocation carries the score."""
        if not actual:
            return not_evaluated(
                self.info.name, self.criterion, actual, "the case has no invocations"
            )
        rubrics = self.last_rubrics(actual, expected, case)
        if isinstance(rubrics, str):
            return not_evaluated(self.info.name, self.criterion, actual, rubrics, expected)
        paired = expected if expected is not None and len(expected) == len(actual) else None
        limit = sample_limit(self.criterion)
        judged = await self._judge_one(
            actual[-1],
            paired[-1] if paired else None,
            rubrics,
            case.eval_id,
            asyncio.Semaphore(limit) if limit else None,
            user=self.conversation_prompt(actual, rubrics),
        )
        earlier = [
            PerInvocationResult(inv, paired[i] if paired else None)
            for i, inv in enumerate(actual[:-1])
        ]
        skipped = "judged with the whole conversation on the last invocation"
        notes = MetricNotes(
            judge_model=self.judge.model,
            judge_source=self.judge.source,
            usage=total_usage(judged.outcomes),
            per_invocation=[
                *(
                    InvocationNotes(invocation_id=inv.invocation_id, reason=skipped)
                    for inv in actual[:-1]
                ),
                judged.notes,
            ],
        )
        result = self._overall([*earlier, judged.result], notes)
        if result.score is None:
            last = judged.notes.reason
            result.reason = f"no rubric was scored: {last}" if last else "no rubric was scored"
        return result


DECLARATION = MetricDeclaration(
    RubricMultiTurnTrajectoryQualityMetric,
    criterion=RubricsBasedCriterion,
    prompts="rubric_multi_turn",
    labelling=Labelling(
        labels=("yes", "no"),
        field="verdict",
        positive=("yes",),
        unit="rubric",
        last_turn=True,
        rubric_type=TRAJECTORY_QUALITY,
    ),
)
"""What ``rubric_based_multi_turn_trajectory_quality_v1`` is."""
