"""The HTML report: one self-contained file (inline CSS, inline SVG, a little vanilla JS).

The page has a summary per eval set and over the run (pass rate, mean score per metric, score
histograms drawn as SVG), a case list filterable by text and status, and per case, opened on
click, the conversation, the actual and expected tool calls side by side with mismatches marked,
every judge sample with its verdict and raw answer, rubric tables, hallucination sentence labels
and token usage.

The summary and each case's one-line header are HTML, through jinja2's autoescaping. The cases'
bodies (everything shown once a case is opened) are JSON, one line per case, in a single inert
``<script type="application/json">`` block, with ``<``, ``>`` and ``&`` written as ``\\u`` escapes
so that no text can end the block; the page's script builds a body the first time its case is
opened, with ``createElement`` and ``textContent`` only (never ``innerHTML``): the text of agents,
users and judges never becomes markup. Table headings and markup live once in the script instead
of once per case, and Chromium reads the block as one text node instead of building every case's
DOM: a page of 10,000 cases is about half the bytes and loads several times faster.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from assay._files import write_atomically
from assay._version import __version__
from assay.evalset.content import content_text
from assay.evalset.invocation import IntermediateData, Invocation
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.metrics.notes import InvocationNotes, MetricNotes
from assay.report.case_json import case_body, json_for_script
from assay.report.judge_agreement import MEASURE_HINT, JudgedMetric, interval, judged_metrics
from assay.report.rows import (
    CallRow,
    Case,
    Judged,
    JudgedInvocation,
    MetricRow,
    Sample,
    Turn,
    UsageRow,
)
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult, JudgeInfo

_TEMPLATES = Path(__file__).resolve().parent / "templates"
_BINS = 10
_CHART_W, _CHART_H = 200, 60


@dataclass(frozen=True)
class Bar:
    """One histogram bin, with its SVG geometry."""

    x: float
    y: float
    width: float
    height: float
    count: int
    label: str


@dataclass(frozen=True)
class Histogram:
    """A score distribution as SVG bars over ``[low, high]``."""

    bars: list[Bar]
    low: str
    high: str
    width: int = _CHART_W
    height: int = _CHART_H


@dataclass(frozen=True)
class MetricSummary:
    """One metric over a group of cases."""

    name: str
    scored: int
    mean: str
    passed: int
    failed: int
    not_evaluated: int
    histogram: Histogram | None


@dataclass(frozen=True)
class JudgeRow:
    """A metric's judge in words, how far it agrees with people, and the smoke-test warning
    (empty when there is none)."""

    metric: str
    judge: str
    agreement: str = ""
    detail: str = ""
    warning: str = ""


@dataclass(frozen=True)
class Summary:
    """A group of cases (an eval set, or the whole run)."""

    title: str
    path: str | None
    total: int
    passed: int
    failed: int
    not_evaluated: int
    pass_rate: str
    duration: str
    metrics: list[MetricSummary]
    judges: list[JudgeRow]
    usage: list[UsageRow]


@dataclass
class _Scores:
    values: list[float] = field(default_factory=list)
    statuses: list[EvalStatus] = field(default_factory=list)


def _score(score: float | None, informational: bool = False) -> str:
    if score is None:
        return "-"
    return f"{score:.6g}" if informational else f"{score:.4f}"


def _status(status: EvalStatus) -> str:
    return status.name.lower().replace("_", "-")


def _rate(passed: int, total: int) -> str:
    return "-" if total == 0 else f"{100 * passed / total:.1f}%"


def histogram(values: Sequence[float]) -> Histogram | None:
    """Ten bins over [0, 1] (or over the values' range when they leave it); None when empty."""
    if not values:
        return None
    low, high = (0.0, 1.0) if min(values) >= 0 and max(values) <= 1 else (min(values), max(values))
    span = high - low
    counts = [0] * _BINS
    for value in values:
        index = 0 if span == 0 else min(int((value - low) / span * _BINS), _BINS - 1)
        counts[index] += 1
    tallest = max(counts)
    width = _CHART_W / _BINS
    bars = []
    for i, count in enumerate(counts):
        height = 0.0 if tallest == 0 else (_CHART_H - 2) * count / tallest
        start = low + span * i / _BINS
        end = low + span * (i + 1) / _BINS
        bars.append(
            Bar(
                x=round(i * width + 1, 2),
                y=round(_CHART_H - height, 2),
                width=round(width - 2, 2),
                height=round(height, 2),
                count=count,
                label=f"{start:.4g}–{end:.4g}: {count}",
            )
        )
    return Histogram(bars, f"{low:.4g}", f"{high:.4g}")


def _metric_summaries(cases: Iterable[EvalCaseResult]) -> list[MetricSummary]:
    by_metric: dict[str, _Scores] = {}
    for case in cases:
        for row in case.overall_eval_metric_results:
            if row.metric_name in case.assay.not_applicable:
                continue
            scores = by_metric.setdefault(row.metric_name, _Scores())
            scores.statuses.append(row.eval_status)
            if row.score is not None and math.isfinite(row.score):
                scores.values.append(row.score)
    out = []
    for name, scores in by_metric.items():
        mean = sum(scores.values) / len(scores.values) if scores.values else None
        informational = all(s is EvalStatus.INFORMATIONAL for s in scores.statuses)
        out.append(
            MetricSummary(
                name=name,
                scored=len(scores.values),
                mean=_score(mean, informational),
                passed=scores.statuses.count(EvalStatus.PASSED),
                failed=scores.statuses.count(EvalStatus.FAILED),
                not_evaluated=scores.statuses.count(EvalStatus.NOT_EVALUATED),
                histogram=histogram(scores.values),
            )
        )
    return out


def _usage_row(who: str, usage: TokenUsage) -> UsageRow:
    return UsageRow(
        who,
        f"{usage.calls:,}",
        f"{usage.prompt_tokens:,}",
        f"{usage.completion_tokens:,}",
        f"{usage.cache_hits:,}",
    )


def _summary(title: str, results: Sequence[EvalSetResult]) -> Summary:
    cases = [case for result in results for case in result.eval_case_results]
    statuses = [case.final_eval_status for case in cases]
    judges: dict[str, JudgeRow] = {}
    usage: dict[str, TokenUsage] = {}
    duration = 0.0
    for result in results:
        if result.assay is None:
            continue
        duration += result.assay.duration_s
        for metric, info in result.assay.judges.items():
            described = info.describe()
            judges[metric] = JudgeRow(
                metric, described or f"no judge: {info.unavailable or 'unavailable'}"
            )
        for judged in judged_metrics(result):
            judges[judged.metric] = _judge_row(judged)
        for metric, used in result.assay.usage.items():
            usage[metric] = usage.get(metric, TokenUsage()) + used
    only = results[0].assay if len(results) == 1 else None
    return Summary(
        title=title,
        path=only.eval_set_path if only else None,
        total=len(cases),
        passed=statuses.count(EvalStatus.PASSED),
        failed=statuses.count(EvalStatus.FAILED),
        not_evaluated=statuses.count(EvalStatus.NOT_EVALUATED),
        pass_rate=_rate(statuses.count(EvalStatus.PASSED), len(cases)),
        duration=f"{duration:.1f} s",
        metrics=_metric_summaries(cases),
        judges=[judges[metric] for metric in sorted(judges)],
        usage=[_usage_row(who, used) for who, used in sorted(usage.items())],
    )


def _judge_row(judged: JudgedMetric) -> JudgeRow:
    found = judged.agreement
    if found is None:
        return JudgeRow(judged.metric, judged.judge, judged.text, MEASURE_HINT)
    span = interval(found)
    detail = (
        f"kappa 95% interval {span}; " if span else ""
    ) + f"prompt {found.prompt_version}, measured {found.card_date}"
    if found.labels_file:
        detail += f" on {found.labels_file}"
    return JudgeRow(judged.metric, judged.judge, judged.text, detail, judged.warning or "")


def _call_text(name: str | None, args: dict[str, Any] | None) -> str:
    shown = "" if args is None else json.dumps(args, ensure_ascii=False, sort_keys=True)
    return f"{name or '?'}({shown})"


def trajectory(actual: Invocation, expected: Invocation | None) -> list[CallRow]:
    """Actual and expected tool calls position by position; a row matches when both calls have
    the same name and arguments."""
    got = [(c.name, c.args) for c in actual.tool_calls()]
    want = [(c.name, c.args) for c in expected.tool_calls()] if expected else []
    rows = []
    for i in range(max(len(got), len(want))):
        a = got[i] if i < len(got) else None
        e = want[i] if i < len(want) else None
        rows.append(
            CallRow(
                actual=_call_text(*a) if a else None,
                expected=_call_text(*e) if e else None,
                match=expected is None or a == e,
            )
        )
    return rows


def _steps(invocation: Invocation) -> list[str]:
    """The agent's intermediate text (not its tool calls), in order."""
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, IntermediateData):
        return [
            f"{author}: {text}"
            for author, parts in data.intermediate_responses
            if (text := "\n".join(p.text for p in parts if p.text))
        ]
    return [
        f"{event.author}: {text}"
        for event in data.invocation_events
        if (text := content_text(event.content))
    ]


