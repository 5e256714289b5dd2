"""``rubric_based_final_response_quality_v1`` and ``rubric_based_tool_use_quality_v1``: an LLM
judge gives a yes/no verdict per rubric, on the final answer or on the tool use.

Semantics are google-adk 2.13.0's:

* **Which rubrics.** The criterion's rubrics, then the rubrics of the invocation of type
  ``FINAL_RESPONSE_QUALITY`` (or ``TOOL_USE_QUALITY``), where an invocation's rubrics are its own,
  then the case's, then those of the expected invocation at the same position (ADK's evaluation
  service copies them in that order). Criterion rubrics are never filtered, and are not needed
  when the case or invocations carry some. A rubric id given twice, or an invocation left with
  no rubrics, makes the whole metric NOT_EVALUATED with the reason, before any judge call.
* **One sample.** The judge's answer gives, per rubric, an id, the property text, a rationale
  and a verdict; each is matched to a rubric by id, else by its text normalised as ADK 2.13 does
  (NFKC, plain quotes and dashes, collapsed whitespace, markdown decoration stripped, lower
  case); unmatched ones are dropped.
* **The vote.** Per rubric over the samples: the first "yes" if yeses outnumber the others, else
  the first "no" (a tie is "no"), else the first entry without a verdict. A sample whose call
  failed makes the invocation NOT_EVALUATED.
* **Scores.** An invocation's score is the mean of its voted rubric scores that have a verdict;
  the case's score is the mean of **all** invocations' rubric scores pooled (not the mean of the
  invocations' means), and ``overall_rubric_scores`` holds each rubric's mean over invocations.

Answers are read as assay's JSON (:mod:`assay.metrics.prompts.rubrics`) or as ADK's lines
(``ID:``, ``Property:``, ``Rationale:``, ``Verdict:``; when their counts differ nothing is read).
Departures from ADK:

* a verdict is read from its first word, ``yes`` or ``no``; anything else ("not applicable",
  "unknown") is no verdict, where ADK's substring test reads any text containing "no" as "no";
* each invocation's answers are matched against that invocation's rubrics. ADK 2.13 formats all
  prompts before parsing any answer and keeps one "effective rubrics" list on the evaluator, so
  every invocation is matched against the last invocation's rubrics, dropping verdicts on
  rubrics only earlier invocations have;
* the rubrics of expected invocations are matched by position only when the counts agree (ADK
  stops the whole run on a count mismatch); without such rubrics the metric still scores.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.config import RubricsBasedCriterion
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric, RubricScore
from assay.llm.judge import Judge
from assay.metrics import judge_inputs, rubric_single
from assay.metrics.base import (
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    not_evaluated,
    status_for,
)
from assay.metrics.judging import (
    Asker,
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
from assay.metrics.prompts import rubrics as prompts
from assay.metrics.rubric_single import one_rubric_per_call

FINAL_RESPONSE_QUALITY = "FINAL_RESPONSE_QUALITY"
TOOL_USE_QUALITY = "TOOL_USE_QUALITY"

AGGREGATED_RATIONALE = (
    "The mean of this rubric's scores over the invocations; each invocation's own entry carries "
    "the judge's rationale."
)
NO_VERDICT = "no rubric verdict found in the judge's answer"

# --------------------------------------------------------------------------- reading answers


@dataclass(frozen=True)
class RubricAnswer:
    """One rubric verdict as the judge wrote it, before it is matched to a rubric."""

    rubric_id: str | None
    property: str | None
    rationale: str | None
    score: float | None


_FIRST_WORD = re.compile(r"\W*(\w+)")


def verdict_score(verdict: object) -> float | None:
    """1.0 for a verdict whose first word is "yes", 0.0 for "no" (JSON booleans too), else None."""
    if isinstance(verdict, bool):
        return 1.0 if verdict else 0.0
    if not isinstance(verdict, str):
        return None
    match = _FIRST_WORD.match(verdict.lower())
    word = match.group(1) if match else ""
    return 1.0 if word == "yes" else 0.0 if word == "no" else None


def _text(value: object) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def _json_answers(text: str) -> list[RubricAnswer]:
    for obj in json_objects(text):
        entries = obj.get("verdicts")
        if not isinstance(entries, list):
            continue
        answers = [
            RubricAnswer(
                rubric_id=_text(entry.get("id", entry.get("rubric_id"))),
                property=_text(entry.get("property")),
                rationale=_text(entry.get("rationale")),
                score=verdict_score(entry.get("verdict")),
            )
            for entry in entries
            if isinstance(entry, dict)
        ]
        if answers:
            return answers
    return []


_ID_LINE = re.compile(r"^\s*ID: (.*)$", re.MULTILINE)
_PROPERTY_LINE = re.compile(r"^\s*Property: (.*)$", re.MULTILINE)
_RATIONALE = re.compile(r"(?<=Rationale: )(.*)")
_VERDICT = re.compile(r"(?<=Verdict: )(.*)")


def _line_answers(text: str) -> list[RubricAnswer]:
    """ADK's format: ``Property:`` lines (each after an optional ``ID:`` line), then
    ``Rationale:`` and ``Verdict:``, zipped in order; nothing when their counts differ."""
    properties = list(_PROPERTY_LINE.finditer(text))
    rationales = _RATIONALE.findall(text)
    verdicts = _VERDICT.findall(text)
    if not len(properties) == len(rationales) == len(verdicts):
        return []
    ids = list(_ID_LINE.finditer(text))
    answers = []
    previous = -1
    for prop, rationale, verdict in zip(properties, rationales, verdicts, strict=True):
        # The id is the last ID line between the previous property and this one.
        rubric_id = None
        for id_match in ids:
            if previous < id_match.start() < prop.start():
                rubric_id = id_match.group(1).strip() or None
        previous = prop.start()
        answers.append(
            RubricAnswer(
                rubric_id=rubric_id,
                property=prop.group(1).strip(),
                rationale=rationale.strip(),
                score=verdict_score(verdict),
            )
        )
    return answers


def parse_answers(text: str) -> list[RubricAnswer]:
    """The rubric verdicts in a judge's answer: assay's JSON, else ADK's lines."""
    return _json_answers(text) or _line_answers(text)


