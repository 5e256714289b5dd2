"""People's labels on a recorded run of an eval set: the file format, and its loader.

An eval set alone does not hold what a judge reads (its conversations are the expected
invocations; a scenario case has none until it is run), so labels are on a recorded run: the
file names the eval set and the traces it labels (``--traces`` format, or a results file), each
relative to the labels file, and lists one label per judged unit. YAML or JSON::

    eval_set: travel.evalset.json
    traces: run.json
    labels:
      - {case: forecast_paris, invocation: 1, criterion: final_response_match_v2,
         label: valid, reason: tomorrow's forecast, as asked}
      - {case: book_flight_lisbon, invocation: 2,
         criterion: rubric_based_final_response_quality_v1,
         rubric: answers_the_question, label: "yes"}
      - {case: convert_currency, invocation: 1, criterion: hallucinations_v1,
         sentence: 1, label: supported}

``invocation`` is the turn's number from 1 or its ``invocation_id``; ``rubric`` (rubric criteria)
is the id of a rubric that applies to that turn; ``sentence`` (hallucinations) is its number from
1 in the answer as the judge splits it, or its text, so it can only be matched when the judge has
run; without it, a hallucinations label is on the whole answer (``grounded``/``ungrounded``).
Every other reference is checked here, all at once, each problem with the file and the JSON
path (:class:`~assay.errors.LabelsError`, exit 2).

The criteria judged once on the whole conversation (``last_turn`` in their metric's
:class:`~assay.metrics.declaration.Labelling`) are labelled on the
case's **last** turn, where the metric puts the conversation's score (a label on another turn is
an error naming the last one):

* ``rubric_based_multi_turn_trajectory_quality_v1``: per rubric, ``yes``/``no``, like the
  single-turn rubric criteria; the rubric must be one the metric asks about for the case
  (:meth:`~assay.metrics.rubric_multi_turn.RubricMultiTurnTrajectoryQualityMetric.last_rubrics`:
  the criterion's, then the ``TRAJECTORY_QUALITY`` rubrics of the last turn, the case and the
  last expected turn). The judge's label is its verdict on that rubric.
* ``multi_turn_task_success_v1``, ``multi_turn_trajectory_quality_v1``,
  ``multi_turn_tool_use_quality_v1``: per case, no ``rubric``: ``yes`` when the conversation
  meets the metric (the task was achieved; the path was good; the tools were used well), else
  ``no``. The judge's label is whether the conversation passes as the eval set's config sets it:
  its score (the share of the metric's five fixed rubrics it found met) ``>=`` the criterion's
  threshold. People label the conversation, not the five rubrics (which are assay's, not the
  metric's definition), so the figure measures what ``assay eval`` reports, pass or fail.

``response_evaluation_score`` is labelled per turn, ``coherent``/``incoherent``; the judge's
label is ``coherent`` when its 1-5 rating of that turn is at least :data:`COHERENT_RATING` (3,
"somewhat coherent"), whatever the criterion's threshold (which applies to the mean over the
turns). Its case needs the expected invocations the metric pairs with the turns (a static
conversation as long as the recorded run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from assay._internal.files import load_data
from assay.agreement.stats import FEW
from assay.config import EvalConfig, RubricsBasedCriterion
from assay.errors import (
    InputError,
    LabelsError,
    Problem,
    format_path,
    keys_at,
    problems_from_validation,
)
from assay.evalset import EvalCase, Invocation, load_eval_set
from assay.evalset.io import LoadedEvalSet
from assay.llm.base import LlmRequest, LlmResponse
from assay.llm.judge import Judge
from assay.metrics.declaration import Labelling
from assay.metrics.registry import declaration_of, declarations
from assay.metrics.rubrics import effective_rubrics, invocation_rubrics
from assay.results import Traces, load_traces
from assay.runner.jobs import config_for


def labelling(criterion: str) -> Labelling | None:
    """How people label ``criterion``, as its metric declares it; None: it takes no labels."""
    declared = declaration_of(criterion)
    return declared.labelling if declared is not None else None


class _Labels(Mapping[str, tuple[str, ...]]):
    """Per criterion that takes them, labels read off its declaration (never a table here)."""

    def __init__(self, pick: Callable[[Labelling], tuple[str, ...]]) -> None:
        self._pick = pick

    def __getitem__(self, criterion: str) -> tuple[str, ...]:
        found = labelling(criterion)
        if found is None or not self._pick(found):
            raise KeyError(criterion)
        return self._pick(found)

    def __iter__(self) -> Iterator[str]:
        return iter([d.name for d in declarations() if d.labelling and self._pick(d.labelling)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


LABEL_SETS: Mapping[str, tuple[str, ...]] = _Labels(lambda found: found.labels)
"""The labels a person may give per criterion; the first is the positive one."""

ANSWER_LABELS: Mapping[str, tuple[str, ...]] = _Labels(lambda found: found.answer_labels)
"""Criteria labelled per sentence that may be labelled per answer instead (no ``sentence``):
grounded when every sentence is supported or needs no support (a score of 1.0)."""


def label_set(criterion: str, *, sentence: bool = True) -> tuple[str, ...]:
    """The labels of ``criterion``: per sentence (when it has sentences and ``sentence``), else
    per answer or turn. The first is the positive one."""
    if not sentence and criterion in ANSWER_LABELS:
        return ANSWER_LABELS[criterion]
    return LABEL_SETS[criterion]


COHERENT_RATING = 3
"""The least 1-5 rating that is the coherence judge saying ``coherent`` (its declaration's
label threshold)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Label(_Strict):
    """One person's label on one judged unit of the run."""

    case: str
    invocation: StrictInt | str
    criterion: str
    label: str
    rubric: str | None = None
    sentence: StrictInt | str | None = None
    reason: str | None = None


