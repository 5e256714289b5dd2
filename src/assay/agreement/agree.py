"""``assay judge agree``: score the labelled units of a recorded run with the real metrics and a
judge, and compare the judge's labels with people's.

Each labelled criterion is scored, as ``assay eval --traces`` scores it (the same metric class,
judge pool, retries and cache), on the cases labelled for it only; the judge's label of each
unit is then read off the results: a turn's score (``final_response_match_v2``, ``safety_v1``,
``per_turn_user_simulator_quality_v1``, a hallucinations answer; ``response_evaluation_score``'s
rating against :data:`~assay.agreement.labels.COHERENT_RATING`), a rubric's score in that turn
(on the last turn for ``rubric_based_multi_turn_trajectory_quality_v1``), the conversation's
score against the criterion's threshold (the ``multi_turn_*_v1`` criteria), or the label the
fact-check gave a sentence. A unit the judge gave no label for (a failed call,
an unreadable answer, a sentence it did not find) is kept, counted as a disagreement, and
listed with why. Beside each label the judge's probability of the positive label is kept where
its backend gives one (else the share of its samples that voted positive): what ``assay judge
align`` fits a threshold on. For a conversation scored against a threshold that probability is
the chance that enough of its rubrics are met (each rubric's P(yes), taken as independent); for a
coherence rating, the probability of a rating of 3 or more.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.agreement.labels import (
    ANSWER_LABELS,
    LABEL_SETS,
    Label,
    LabelledRun,
    label_set,
    labelling,
    turn_index,
)
from assay.agreement.stats import Agreement, agreement
from assay.config import EvalConfig, LlmAsAJudgeCriterion
from assay.llm.base import Choice, TokenUsage
from assay.metrics.declaration import Labelling
from assay.metrics.judging import json_objects
from assay.metrics.notes import InvocationNotes, JudgeSample
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.runner.evaluate import EvalSetJob, JudgeSettings, evaluate


def _declared(criterion: str) -> Labelling:
    """How ``criterion`` is labelled (checked when its labels were loaded)."""
    found = labelling(criterion)
    if found is None:
        raise KeyError(f"no labels are taken for '{criterion}'")
    return found


class _Decisions(Mapping[str, tuple[str, tuple[str, ...]]]):
    """Per labelled criterion, read off its declaration: see :data:`DECISIONS`."""

    def __getitem__(self, criterion: str) -> tuple[str, tuple[str, ...]]:
        found = labelling(criterion)
        if found is None:
            raise KeyError(criterion)
        return found.field, found.positive

    def __iter__(self) -> Iterator[str]:
        return iter(LABEL_SETS)

    def __len__(self) -> int:
        return len(LABEL_SETS)


DECISIONS: Mapping[str, tuple[str, tuple[str, ...]]] = _Decisions()
"""Per criterion, the key of the judge's closed choice that holds its verdict, and the options
of that choice that are the positive label (its metric's
:class:`~assay.metrics.declaration.Labelling`). For a criterion labelled on the whole
conversation it is each rubric's verdict: the label is decided over all of them."""


@dataclass(frozen=True)
class Compared:
    """One labelled unit: the person's label, the judge's (None: none), and what the judge said.

    ``probability`` is the judge's probability of the positive label (valid, yes, supported or
    not applicable, grounded, safe), averaged over its samples, where its backend gives
    log-probabilities; else (``by_votes``) the share of its samples that voted positive; None
    when neither is known. For an answer labelled grounded or not it is the least of its
    sentences' probabilities: the answer is grounded when every sentence is."""

    label: Label
    judge: str | None
    note: str = ""
    probability: float | None = None
    by_votes: bool = False

    @property
    def agrees(self) -> bool:
        """The judge gave the person's label."""
        return self.judge == self.label.label

    @property
    def positive(self) -> str:
        """The positive label of this unit's criterion (and level: sentence or answer)."""
        return label_set(self.label.criterion, sentence=self.label.sentence is not None)[0]

    @property
    def confidence(self) -> float | None:
        """The judge's probability of the side (positive or not) it gave, where known."""
        if self.probability is None or self.judge is None:
            return None
        return self.probability if self.judge == self.positive else 1.0 - self.probability