_TYPOGRAPHIC = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
_DECORATION = " *_`#>-\u2022\"'"
_SPACES = re.compile(r"\s+")


def normalize_text(text: str | None) -> str:
    """A rubric text as ADK 2.13 compares it: NFKC, plain quotes and dashes, one space between
    words, markdown decoration and quotes stripped from both ends, lower case."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC)
    return _SPACES.sub(" ", text).strip(_DECORATION).lower()


# --------------------------------------------------------------------------- one sample


@dataclass(frozen=True)
class SampleVerdicts:
    """One sample's verdicts matched to rubrics, in the judge's order (a rubric may repeat)."""

    scores: list[RubricScore]
    unmatched: list[str] = field(default_factory=list)


def _mean(scores: Sequence[RubricScore]) -> float | None:
    values = [s.score for s in scores if s.score is not None]
    return statistics.mean(values) if values else None


def _word(score: float | None) -> str:
    return "?" if score is None else "yes" if score == 1.0 else "no"


def match_answers(answers: Sequence[RubricAnswer], rubrics: Sequence[Rubric]) -> SampleVerdicts:
    """Each answer's rubric by id, else by normalised text; answers matching none are set aside."""
    by_id = {r.rubric_id: r for r in rubrics}
    by_text = {normalize_text(r.rubric_content.text_property): r for r in rubrics}
    scores: list[RubricScore] = []
    unmatched: list[str] = []
    for answer in answers:
        rubric = by_id.get(answer.rubric_id) if answer.rubric_id else None
        if rubric is None:
            rubric = by_text.get(normalize_text(answer.property))
        if rubric is None:
            unmatched.append(answer.rubric_id or answer.property or "")
            continue
        scores.append(
            RubricScore(rubric_id=rubric.rubric_id, rationale=answer.rationale, score=answer.score)
        )
    return SampleVerdicts(scores, unmatched)


def sample_parser(rubrics: Sequence[Rubric]) -> Callable[[str], Parsed[SampleVerdicts]]:
    """The parser for one invocation's samples, given its rubrics."""

    def parse(text: str) -> Parsed[SampleVerdicts]:
        answers = parse_answers(text)
        if not answers:
            return Parsed(None, NO_VERDICT)
        verdicts = match_answers(answers, rubrics)
        score = _mean(verdicts.scores)
        reason: str | None = None
        if not verdicts.scores:
            named = ", ".join(repr(u[:60]) for u in verdicts.unmatched[:5])
            reason = f"the judge's verdicts match none of the rubrics: {named}"
        elif score is None:
            reason = "no yes/no verdict in the judge's answer"
        return Parsed(
            verdicts,  # kept even without a match, for the unmatched list in the notes
            reason=reason,
            score=score,
            verdict=", ".join(f"{s.rubric_id}: {_word(s.score)}" for s in verdicts.scores) or None,
        )

    return parse


