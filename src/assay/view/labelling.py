"""What a person labels in the view: the judged units of a recorded case.

A :class:`Unit` is one judged verdict in its criterion's unit (an invocation's verdict, a rubric,
a sentence, a simulated-user turn), named as the labels file names it; :func:`units_for_case`
lists a case's units with the judge's label and this labeller's current one, so a page can
show the label form (``label_macros.html.j2``'s ``label_form(unit)``) beside each verdict.

The judge's label of a unit is read off the recorded case result exactly as ``assay judge
agree`` reads it (:mod:`assay.agreement.agree`), so a person labelling in the view sees the
judge's decision in the labels' own words (``valid``, ``yes``, ``supported``...), with the
judge's probability of the positive label where it is known: what the queue
(:func:`informativeness`) ranks on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import yaml

from assay.agreement import agree
from assay.agreement.labels import LABEL_SETS, Label, LabelledRun, label_set, labelling
from assay.agreement.stats import Agreement, agreement
from assay.errors import AssayError
from assay.evalset import Invocation
from assay.history.labels import StoredLabel, UnitKey, unit_key
from assay.results.keys import CaseKey
from assay.results.model import EvalCaseResult
from assay.results.output import result_chunks
from assay.view.context import View


@dataclass(frozen=True)
class Unit:
    """One judged verdict a person may label."""

    run_id: str
    case: CaseKey
    criterion: str
    invocation: int
    """The turn's number from 1."""
    rubric: str | None = None
    sentence: int | None = None
    judge_label: str | None = None
    """What the judge said, in the labels' words (e.g. ``valid``)."""
    choices: tuple[str, ...] = ()
    """The labels a person may set, the positive one first."""
    label: str | None = None
    """This labeller's label, if set."""
    reason: str = ""
    probability: float | None = None
    """The judge's probability of the positive label (or the share of its samples that voted
    positive, ``by_votes``); None when neither is known."""
    by_votes: bool = False
    note: str = ""
    """What the judge said of it (its rationale, the unmet rubrics, the sentence's rationale),
    or why it gave no label."""
    sentence_text: str = ""
    """The sentence labelled (a sentence unit), as the judge split the answer."""
    editable: bool = True
    """Whether the view lets a person set the label (not ``--read-only``)."""

    @property
    def key(self) -> str:
        """A stable id of the unit within its run (for the page and the API)."""
        parts = [
            self.case.eval_set_id,
            self.case.eval_id,
            str(self.case.run),
            self.criterion,
            str(self.invocation),
            self.rubric or "",
            "" if self.sentence is None else str(self.sentence),
        ]
        return "|".join(part.replace("|", "/") for part in parts)

    @property
    def where(self) -> UnitKey:
        """What the unit is, as :attr:`StoredLabel.unit` names a label's."""
        return unit_key(
            self.run_id, self.case, self.criterion, self.invocation, self.rubric, self.sentence
        )

    @property
    def payload(self) -> dict[str, Any]:
        """What the label form posts to ``/api/labels`` to name this unit."""
        return {
            "run": self.run_id,
            "eval_set_id": self.case.eval_set_id,
            "eval_id": self.case.eval_id,
            "run_number": self.case.run,
            "criterion": self.criterion,
            "invocation": self.invocation,
            "rubric": self.rubric,
            "sentence": self.sentence,
        }

    @property
    def what(self) -> str:
        """The unit in words: criterion, turn and rubric or sentence."""
        extra = f" · rubric {self.rubric}" if self.rubric else ""
        if self.sentence is not None:
            extra = f" · sentence {self.sentence}"
        return f"{self.criterion} · turn {self.invocation}{extra}"


@dataclass(frozen=True)
class _Threshold:
    threshold: float


@dataclass(frozen=True)
class _Config:
    criteria: dict[str, _Threshold]


@dataclass(frozen=True)
class _Recorded:
    """The part of a :class:`~assay.agreement.labels.LabelledRun` that reading the judge's
    label off a case result needs: the case's turns and each criterion's threshold."""

    turns: list[Invocation]
    config: _Config

    def invocations(self, case: str) -> list[Invocation]:
        return self.turns


def judged_units(run_id: str, case: CaseKey, result: EvalCaseResult) -> list[Unit]:
    """Every judged unit of a recorded case, with the judge's label, in the order of its
    turns and criteria (no person's label)."""
    rows = result.eval_metric_result_per_invocation
    thresholds: dict[str, _Threshold] = {}
    for row in rows:
        for metric in row.eval_metric_results:
            if metric.threshold is not None:
                thresholds.setdefault(metric.metric_name, _Threshold(metric.threshold))
    recorded = cast(
        LabelledRun, _Recorded([row.actual_invocation for row in rows], _Config(thresholds))
    )
    skipped = set(result.assay.not_applicable)
    criteria = [n for n in thresholds if labelling(n) is not None and n not in skipped]
    units = []
    for criterion in criteria:
        for unit in _places(run_id, case, result, criterion):
            units.append(_with_judge(recorded, unit, result))
    return sorted(units, key=lambda u: (u.invocation, criteria.index(u.criterion)))


