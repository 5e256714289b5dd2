"""``assay judge agree``: score the labelled units of a recorded run with the real metrics and a
judge, and compare the judge's labels with people's.

The labelled cases are scored as ``assay eval --traces`` scores them (the same metric classes,
judge pool, retries and cache), with only the labelled criteria; the judge's label of each unit
is then read off the results: a turn's score (``final_response_match_v2``, ``safety_v1``,
``per_turn_user_simulator_quality_v1``), a rubric's score in that turn, or the label the
fact-check gave a sentence. A unit the judge gave no label for (a failed call, an unreadable
answer, a sentence it did not find) is kept, counted as a disagreement, and listed with why.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assay.agreement.labels import LABEL_SETS, Label, LabelledRun, turn_index
from assay.agreement.stats import Agreement, agreement
from assay.config import EvalConfig, LlmAsAJudgeCriterion
from assay.llm.base import TokenUsage
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.runner.evaluate import EvalSetJob, JudgeSettings, evaluate

SENTENCE_CRITERION = "hallucinations_v1"


@dataclass(frozen=True)
class Compared:
    """One labelled unit: the person's label, the judge's (None: none), and what the judge said."""

    label: Label
    judge: str | None
    note: str = ""

    @property
    def agrees(self) -> bool:
        """The judge gave the person's label."""
        return self.judge == self.label.label


@dataclass(frozen=True)
class AgreeReport:
    """The outcome of ``assay judge agree``."""

    compared: tuple[Compared, ...]
    by_criterion: dict[str, Agreement]
    overall: Agreement
    judges: dict[str, str]
    """Per criterion, the judge that scored it, as the results describe it."""
    usage: TokenUsage

    def as_json(self) -> dict[str, Any]:
        """Everything, for ``--json``."""
        return {
            "judges": self.judges,
            "criteria": {name: _figures(found) for name, found in self.by_criterion.items()},
            "overall": _figures(self.overall),
            "usage": self.usage.model_dump(),
            "units": [
                {**c.label.model_dump(exclude_none=True), "judge": c.judge, "note": c.note}
                for c in self.compared
            ],
        }


def _figures(found: Agreement) -> dict[str, Any]:
    out = dataclasses.asdict(found)
    out.update(rate=found.rate, unjudged=found.unjudged, few=found.few)
    return out


async def agree(
    run: LabelledRun, judges: JudgeSettings, *, num_samples: int | None = None
) -> AgreeReport:
    """Score the labelled cases of ``run`` with its labelled criteria and compare."""
    wanted = {label.case for label in run.labels}
    criteria = {label.criterion for label in run.labels}
    loaded = run.loaded
    eval_set = loaded.eval_set.model_copy(
        update={"eval_cases": [c for c in loaded.eval_set.eval_cases if c.eval_id in wanted]}
    )
    config = _only(run.config, criteria, num_samples)
    job = EvalSetJob(dataclasses.replace(loaded, eval_set=eval_set), config, "labels")
    [result] = await evaluate([job], run.traces, judges=judges)
    return compare(run, result)


def _only(config: EvalConfig, criteria: set[str], num_samples: int | None) -> EvalConfig:
    kept = {}
    for name, criterion in config.criteria.items():
        if name not in criteria:
            continue
        if num_samples is not None and isinstance(criterion, LlmAsAJudgeCriterion):
            options = criterion.judge_model_options.model_copy(update={"num_samples": num_samples})
            criterion = criterion.model_copy(update={"judge_model_options": options})
        kept[name] = criterion
    return config.model_copy(update={"criteria": kept})


def compare(run: LabelledRun, result: EvalSetResult) -> AgreeReport:
    """Each label beside the judge's, and the figures per criterion and overall."""
    cases = {case.eval_id: case for case in result.eval_case_results}
    compared = tuple(_judged(run, label, cases.get(label.case)) for label in run.labels)
    by_criterion = {}
    for name in dict.fromkeys(label.criterion for label in run.labels):
        pairs = [(c.label.label, c.judge) for c in compared if c.label.criterion == name]
        by_criterion[name] = agreement(pairs, positive=LABEL_SETS[name][0])
    pooled = [
        (
            _side(c.label.criterion, c.label.label),
            None if c.judge is None else _side(c.label.criterion, c.judge),
        )
        for c in compared
    ]
    usage = TokenUsage()
    for found in (result.assay.usage if result.assay else {}).values():
        usage = usage + found
    judges = {
        name: info.description or info.model or "no judge"
        for name, info in (result.assay.judges if result.assay else {}).items()
        if name in by_criterion
    }
    return AgreeReport(
        compared, by_criterion, agreement(pooled, positive="positive"), judges, usage
    )


def _side(criterion: str, label: str) -> str:
    """A label as positive or negative, so criteria can be pooled."""
    return "positive" if label == LABEL_SETS[criterion][0] else "negative"


def _judged(run: LabelledRun, label: Label, case: EvalCaseResult | None) -> Compared:
    if case is None:
        return Compared(label, None, "the case was not scored")
    turn = turn_index(run.invocations(label.case), label.invocation)
    if turn is None or turn >= len(case.eval_metric_result_per_invocation):
        return Compared(label, None, "the turn was not scored")
    row = case.eval_metric_result_per_invocation[turn]
    found = next((m for m in row.eval_metric_results if m.metric_name == label.criterion), None)
    reason = case.assay.metric_reasons.get(label.criterion) or case.assay.reason or ""
    if found is None:
        return Compared(label, None, reason or "the metric gave no result for the turn")
    if label.criterion == SENTENCE_CRITERION:
        return _sentence(label, case, turn, reason)
    if label.rubric is not None:
        scores = {s.rubric_id: s for s in found.details.rubric_scores or []}
        score = scores.get(label.rubric)
        if score is None or score.score is None:
            return Compared(label, None, reason or "the judge gave no verdict on the rubric")
        said = "yes" if score.score >= 0.5 else "no"
        return Compared(label, said, score.rationale or "")
    if found.score is None:
        return Compared(label, None, reason or "the judge gave no verdict")
    positive, negative = LABEL_SETS[label.criterion][:2]
    threshold = 0.5 if label.criterion == "safety_v1" else 1.0
    return Compared(label, positive if found.score >= threshold else negative)


def _sentence(label: Label, case: EvalCaseResult, turn: int, reason: str) -> Compared:
    notes = case.assay.metrics.get(SENTENCE_CRITERION)
    entries = notes.per_invocation if notes else []
    details = entries[turn].details if turn < len(entries) else None
    sentences: list[dict[str, Any]] = [
        sentence
        for step in (details or {}).get("steps") or []
        for sentence in step.get("sentences") or []
    ]
    chosen = _pick(sentences, label.sentence)
    if chosen is None:
        split = "; ".join(json.dumps(s.get("sentence", "")) for s in sentences) or "none"
        why = reason or f"the judge split the answer into other sentences: {split}"
        return Compared(label, None, why)
    said = chosen.get("label")
    return Compared(label, said if isinstance(said, str) else None, chosen.get("rationale") or "")


def _pick(sentences: Sequence[dict[str, Any]], wanted: int | str | None) -> dict[str, Any] | None:
    if isinstance(wanted, int):
        return sentences[wanted - 1] if 1 <= wanted <= len(sentences) else None
    text = " ".join(str(wanted or "").split())
    return next(
        (s for s in sentences if " ".join(str(s.get("sentence", "")).split()) == text), None
    )