# --------------------------------------------------------------------------- vote and summary


def vote(samples: Sequence[SampleVerdicts | None], share: float | None = None) -> list[RubricScore]:
    """One score per rubric by majority over the samples' entries (or a votes profile's
    ``share``), rubrics in order of first appearance; ties go to "no" (see
    :func:`~assay.metrics.judging.majority_index`)."""
    entries: dict[str, list[RubricScore]] = {}
    for sample in samples:
        for score in sample.scores if sample is not None else []:
            entries.setdefault(score.rubric_id, []).append(score)
    return [found[majority_index([s.score for s in found], share)] for found in entries.values()]


def summarize(
    per_invocation: Sequence[PerInvocationResult],
) -> tuple[float | None, list[RubricScore]]:
    """The case's score (the mean of every invocation's rubric scores pooled) and each rubric's
    mean over the invocations."""
    pooled: list[RubricScore] = []
    by_id: dict[str, list[RubricScore]] = {}
    for result in per_invocation:
        for score in result.rubric_scores or []:
            pooled.append(score)
            by_id.setdefault(score.rubric_id, []).append(score)
    overall = [
        RubricScore(rubric_id=rubric_id, score=_mean(scores), rationale=AGGREGATED_RATIONALE)
        for rubric_id, scores in by_id.items()
    ]
    return _mean(pooled), overall


# --------------------------------------------------------------------------- which rubrics


def invocation_rubrics(
    actual: Invocation, case: EvalCase, expected: Invocation | None
) -> list[Rubric] | str:
    """The invocation's own rubrics, then the case's, then the expected invocation's (all
    types), or the reason they clash."""
    merged = list(actual.rubrics or [])
    seen = {r.rubric_id for r in merged}
    sources = (
        ("the case", case.rubrics),
        ("the expected invocation", expected and expected.rubrics),
    )
    for source, rubrics in sources:
        for rubric in rubrics or []:
            if rubric.rubric_id in seen:
                return f"rubric id '{rubric.rubric_id}' is given twice (again by {source})"
            seen.add(rubric.rubric_id)
            merged.append(rubric)
    return merged


def merged_rubrics(
    actual: Sequence[Invocation], expected: Sequence[Invocation] | None, case: EvalCase
) -> list[list[Rubric]] | str:
    """Each actual invocation's rubrics of every type (:func:`invocation_rubrics`, the expected
    invocation's only where the counts pair), or the reason they cannot be put together."""
    if expected is not None and len(expected) != len(actual):
        if any(inv.rubrics for inv in expected):
            return (
                f"expected {len(expected)} invocations, got {len(actual)}: the expected "
                "invocations' rubrics cannot be matched to the actual ones"
            )
        expected = None
    out = []
    for index, inv in enumerate(actual):
        merged = invocation_rubrics(inv, case, expected[index] if expected else None)
        if isinstance(merged, str):
            return f"invocation {index + 1}: {merged}" if len(actual) > 1 else merged
        out.append(merged)
    return out


def effective_rubrics(
    criterion_rubrics: Sequence[Rubric], from_invocation: Sequence[Rubric], rubric_type: str
) -> list[Rubric] | str:
    """The criterion's rubrics and the invocation's of ``rubric_type``, or why there are none."""
    chosen: dict[str, Rubric] = {}
    candidates = [("the criterion", r) for r in criterion_rubrics] + [
        ("the eval set", r) for r in from_invocation if r.type == rubric_type
    ]
    for source, rubric in candidates:
        if rubric.rubric_id in chosen:
            return f"rubric id '{rubric.rubric_id}' is given twice (again by {source})"
        chosen[rubric.rubric_id] = rubric
    if not chosen:
        return (
            "no rubrics: the criterion has none, and neither the case nor the invocation has "
            f"any of type {rubric_type}"
        )
    return list(chosen.values())


# --------------------------------------------------------------------------- the metrics