def _places(run_id: str, case: CaseKey, result: EvalCaseResult, criterion: str) -> list[Unit]:
    """The units of ``criterion`` in the case: per turn (only the last for a criterion judged
    on the whole conversation), per rubric the judge scored, or per sentence it split."""
    how = labelling(criterion)
    rows = result.eval_metric_result_per_invocation
    if how is None or not rows:
        return []
    turns = [len(rows) - 1] if how.last_turn else range(len(rows))
    found = []
    for turn in turns:
        metric = next(
            (m for m in rows[turn].eval_metric_results if m.metric_name == criterion), None
        )
        if metric is None:
            continue
        base = Unit(run_id, case, criterion, turn + 1, choices=label_set(criterion))
        if how.rubric_type is not None:
            rubrics = [s.rubric_id for s in metric.details.rubric_scores or []]
            found += [replace(base, rubric=rubric) for rubric in rubrics]
        elif how.unit == "sentence":
            invocation_id = rows[turn].actual_invocation.invocation_id
            notes = agree.invocation_notes(result, criterion, invocation_id, turn)
            sentences = agree.judged_sentences(notes)
            found += [
                replace(base, sentence=number, sentence_text=str(s.get("sentence", "")))
                for number, s in enumerate(sentences, 1)
            ]
        else:
            found.append(replace(base, choices=label_set(criterion, sentence=False)))
    return found


def _with_judge(recorded: LabelledRun, unit: Unit, result: EvalCaseResult) -> Unit:
    """``unit`` with the judge's label, probability and note, read as ``assay judge agree``
    reads them."""
    label = Label(
        case=unit.case.eval_id,
        invocation=unit.invocation,
        criterion=unit.criterion,
        label=unit.choices[0],
        rubric=unit.rubric,
        sentence=unit.sentence,
    )
    compared = agree.judged_unit(recorded, label, result)
    return replace(
        unit,
        judge_label=compared.judge,
        probability=compared.probability,
        by_votes=compared.by_votes,
        note=compared.note,
    )


def with_label(unit: Unit, stored: StoredLabel | None, editable: bool = True) -> Unit:
    """``unit`` with a person's label (None: none yet)."""
    if stored is None:
        return replace(unit, editable=editable)
    return replace(unit, label=stored.label, reason=stored.reason, editable=editable)


def units_for_case(
    view: View, run_id: str, case: CaseKey, result: EvalCaseResult
) -> dict[str, list[Unit]]:
    """The case's judged units by criterion, each with the judge's label and this view's
    labeller's own label where they set one."""
    mine = {
        stored.unit: stored
        for stored in view.store.labels.of_case(run_id, case)
        if stored.labeller == view.settings.labeller
    }
    editable = not view.settings.read_only
    found: dict[str, list[Unit]] = {}
    for unit in judged_units(run_id, case, result):
        found.setdefault(unit.criterion, []).append(
            with_label(unit, mine.get(unit.where), editable)
        )
    return found


def informativeness(unit: Unit, labelled: int) -> float:
    """How much a person's label on ``unit`` would tell, higher first in the queue: the
    judge's uncertainty (1 when its probability of the positive label is 0.5, its threshold;
    0 when it is 0 or 1; a split vote among its samples counts the same way; 0.5 when
    unknown, and 1 when it gave no label at all), plus a bonus for criteria with few labels
    (``labelled``: the criterion's labels so far), so no criterion is starved."""
    if unit.judge_label is None:
        uncertainty = 1.0
    elif unit.probability is None:
        uncertainty = 0.5
    else:
        uncertainty = 1.0 - abs(2.0 * unit.probability - 1.0)
    return uncertainty + 0.5 / (1.0 + labelled)


@dataclass(frozen=True)
class PeopleAgreement:
    """Two labellers' agreement on the units both labelled, in one criterion."""

    criterion: str
    first: str
    second: str
    figures: Agreement