def _agent_usage(case: EvalCaseResult) -> TokenUsage | None:
    prompt = completion = calls = 0
    for row in case.eval_metric_result_per_invocation:
        data = row.actual_invocation.intermediate_data
        if data is None or isinstance(data, IntermediateData):
            continue
        for event in data.invocation_events:
            meta = event.usage_metadata or {}
            if meta:
                calls += 1
                prompt += int(meta.get("prompt_token_count") or 0)
                completion += int(meta.get("candidates_token_count") or 0)
    if calls == 0:
        return None
    return TokenUsage(prompt_tokens=prompt, completion_tokens=completion, calls=calls)


def _metric_row(case: EvalCaseResult, row: EvalMetricResult) -> MetricRow:
    informational = row.eval_status is EvalStatus.INFORMATIONAL
    applicable = row.metric_name not in case.assay.not_applicable
    return MetricRow(
        name=row.metric_name,
        score=_score(row.score, informational) if applicable else "-",
        threshold=_score(row.threshold),
        status=_status(row.eval_status) if applicable else "n-a",
        note=case.assay.metric_reasons.get(row.metric_name, ""),
    )


def _turns(case: EvalCaseResult) -> list[Turn]:
    turns = []
    for number, row in enumerate(case.eval_metric_result_per_invocation, 1):
        actual, expected = row.actual_invocation, row.expected_invocation
        turns.append(
            Turn(
                number=number,
                invocation_id=actual.invocation_id,
                user=content_text(actual.user_content),
                agent=content_text(actual.final_response),
                expected=content_text(expected.final_response) if expected else None,
                steps=_steps(actual),
                calls=trajectory(actual, expected),
                has_expected=expected is not None,
                verdicts=[_metric_row(case, m) for m in row.eval_metric_results],
            )
        )
    return turns