class LabelsFile(_Strict):
    """A labels file as written."""

    eval_set: str
    traces: str
    labels: list[Label] = Field(min_length=1)


@dataclass(frozen=True)
class LabelledRun:
    """A labels file with what it labels, every reference checked."""

    path: Path
    loaded: LoadedEvalSet
    config: EvalConfig
    traces: Traces
    labels: tuple[Label, ...]
    warnings: tuple[str, ...]
    """Criteria with fewer labels than an interval needs to mean much."""

    def invocations(self, case: str) -> list[Invocation]:
        """The recorded turns of a case (checked to exist for every labelled case)."""
        return self.traces.get(self.loaded.eval_set.eval_set_id, case) or []


def load_labels(path: str | Path) -> LabelledRun:
    """Read a labels file and check it against its eval set, traces and config; raises
    :class:`~assay.errors.InputError` (a :class:`LabelsError` for the labels file's own problems)
    listing every problem found."""
    file = Path(path)
    data = load_data(file, LabelsError)
    try:
        parsed = LabelsFile.model_validate(data)
    except ValidationError as exc:
        problems = problems_from_validation(exc, str(file), data, (), _keys)
        raise LabelsError(problems) from None
    try:
        loaded = load_eval_set(file.parent / parsed.eval_set)
        config, _ = config_for(loaded.path)
        traces = load_traces([file.parent / parsed.traces])
    except InputError as exc:
        where = Problem(str(file), "", "its eval set, config or traces cannot be used")
        raise InputError([where, *exc.problems]) from None
    run = LabelledRun(file, loaded, config, traces, tuple(parsed.labels), ())
    problems = [p for i, label in enumerate(parsed.labels) for p in _check(run, i, label)]
    problems += _repeated(file, parsed.labels)
    problems += _mixed(file, parsed.labels)
    if problems:
        raise LabelsError(problems)
    counts = Counter(label.criterion for label in parsed.labels)
    warnings = tuple(
        f"{criterion}: {count} label(s); below {FEW} the agreement interval is too wide to mean much"
        for criterion, count in counts.items()
        if count < FEW
    )
    return LabelledRun(file, loaded, config, traces, tuple(parsed.labels), warnings)