def people_agreement(labels: Sequence[StoredLabel]) -> list[PeopleAgreement]:
    """For each criterion and each two labellers who labelled some of the same units, their
    agreement (Cohen's kappa and the share of units they agree on,
    :func:`~assay.agreement.stats.agreement`): how far people agree before any judge is
    measured against them."""
    by_unit: dict[tuple[object, ...], dict[str, str]] = {}
    for stored in labels:
        by_unit.setdefault(stored.unit, {})[stored.labeller] = stored.label
    pairs: dict[tuple[str, str, str], list[tuple[str, str | None]]] = {}
    for unit, given in by_unit.items():
        people = sorted(given)
        for i, first in enumerate(people):
            for second in people[i + 1 :]:
                key = (str(unit[4]), first, second)
                pairs.setdefault(key, []).append((given[first], given[second]))
    found = []
    for (criterion, first, second), shared in sorted(pairs.items()):
        positive = LABEL_SETS[criterion][0] if criterion in LABEL_SETS else None
        figures = agreement(shared, positive=positive, resamples=500)
        found.append(PeopleAgreement(criterion, first, second, figures))
    return found


class ExportError(AssayError):
    """Why a run's labels cannot be exported (no labels; no stored inputs)."""


def export_labels(
    view: View,
    run_id: str,
    folder: Path,
    *,
    eval_set_id: str | None = None,
    labeller: str | None = None,
) -> Path:
    """Write the run's labels (``labeller``'s, default this view's labeller; of one eval set,
    default the first the run has labels in) under ``folder`` as the labels file ``assay judge
    agree``/``align`` read, with what it names beside it: the eval set (and a
    ``test_config.json`` holding the criteria the run scored it with) and the run's traces file,
    or, for a run with no single traces file (an agent run), a results file of the run. The
    path of the labels file; raises :class:`ExportError`."""
    info = view.store.get(run_id)
    who = view.settings.labeller if labeller is None else labeller
    stored = view.store.labels.of_run(info.id, who)
    if not stored:
        raise ExportError(f"run {info.id} has no labels by '{who}' to export")
    sets = [str(entry.get("eval_set_id")) for entry in info.config.get("sets", [])]
    wanted = eval_set_id or next(
        s
        for s in [*sets, stored[0].case.eval_set_id]
        if any(label.case.eval_set_id == s for label in stored)
    )
    chosen = [label for label in stored if label.case.eval_set_id == wanted]
    if not chosen:
        raise ExportError(f"run {info.id} has no labels by '{who}' in eval set '{wanted}'")
    folder.mkdir(parents=True, exist_ok=True)
    extracted = view.store.extract_inputs(info.id, folder)
    position = sets.index(wanted) if wanted in sets else 0
    eval_set = next(
        (p for f, p in extracted if f.kind == "eval_set" and f.position == position), None
    )
    if eval_set is None:
        raise ExportError(f"run {info.id}: its eval set files were not recorded")
    criteria = info.config["sets"][position].get("criteria", {}) if sets else {}
    (eval_set.parent / "test_config.json").write_text(
        json.dumps({"criteria": criteria}, indent=2), encoding="utf-8"
    )
    traces = [p for f, p in extracted if f.kind == "traces"]
    source = traces[0] if len(traces) == 1 else _results_file(view, info.id, wanted, folder)
    target = folder / "labels.yaml"
    document = {
        "eval_set": eval_set.relative_to(folder).as_posix(),
        "traces": source.relative_to(folder).as_posix(),
        "labels": _entries(chosen),
    }
    header = f"# labels by {who} on run {info.id} ({wanted}), exported by assay view\n"
    target.write_text(
        header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    return target


def _entries(labels: Sequence[StoredLabel]) -> list[dict[str, Any]]:
    """The labels as the labels file lists them, one per unit (the latest run number's where
    a case was run more than once: its turns are the same traces)."""
    latest: dict[tuple[object, ...], StoredLabel] = {}
    for label in sorted(labels, key=lambda s: s.case.run):
        latest[(label.case.eval_id, *label.unit[4:])] = label
    entries = []
    for label in latest.values():
        entry: dict[str, Any] = {
            "case": label.case.eval_id,
            "invocation": label.invocation,
            "criterion": label.criterion,
        }
        if label.rubric:
            entry["rubric"] = label.rubric
        if label.sentence:
            entry["sentence"] = label.sentence
        entry["label"] = label.label
        if label.reason:
            entry["reason"] = label.reason
        entries.append(entry)
    return entries


def _results_file(view: View, run_id: str, eval_set_id: str, folder: Path) -> Path:
    """The run's results of one eval set, written as ``assay eval --output`` writes them (the
    traces of an agent run: a results file is read as traces)."""
    results = [r for r in view.store.results(run_id) if r.eval_set_id == eval_set_id]
    target = folder / "results" / "run.results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as out:
        for chunk in result_chunks(results):
            out.write(chunk)
    return target