def _sample_problem(reason: str | None, error: str | None) -> str:
    return "; ".join(text for text in (error, reason) if text)


_RUBRIC_KEYS = ("rubric_id", "property", "verdict", "score", "votes", "rationale")
_SENTENCE_KEYS = ("sentence", "label", "rationale", "supporting_excerpt", "contradicting_excerpt")


def _pick(item: dict[str, Any], keys: Sequence[str], **extra: Any) -> dict[str, Any]:
    """Only the keys the page shows (None where missing): details are free-form JSON."""
    return {key: item.get(key) for key in keys} | extra


def _judged_invocation(notes: InvocationNotes) -> JudgedInvocation:
    details = notes.details or {}
    rubrics = details.get("rubrics")
    steps = details.get("steps")
    sentences = [
        _pick(sentence, _SENTENCE_KEYS, step=step.get("kind") or "")
        for step in (steps if isinstance(steps, list) else [])
        if isinstance(step, dict)
        for sentence in step.get("sentences") or []
        if isinstance(sentence, dict)
    ]
    votes = details.get("votes")
    return JudgedInvocation(
        invocation_id=notes.invocation_id,
        reason=notes.reason or "",
        samples=[
            Sample(
                sample=s.sample,
                score=_score(s.score),
                verdict=s.verdict or "",
                text=s.text or "",
                problem=_sample_problem(s.reason, s.error),
                cached=s.cached,
            )
            for s in notes.samples
        ],
        rubrics=[_pick(r, _RUBRIC_KEYS) for r in rubrics if isinstance(r, dict)]
        if isinstance(rubrics, list)
        else [],
        sentences=sentences,
        votes=", ".join(f"{k}: {v}" for k, v in votes.items()) if isinstance(votes, dict) else "",
    )