@dataclass(frozen=True)
class AgreeReport:
    """The outcome of ``assay judge agree``."""

    compared: tuple[Compared, ...]
    by_criterion: dict[str, Agreement]
    overall: Agreement
    judges: dict[str, str]
    """Per criterion, the judge that scored it, as the results describe it."""
    usage: TokenUsage
    judge_models: dict[str, str] = dataclasses.field(default_factory=dict)
    """Per criterion, the judge's model string as ``--judge-model`` takes it."""

    def as_json(self) -> dict[str, Any]:
        """Everything, for ``--json``."""
        return {
            "judges": self.judges,
            "judge_models": self.judge_models,
            "criteria": {name: _figures(found) for name, found in self.by_criterion.items()},
            "overall": _figures(self.overall),
            "usage": self.usage.model_dump(),
            "units": [
                {
                    **c.label.model_dump(exclude_none=True),
                    "judge": c.judge,
                    "note": c.note,
                    "probability": c.probability,
                    "by_votes": c.by_votes,
                }
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
    """Score each labelled criterion of ``run`` on the cases labelled for it, and compare."""
    criteria = list(dict.fromkeys(label.criterion for label in run.labels))
    jobs = [_job(run, name, num_samples) for name in criteria]
    results = await evaluate(jobs, run.traces, judges=judges, progress=False)
    return compare(run, dict(zip(criteria, results, strict=True)))


def _job(run: LabelledRun, criterion: str, num_samples: int | None) -> EvalSetJob:
    wanted = {label.case for label in run.labels if label.criterion == criterion}
    loaded = run.loaded
    eval_set = loaded.eval_set.model_copy(
        update={"eval_cases": [c for c in loaded.eval_set.eval_cases if c.eval_id in wanted]}
    )
    config = _only(run.config, criterion, num_samples)
    return EvalSetJob(dataclasses.replace(loaded, eval_set=eval_set), config, criterion)


def _only(config: EvalConfig, name: str, num_samples: int | None) -> EvalConfig:
    criterion = config.criteria[name]
    if num_samples is not None and isinstance(criterion, LlmAsAJudgeCriterion):
        options = criterion.judge_model_options.model_copy(update={"num_samples": num_samples})
        criterion = criterion.model_copy(update={"judge_model_options": options})
    return config.model_copy(update={"criteria": {name: criterion}})


def compare(run: LabelledRun, results: dict[str, EvalSetResult]) -> AgreeReport:
    """Each label beside the judge's, and the figures per criterion and overall, from the run
    that scored each labelled criterion (``results``, by criterion)."""
    cases = {
        name: {case.eval_id: case for case in result.eval_case_results}
        for name, result in results.items()
    }
    compared = tuple(
        judged_unit(run, label, cases.get(label.criterion, {}).get(label.case))
        for label in run.labels
    )
    by_criterion = {}
    for name in dict.fromkeys(label.criterion for label in run.labels):
        units = [c for c in compared if c.label.criterion == name]
        pairs = [(c.label.label, c.judge) for c in units]
        by_criterion[name] = agreement(pairs, positive=units[0].positive)
    pooled = [
        (_side(c, c.label.label), None if c.judge is None else _side(c, c.judge)) for c in compared
    ]
    usage = TokenUsage()
    judges: dict[str, str] = {}
    models: dict[str, str] = {}
    for result in results.values():
        info = result.assay
        for found in (info.usage if info else {}).values():
            usage = usage + found
        for name, judge in (info.judges if info else {}).items():
            if name in by_criterion:
                judges[name] = judge.description or judge.model or "no judge"
                if judge.judge_model or judge.model:
                    models[name] = judge.judge_model or judge.model or ""
    return AgreeReport(
        compared, by_criterion, agreement(pooled, positive="positive"), judges, usage, models
    )


def _side(unit: Compared, label: str) -> str:
    """A label as positive or negative, so criteria can be pooled."""
    return "positive" if label == unit.positive else "negative"


def judged_unit(run: LabelledRun, label: Label, case: EvalCaseResult | None) -> Compared:
    """``label`` beside what the judge said of its unit in ``case`` (the recorded result): the
    judge's label, its probability and its note; the view reads a unit's judge label here too,
    so the two never differ."""
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
    notes = invocation_notes(case, label.criterion, row.actual_invocation.invocation_id, turn)
    how = _declared(label.criterion)
    if how.unit == "sentence" and label.sentence is not None:
        return _sentence(label, notes, reason)
    if label.rubric is not None:
        scores = {s.rubric_id: s for s in found.details.rubric_scores or []}
        score = scores.get(label.rubric)
        if score is None or score.score is None:
            return Compared(label, None, reason or "the judge gave no verdict on the rubric")
        said = "yes" if score.score >= 0.5 else "no"
        probability, by_votes = _rubric_probability(notes, label.rubric)
        return Compared(label, said, score.rationale or "", probability, by_votes)
    if found.score is None:
        return Compared(label, None, reason or "the judge gave no verdict")
    positive, negative = label_set(label.criterion, sentence=False)[:2]
    threshold = decision_threshold(run, label.criterion)
    said = positive if found.score >= threshold else negative
    if label.criterion in ANSWER_LABELS:
        return Compared(
            label,
            said,
            _first_unsupported(how, notes),
            _answer_probability(label.criterion, notes),
        )
    if how.unit == "conversation":
        probability, by_votes = _share_probability(notes, found.score, threshold)
        return Compared(label, said, _unmet(notes), probability, by_votes)
    probability, by_votes = _unit_probability(label.criterion, notes, threshold)
    return Compared(label, said, _rationale(notes), probability, by_votes)


def decision_threshold(run: LabelledRun, criterion: str) -> float:
    """The least score of a turn (or conversation) that is the judge's positive label: as its
    metric declares it, or the criterion's threshold where it declares none."""
    threshold = _declared(criterion).threshold
    return run.config.criteria[criterion].threshold if threshold is None else threshold


def invocation_notes(
    case: EvalCaseResult, criterion: str, invocation_id: str, turn: int
) -> InvocationNotes | None:
    """The metric's notes on one turn of ``case`` (by invocation id, else by its place)."""
    metric = case.assay.metrics.get(criterion)
    entries = metric.per_invocation if metric else []
    same = [n for n in entries if invocation_id and n.invocation_id == invocation_id]
    if same:
        return same[0]
    return entries[turn] if turn < len(entries) else None


def _rationale(notes: InvocationNotes | None) -> str:
    for sample in notes.samples if notes else []:
        if sample.text:
            for obj in json_objects(sample.text):
                for key in ("reasoning", "rationale", "explanation"):
                    if isinstance(obj.get(key), str) and obj[key]:
                        return str(obj[key])
    return ""


def _positive_mass(criterion: str, choice: Choice) -> float:
    return sum(choice.probability(option) for option in DECISIONS[criterion][1])


def _is_field(criterion: str, choice: Choice) -> bool:
    return choice.path.rsplit(".", 1)[-1] == DECISIONS[criterion][0]


def _unit_probability(
    criterion: str, notes: InvocationNotes | None, threshold: float = 1.0
) -> tuple[float | None, bool]:
    """The mean over samples of the probability of the positive label of the verdict (the last
    choice of the verdict's key), or, with no probabilities, the share of positive votes (a
    sample's score at least ``threshold``)."""
    samples = notes.samples if notes else []
    values = []
    for sample in samples:
        verdicts = [c for c in sample.choices or [] if _is_field(criterion, c)]
        if verdicts:
            values.append(_positive_mass(criterion, verdicts[-1]))
    if values:
        return statistics.fmean(values), False
    return _vote_share(samples, threshold), True


def _vote_share(samples: Sequence[JudgeSample], threshold: float = 1.0) -> float | None:
    scored = [s.score for s in samples if s.score is not None]
    if not scored:
        return None
    return sum(1 for s in scored if s >= threshold) / len(scored)


def at_least(probabilities: Sequence[float], count: int) -> float:
    """The probability that at least ``count`` of independent events of these probabilities
    happen (the Poisson binomial tail)."""
    ways = [1.0]  # ways[k]: the probability that exactly k happened so far
    for p in probabilities:
        ways = [
            (ways[k] if k < len(ways) else 0.0) * (1 - p) + (ways[k - 1] * p if k else 0.0)
            for k in range(len(ways) + 1)
        ]
    return min(1.0, max(0.0, sum(ways[max(count, 0) :])))


def _share_probability(
    notes: InvocationNotes | None, score: float, threshold: float
) -> tuple[float | None, bool]:
    """A conversation scored as the share of its rubrics met: the probability that the share
    reaches ``threshold``, from each rubric's P(yes) (its verdict's choice), or, without
    probabilities, 1 or 0 as the score does (one sample: the vote)."""
    for sample in notes.samples if notes else []:
        verdicts = [c for c in sample.choices or [] if c.path.endswith("].verdict")]
        if verdicts:
            needed = math.ceil(threshold * len(verdicts) - 1e-9)
            return at_least([c.probability("yes") for c in verdicts], needed), False
    return (1.0 if score >= threshold else 0.0), True


def _unmet(notes: InvocationNotes | None) -> str:
    """The rubrics the judge found unmet, with its rationale, or how many it found met."""
    details = notes.details if notes is not None and notes.details else {}
    rows = list(details.get("rubrics") or [])
    unmet = [r for r in rows if isinstance(r, dict) and r.get("verdict") == "no"]
    if not unmet:
        met = sum(1 for r in rows if isinstance(r, dict) and r.get("verdict") == "yes")
        return f"{met} of {len(rows)} rubrics met" if rows else ""
    return "; ".join(f"{r.get('rubric_id')}: {r.get('rationale') or 'no'}" for r in unmet)


def _rubric_probability(notes: InvocationNotes | None, rubric: str) -> tuple[float | None, bool]:
    values = []
    votes = []
    for sample in notes.samples if notes else []:
        index = _rubric_position(sample.text or "", rubric)
        if index is None:
            continue
        path = f"verdicts[{index}].verdict"
        chosen = [c for c in sample.choices or [] if c.path == path]
        if chosen:
            values.append(chosen[0].probability("yes"))
        verdict = _rubric_verdict(sample.text or "", index)
        if verdict is not None:
            votes.append(1.0 if verdict == "yes" else 0.0)
    if values:
        return statistics.fmean(values), False
    return (statistics.fmean(votes) if votes else None), True


def _rubric_entries(text: str) -> list[Any]:
    for obj in json_objects(text):
        entries = obj.get("verdicts")
        if isinstance(entries, list):
            return entries
    return []


def _rubric_position(text: str, rubric: str) -> int | None:
    entries = _rubric_entries(text)
    return next(
        (i for i, e in enumerate(entries) if isinstance(e, dict) and e.get("id") == rubric), None
    )


def _rubric_verdict(text: str, index: int) -> str | None:
    entry = _rubric_entries(text)[index]
    verdict = entry.get("verdict") if isinstance(entry, dict) else None
    return verdict if isinstance(verdict, str) else None


def _answer_probability(criterion: str, notes: InvocationNotes | None) -> float | None:
    """The least probability, over an answer's sentences, that a sentence is supported or needs
    no support (from the fact-check's choices); None without probabilities."""
    values = [
        _positive_mass(criterion, choice)
        for sample in (notes.samples if notes else [])
        for choice in sample.choices or []
        if _is_field(criterion, choice)
    ]
    return min(values) if values else None


def judged_sentences(notes: InvocationNotes | None) -> list[dict[str, Any]]:
    """The sentences the hallucinations judge split a turn's answer into, with its verdicts."""
    details = notes.details if notes else None
    return [
        sentence
        for step in (details or {}).get("steps") or []
        for sentence in step.get("sentences") or []
    ]


def _first_unsupported(how: Labelling, notes: InvocationNotes | None) -> str:
    for sentence in judged_sentences(notes):
        if sentence.get("label") not in how.positive:
            return f"{sentence.get('label')}: {sentence.get('sentence', '')}"
    return ""


def _sentence(label: Label, notes: InvocationNotes | None, reason: str) -> Compared:
    sentences = judged_sentences(notes)
    chosen = _pick(sentences, label.sentence)
    if chosen is None:
        split = "; ".join(json.dumps(s.get("sentence", "")) for s in sentences) or "none"
        why = reason or f"the judge split the answer into other sentences: {split}"
        return Compared(label, None, why)
    said = chosen.get("label")
    index = sentences.index(chosen)
    path_end = f"sentences[{index}].label"
    probability = next(
        (
            _positive_mass(label.criterion, c)
            for sample in (notes.samples if notes else [])
            for c in sample.choices or []
            if c.path == path_end
        ),
        None,
    )
    return Compared(
        label,
        said if isinstance(said, str) else None,
        chosen.get("rationale") or "",
        probability,
    )


def _pick(sentences: Sequence[dict[str, Any]], wanted: int | str | None) -> dict[str, Any] | None:
    if isinstance(wanted, int):
        return sentences[wanted - 1] if 1 <= wanted <= len(sentences) else None
    text = " ".join(str(wanted or "").split())
    return next(
        (s for s in sentences if " ".join(str(s.get("sentence", "")).split()) == text), None
    )