def _keys(loc: tuple[str | int, ...]) -> list[str]:
    """The keys valid where an unknown key was found ("did you mean" hints)."""
    return keys_at(LabelsFile, loc)


def _check(run: LabelledRun, index: int, label: Label) -> list[Problem]:
    """Everything wrong with one label, each at its JSON path."""

    def problem(key: str, message: str) -> Problem:
        return Problem(str(run.path), format_path(["labels", index, key]), message)

    found: list[Problem] = []
    if labelling(label.criterion) is None:
        known = ", ".join(LABEL_SETS)
        return [problem("criterion", f"no labels are taken for '{label.criterion}' ({known})")]
    if label.criterion not in run.config.criteria:
        used = ", ".join(run.config.criteria) or "none"
        found.append(
            problem("criterion", f"the eval set's config does not use it (criteria: {used})")
        )
    allowed = label_set(label.criterion, sentence=label.sentence is not None)
    if label.label not in allowed:
        found.append(problem("label", f"expected {' or '.join(allowed)}; got '{label.label}'"))
    how = labelling(label.criterion)
    rubric_type = how.rubric_type if how is not None else None
    if (rubric_type is None) != (label.rubric is None):
        need = "needs a 'rubric' (a rubric id)" if rubric_type else "takes no 'rubric'"
        found.append(problem("rubric", f"{label.criterion} {need}"))
    sentences = how is not None and how.unit == "sentence"
    if label.sentence is not None and not sentences:
        found.append(problem("sentence", f"{label.criterion} takes no 'sentence'"))
    case = next((c for c in run.loaded.eval_set.eval_cases if c.eval_id == label.case), None)
    if case is None:
        return [*found, problem("case", f"no case '{label.case}' in {run.loaded.path}")]
    turns = run.invocations(label.case)
    if not turns:
        return [*found, problem("case", f"no trace for case '{label.case}' in the traces file")]
    turn = turn_index(turns, label.invocation)
    if turn is None:
        ids = ", ".join(inv.invocation_id for inv in turns if inv.invocation_id)
        shown = f" or one of its ids ({ids})" if ids else ""
        message = f"the case has {len(turns)} recorded turn(s): give 1 to {len(turns)}{shown}"
        return [*found, problem("invocation", message)]
    return found + [
        problem(key, message) for key, message in _at_turn(run, label, case, turns, turn)
    ]


def _at_turn(
    run: LabelledRun, label: Label, case: EvalCase, turns: list[Invocation], turn: int
) -> list[tuple[str, str]]:
    """What is wrong with a label given its turn: ``(key, message)`` each."""
    how = labelling(label.criterion)
    if how is None:
        return []
    if how.last_turn and turn != len(turns) - 1:
        last = turns[-1].invocation_id
        named = f" (or its id, {last})" if last else ""
        message = (
            f"{label.criterion} is judged once on the whole conversation, on its last turn: "
            f"give {len(turns)}{named}"
        )
        return [("invocation", message)]
    found = []
    if how.needs_expected and (case.conversation is None or len(case.conversation) != len(turns)):
        message = (
            f"{label.criterion} needs the case's expected invocations, one per recorded turn "
            f"({len(turns)}); the case has {len(case.conversation or [])}"
        )
        found.append(("case", message))
    rubric_type = how.rubric_type
    if rubric_type is None or label.rubric is None:
        return found
    if how.last_turn:
        rubrics = conversation_rubric_ids(run.config, case, turns, label.criterion)
        where = "the conversation"
    else:
        rubrics = _rubric_ids(run.config, label.criterion, case, turns, turn, rubric_type)
        where = "this turn"
    if isinstance(rubrics, str):
        found.append(("rubric", f"the metric cannot judge this case: {rubrics}"))
    elif label.rubric not in rubrics:
        listed = ", ".join(rubrics) or "none"
        found.append(("rubric", f"no rubric '{label.rubric}' applies to {where} ({listed})"))
    return found