@functools.lru_cache(maxsize=64)
def _judge_text(model: str | None, source: str | None) -> str:
    """A case's judge in words, as the run's judge line names it (the same few judges recur in
    every case, so each is described once)."""
    return JudgeInfo(model=model, source=source).describe() or "-"


def _judged(name: str, notes: MetricNotes) -> Judged:
    judge = _judge_text(notes.judge_model, notes.judge_source)
    return Judged(name, judge, [_judged_invocation(n) for n in notes.per_invocation])


def _case(key: str, case: EvalCaseResult) -> Case:
    usage = [_usage_row(name, notes.usage) for name, notes in case.assay.metrics.items()]
    if case.assay.simulator_usage is not None:
        usage.append(_usage_row("user simulator", case.assay.simulator_usage))
    agent = _agent_usage(case)
    if agent is not None:
        usage.append(_usage_row("agent (usage_metadata)", agent))
    status = _status(case.final_eval_status)
    return Case(
        key=key,
        eval_set_id=case.eval_set_id,
        eval_id=case.eval_id,
        run=case.assay.run,
        status=status,
        reason=case.assay.reason or "",
        duration=f"{case.assay.duration_s:.2f} s",
        search=f"{case.eval_set_id} {case.eval_id} {status}".lower(),
        metrics=[_metric_row(case, row) for row in case.overall_eval_metric_results],
        turns=_turns(case),
        judged=[_judged(name, notes) for name, notes in case.assay.metrics.items()],
        usage=usage,
    )


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _default_title(results: Sequence[EvalSetResult]) -> str:
    names = ", ".join(dict.fromkeys(r.eval_set_id for r in results))
    return f"assay report: {names}" if names else "assay report"


class _Bodies:
    """The cases' bodies, one JSON line each, gathered while the case list renders and written
    out (jinja2 calls ``__html__``) in the data block after it: no case is held longer than its
    own line takes to render."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __html__(self) -> str:
        return "\n".join(self.lines)


def _cases(results: Sequence[EvalSetResult], bodies: _Bodies) -> Iterator[Case]:
    every = (case for result in results for case in result.eval_case_results)
    for n, result in enumerate(every):
        case = _case(f"c{n}", result)
        bodies.lines.append(json_for_script(case_body(case)))
        yield case


def render_html(results: Sequence[EvalSetResult], *, title: str | None = None) -> str:
    """The report page for ``results`` as one self-contained HTML document."""
    sets = [_summary(result.eval_set_id, [result]) for result in results]
    overall = _summary("All eval sets", results) if len(results) > 1 else None
    bodies = _Bodies()
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title or _default_title(results),
        version=__version__,
        generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        sets=sets,
        overall=overall,
        cases=_cases(results, bodies),
        case_data=bodies,
        total=sum(len(result.eval_case_results) for result in results),
        runs=any(case.assay.run > 1 for r in results for case in r.eval_case_results),
    )


def write_html(path: Path, results: Sequence[EvalSetResult], *, title: str | None = None) -> None:
    """Write the report page to ``path`` (through a temporary file beside it)."""
    write_atomically(path, render_html(results, title=title))