@dataclass
class _Judged:
    result: PerInvocationResult
    notes: InvocationNotes
    outcomes: list[SampleOutcome[SampleVerdicts]]


def _rubric_details(
    rubrics: Sequence[Rubric],
    voted: Sequence[RubricScore],
    outcomes: Sequence[SampleOutcome[SampleVerdicts]],
) -> list[dict[str, Any]]:
    chosen = {score.rubric_id: score for score in voted}
    out = []
    for rubric in rubrics:
        given = [
            s.score
            for o in outcomes
            if o.value is not None
            for s in o.value.scores
            if s.rubric_id == rubric.rubric_id
        ]
        score = chosen.get(rubric.rubric_id)
        out.append(
            {
                "rubric_id": rubric.rubric_id,
                "property": rubric.rubric_content.text_property,
                "score": score.score if score else None,
                "verdict": _word(score.score) if score and score.score is not None else None,
                "rationale": score.rationale if score else None,
                "votes": {
                    "yes": sum(1 for s in given if s == 1.0),
                    "no": sum(1 for s in given if s is not None and s != 1.0),
                    "none": sum(1 for s in given if s is None),
                },
            }
        )
    return out


class RubricMetricBase:
    """What both rubric metrics share; subclasses give the rubric type and the prompt."""

    info: ClassVar[MetricInfo]
    rubric_type: ClassVar[str]
    system: ClassVar[str]

    def __init__(self, criterion: RubricsBasedCriterion, judge: Judge) -> None:
        self.criterion = criterion
        self.judge = judge

    def prompt(self, actual: Invocation, rubrics: Sequence[Rubric]) -> str:
        """The user message for one invocation (the system message is ``self.system``)."""
        raise NotImplementedError

    def single_answer(self, actual: Invocation) -> str | None:
        """The final answer a one-rubric question shows (None: the rubrics are not about it)."""
        return None

    def rubrics_for(
        self, actual: Sequence[Invocation], expected: Sequence[Invocation] | None, case: EvalCase
    ) -> list[list[Rubric]] | str:
        """Each invocation's effective rubrics, or the reason the metric cannot run."""
        merged = merged_rubrics(actual, expected, case)
        if isinstance(merged, str):
            return merged
        out = []
        for index, rubrics in enumerate(merged):
            chosen = effective_rubrics(self.criterion.rubrics, rubrics, self.rubric_type)
            if isinstance(chosen, str):
                return f"invocation {index + 1}: {chosen}" if len(actual) > 1 else chosen
            out.append(chosen)
        return out

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Judge every invocation against its rubrics (concurrently) and pool the scores."""
        if not actual:
            return not_evaluated(
                self.info.name, self.criterion, actual, "the case has no invocations"
            )
        rubrics = self.rubrics_for(actual, expected, case)
        if isinstance(rubrics, str):
            return not_evaluated(self.info.name, self.criterion, actual, rubrics, expected)
        paired = expected if expected is not None and len(expected) == len(actual) else None
        limit = sample_limit(self.criterion)
        semaphore = asyncio.Semaphore(limit) if limit else None
        judged = await gather_in_order(
            [
                self._judge_one(
                    inv, paired[i] if paired else None, rubrics[i], case.eval_id, semaphore
                )
                for i, inv in enumerate(actual)
            ]
        )
        notes = MetricNotes(
            judge_model=self.judge.model,
            judge_source=self.judge.source,
            usage=total_usage([o for j in judged for o in j.outcomes]),
            per_invocation=[j.notes for j in judged],
        )
        return self._overall([j.result for j in judged], notes)

    async def _judge_one(
        self,
        actual: Invocation,
        expected: Invocation | None,
        rubrics: list[Rubric],
        case_id: str,
        semaphore: asyncio.Semaphore | None,
        user: str | None = None,
    ) -> _Judged:
        """Judge one invocation; ``user`` replaces its user message (a whole conversation)."""
        request = judge_request(
            self.criterion,
            system=self.system,
            user=self.prompt(actual, rubrics) if user is None else user,
            schema=prompts.schema(rubrics),
            schema_name=prompts.SCHEMA_NAME,
        )
        asker: Asker = self.judge
        if user is None and one_rubric_per_call(self.judge):
            asked = rubric_single.questions(actual, rubrics, self.single_answer(actual))
            asker = rubric_single.PerRubricAsker(self.judge, asked)
        outcomes = await ask_samples(
            asker,
            request,
            num_samples=self.criterion.judge_model_options.num_samples,
            case_id=case_id,
            parse=sample_parser(rubrics),
            semaphore=semaphore,
        )
        failure = call_failure(outcomes)
        voted = [] if failure else vote([o.value for o in outcomes], self.judge.vote_share)
        score = _mean(voted)
        reason = failure
        if reason is None and not voted:
            reason = f"no verdict on any rubric in the {len(outcomes)} judge answers"
        elif reason is None and score is None:
            reason = "the judge gave no yes/no verdict for any rubric"
        result = PerInvocationResult(
            actual,
            expected,
            score,
            status_for(score, self.criterion.threshold),
            rubric_scores=None if failure else voted,
        )
        details: dict[str, Any] = {"rubrics": _rubric_details(rubrics, voted, outcomes)}
        unmatched = sorted({u for o in outcomes if o.value is not None for u in o.value.unmatched})
        if unmatched:
            details["unmatched"] = unmatched
        notes = InvocationNotes(
            invocation_id=actual.invocation_id,
            samples=[o.note for o in outcomes],
            reason=reason,
            details=details,
        )
        return _Judged(result, notes, outcomes)

    def _overall(
        self, per_invocation: list[PerInvocationResult], notes: MetricNotes
    ) -> MetricResult:
        score, overall_rubrics = summarize(per_invocation)
        reason = None
        if score is None:
            first = next((n.reason for n in notes.per_invocation if n.reason), None)
            reason = f"no rubric was scored: {first}" if first else "no rubric was scored"
        return MetricResult(
            metric_name=self.info.name,
            criterion=self.criterion,
            score=score,
            status=status_for(score, self.criterion.threshold),
            per_invocation=per_invocation,
            reason=reason,
            rubric_scores=overall_rubrics,
            notes=notes,
        )


class RubricFinalResponseQualityMetric(RubricMetricBase):
    """An LLM judge checks each final response against yes/no rubrics."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="rubric_based_final_response_quality_v1",
        description=(
            "Mean of an LLM judge's yes/no verdicts on the final response against the rubrics."
        ),
        takes_rubrics=True,
        needs_judge=True,
    )
    rubric_type: ClassVar[str] = FINAL_RESPONSE_QUALITY
    system: ClassVar[str] = prompts.RUBRIC_SYSTEM

    def single_answer(self, actual: Invocation) -> str | None:
        """The final answer, as the default prompt shows it."""
        include = self.criterion.include_intermediate_responses_in_final
        return judge_inputs.final_text(actual, include_intermediate=include)

    def prompt(self, actual: Invocation, rubrics: Sequence[Rubric]) -> str:
        """Instructions, tools, the user prompt, tool steps, grounding, final answer, rubrics."""
        include = self.criterion.include_intermediate_responses_in_final
        return prompts.render_final_response(
            developer_instructions=judge_inputs.developer_instructions(actual),
            available_tools=judge_inputs.tool_declarations_json(actual.app_details),
            user_prompt=judge_inputs.user_text(actual),
            response_steps=judge_inputs.tool_steps_json(actual),
            grounding_metadata=judge_inputs.grounding_metadata_json(actual),
            final_answer=judge_inputs.final_text(actual, include_intermediate=include),
            rubrics=rubrics,
        )


class RubricToolUseQualityMetric(RubricMetricBase):
    """An LLM judge checks each invocation's tool use against yes/no rubrics."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="rubric_based_tool_use_quality_v1",
        description=(
            "Mean of an LLM judge's yes/no verdicts on the agent's tool calls against the rubrics."
        ),
        takes_rubrics=True,
        needs_judge=True,
    )
    rubric_type: ClassVar[str] = TOOL_USE_QUALITY
    system: ClassVar[str] = prompts.RUBRIC_SYSTEM

    def prompt(self, actual: Invocation, rubrics: Sequence[Rubric]) -> str:
        """Instructions, tools, the user prompt, tool steps and rubrics (no final answer)."""
        return prompts.render_tool_use(
            developer_instructions=judge_inputs.developer_instructions(actual),
            available_tools=judge_inputs.tool_declarations_json(actual.app_details),
            user_prompt=judge_inputs.user_text(actual),
            response_steps=judge_inputs.tool_steps_json(actual),
            rubrics=rubrics,
        )
