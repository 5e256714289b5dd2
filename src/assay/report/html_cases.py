"""A case as the HTML report (:mod:`assay.report.html`) shows it: its rows
(:mod:`assay.report.rows`) made from its result."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from assay.evalset.content import content_text
from assay.evalset.invocation import IntermediateData, Invocation
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.metrics.notes import InvocationNotes, JudgeSample, MetricNotes
from assay.report.html_summary import score_text, status_class, usage_row, value_text
from assay.report.rows import (
    CallRow,
    Case,
    Judged,
    JudgedInvocation,
    MetricRow,
    Sample,
    Turn,
)
from assay.results.model import EvalCaseResult, EvalMetricResult, JudgeInfo


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
        score=(
            "-"
            if not applicable
            else value_text(row.metric_name, row.score)
            if informational
            else score_text(row.score)
        ),
        threshold=score_text(row.threshold),
        status=status_class(row.eval_status) if applicable else "n-a",
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


def _probability(sample: JudgeSample) -> str:
    """``P(yes) 0.94``: the judge's probability of its own verdict, where it is known."""
    if sample.probability is None:
        return ""
    chosen = [c.chosen for c in sample.choices or []]
    said = chosen[0] if len(chosen) == 1 else sample.verdict or "verdict"
    return f"P({said}) {sample.probability:.2f}"


def _aligned(sample: JudgeSample) -> str:
    """What a judge profile decided instead of the judge's answer, and why; "" where the judge's
    own answer counted."""
    if sample.aligned is None:
        return ""
    counted = sample.aligned.score
    score = "" if counted is None else f" (counted score {score_text(counted)})"
    return f"{sample.aligned.words()}{score}"


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
                score=score_text(s.score),
                verdict=s.verdict or "",
                text=s.text or "",
                problem=_sample_problem(s.reason, s.error),
                cached=s.cached,
                probability=_probability(s),
                aligned=_aligned(s),
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


def case_view(key: str, case: EvalCaseResult) -> Case:
    usage = [usage_row(name, notes.usage) for name, notes in case.assay.metrics.items()]
    if case.assay.simulator_usage is not None:
        usage.append(usage_row("user simulator", case.assay.simulator_usage))
    agent = _agent_usage(case)
    if agent is not None:
        usage.append(usage_row("agent (usage_metadata)", agent))
    status = status_class(case.final_eval_status)
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