def turn_index(turns: list[Invocation], invocation: int | str) -> int | None:
    """The 0-based index of the labelled turn, or None when there is no such turn."""
    if isinstance(invocation, int):
        return invocation - 1 if 1 <= invocation <= len(turns) else None
    return next((i for i, inv in enumerate(turns) if inv.invocation_id == invocation), None)


def _rubric_ids(
    config: EvalConfig,
    criterion: str,
    case: EvalCase,
    turns: list[Invocation],
    turn: int,
    rubric_type: str,
) -> list[str]:
    """The ids of the rubrics the metric would ask about on this turn."""
    configured = config.criteria.get(criterion)
    own = configured.rubrics if isinstance(configured, RubricsBasedCriterion) else []
    expected = case.conversation
    paired = expected[turn] if expected is not None and len(expected) == len(turns) else None
    merged = invocation_rubrics(turns[turn], case, paired)
    chosen = effective_rubrics(own, merged if isinstance(merged, list) else [], rubric_type)
    return [r.rubric_id for r in chosen] if isinstance(chosen, list) else []


class _NoJudge:
    """A judge client never called: the metric is built only to ask which rubrics it uses."""

    model = "none"

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        raise AssertionError("no judge is called to check labels")


def conversation_rubric_ids(
    config: EvalConfig,
    case: EvalCase,
    turns: list[Invocation],
    criterion_name: str = "rubric_based_multi_turn_trajectory_quality_v1",
) -> list[str] | str:
    """The ids of the rubrics a rubric criterion judged once on the whole conversation asks
    about (``rubric_based_multi_turn_trajectory_quality_v1``: its metric's ``last_rubrics``), as
    the metric picks them; or why it cannot judge the case."""
    declared = declaration_of(criterion_name)
    if declared is None:
        return f"no metric is declared as {criterion_name}"
    configured = config.criteria.get(criterion_name)
    criterion = (
        configured
        if isinstance(configured, RubricsBasedCriterion)
        else RubricsBasedCriterion(threshold=configured.threshold if configured else 0.5)
    )
    metric = declared.create(criterion, Judge(_NoJudge(), criterion_name))
    last_rubrics = getattr(metric, "last_rubrics", None)
    if last_rubrics is None:
        return f"{criterion_name} picks no rubrics for the conversation"
    chosen = last_rubrics(turns, case.conversation, case)
    return chosen if isinstance(chosen, str) else [r.rubric_id for r in chosen]


def _repeated(file: Path, labels: list[Label]) -> list[Problem]:
    """A unit labelled twice (the second time, at its path)."""
    seen: dict[tuple[object, ...], int] = {}
    found = []
    for index, label in enumerate(labels):
        unit = (label.case, label.invocation, label.criterion, label.rubric, label.sentence)
        if unit in seen:
            path = format_path(["labels", index])
            found.append(Problem(str(file), path, f"labels the same unit as labels[{seen[unit]}]"))
        else:
            seen[unit] = index
    return found


def _mixed(file: Path, labels: list[Label]) -> list[Problem]:
    """A criterion labelled both per sentence and per answer (their figures cannot be pooled)."""
    first: dict[str, tuple[bool, int]] = {}
    found = []
    for index, label in enumerate(labels):
        if label.criterion not in ANSWER_LABELS:  # labelled per sentence or per answer
            continue
        by_sentence = label.sentence is not None
        seen = first.setdefault(label.criterion, (by_sentence, index))
        if seen[0] != by_sentence:
            how = "per sentence" if by_sentence else "per answer"
            other = "per answer" if by_sentence else "per sentence"
            message = (
                f"labels {label.criterion} {how}, but labels[{seen[1]}] labels it {other}; "
                "a file labels a criterion one way"
            )
            found.append(Problem(str(file), format_path(["labels", index]), message))
    return found
