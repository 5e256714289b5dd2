"""One line on why a metric did not pass a case, read from what a results file holds.

Nothing here is stored: the line is made from the invocations (expected and actual tool calls),
the per-invocation verdicts and the judges' notes, so it reads the same for a results file
written today and one written before this module existed. NOT_EVALUATED has its reason
recorded (``assay.metric_reasons``, or the case's own reason); FAILED gets, by what its metric's declaration says of its report
(:data:`~assay.metrics.declaration.ReportDetail`):

* the tool trajectory: the first expected call that was not made (or the unexpected call, or
  the order), in the first turn that failed;
* ``response_match_score``: that turn's word overlap against the threshold;
* a judged metric: the judge's verdict in that turn, with its rationale when it gave one (the
  embedded judge gives labels only), or the sentence a fact-check did not find support for;
* anything else: the score against the threshold.

Where a judge profile decided a verdict otherwise than the judge answered, the row says what the
judge said, with its probability, and the decision and rule beside it (``judge said "yes"
(P(yes) 0.94); aligned to "no": ...``), on a PASSED row too.

An informational metric with no value (an agent that reports no token usage) says why too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.metrics.efficiency import NO_VALUE_REASONS
from assay.metrics.notes import InvocationNotes, MetricNotes
from assay.metrics.registry import declaration_of
from assay.report.numbers import score_text
from assay.results.model import EvalCaseResult, EvalMetricResult

MAX_LENGTH = 160
"""Characters of a FAILED row's why (the rest is cut with an ellipsis; a recorded reason for
NOT_EVALUATED is kept whole, as it may say what to install or fix)."""

_GOOD_LABELS = {"supported", "not_applicable"}


def why(case: EvalCaseResult, row: EvalMetricResult) -> str:
    """Why the case's overall ``row`` for one metric is FAILED or NOT_EVALUATED ("" when it is
    neither, or when nothing more than its score can be said)."""
    if row.eval_status is EvalStatus.NOT_EVALUATED:  # whole: it may say what to install
        reason = case.assay.metric_reasons.get(row.metric_name) or case.assay.reason or ""
        return " ".join(reason.split())
    if row.eval_status is EvalStatus.INFORMATIONAL and row.score is None:
        return NO_VALUE_REASONS.get(row.metric_name, "")
    close = close_vote(case, row.metric_name)
    if row.eval_status is EvalStatus.PASSED:
        return cut("; ".join(t for t in (aligned_note(case, row.metric_name), close) if t))
    if row.eval_status is not EvalStatus.FAILED:
        return ""
    failing = _failing_turns(case, row.metric_name)
    declared = declaration_of(row.metric_name)
    detail = declared.report if declared is not None else "verdict"
    if detail == "trajectory":
        text = _trajectory(
            case, failing, ignore_args=bool((row.criterion or {}).get("ignore_args"))
        )
    elif detail == "overlap":
        text = _overlap(failing, row.threshold)
    else:
        text = _judged(case.assay.metrics.get(row.metric_name), failing)
    if not text and row.score is not None and row.threshold is not None:
        if row.score < row.threshold:
            text = (
                f"score {score_text(row.score, row.threshold)} below the threshold "
                f"{score_text(row.threshold)}"
            )
        elif row.custom_function_path:  # a custom function decides its own status, as in ADK
            text = f"{row.custom_function_path} returned FAILED (score {score_text(row.score)})"
    return cut(f"{text}; {close}" if text and close else text or close)


def case_reason(case: EvalCaseResult) -> str:
    """Why ``case`` as a whole was not evaluated: its recorded reason, else, when no configured
    criterion applies to it (a scenario under a config of trajectory and response-match
    criteria, say), which criteria do not and why; "" for a case that was evaluated."""
    if case.assay.reason:
        return case.assay.reason
    if case.final_eval_status is not EvalStatus.NOT_EVALUATED:
        return ""
    graded = [
        row.metric_name
        for row in case.overall_eval_metric_results
        if row.eval_status is not EvalStatus.INFORMATIONAL
    ]
    if not graded:
        return "no criterion is configured for this case (only informational metrics ran)"
    if not all(name in case.assay.not_applicable for name in graded):
        return ""
    groups: dict[str, list[str]] = {}
    for name in graded:
        said = case.assay.metric_reasons.get(name, "").removeprefix("not applicable: ")
        groups.setdefault(said, []).append(name)
    detail = "; ".join(
        f"{', '.join(names)}: {said}" if said else ", ".join(names)
        for said, names in groups.items()
    )
    return f"no configured criterion applies to this case ({detail})"


def close_vote(case: EvalCaseResult, metric: str) -> str:
    """The first verdict of ``metric`` in ``case`` that its judge samples decided by one vote or
    left tied (``turn 2: decided by one vote, 3 valid to 2``), with how many more there are;
    "" when every verdict had a clear majority, or one sample."""
    notes = case.assay.metrics.get(metric)
    close: list[str] = []
    for number, entry in enumerate(notes.per_invocation if notes else [], 1):
        details = entry.details or {}
        counted = [("", details.get("votes"))]
        counted += [
            (f" rubric {rubric.get('rubric_id')}", rubric.get("votes"))
            for rubric in details.get("rubrics") or []
        ]
        for where, votes in counted:
            said = _narrow(votes)
            if said:
                close.append(f"turn {number}{where}: {said}")
    if not close:
        return ""
    more = f" (and {len(close) - 1} more)" if len(close) > 1 else ""
    return close[0] + more


def aligned_note(case: EvalCaseResult, metric: str) -> str:
    """The first sample of ``metric`` in ``case`` whose verdict a judge profile decided otherwise,
    in words (``turn 1: judge said "invalid" (P(invalid) 0.60); aligned to "valid": ...``), with
    how many more there are; "" when the judge's own verdicts all stood."""
    notes = case.assay.metrics.get(metric)
    found = [
        f"turn {number}: {sample.aligned.words()}"
        for number, entry in enumerate(notes.per_invocation if notes else [], 1)
        for sample in entry.samples
        if sample.aligned is not None
    ]
    if not found:
        return ""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return found[0] + more


def _narrow(votes: object) -> str:
    """``decided by one vote, 3 valid to 2`` or ``tied 2 to 2`` for a close count of two
    verdicts; "" otherwise."""
    if not isinstance(votes, dict):
        return ""
    counts = [(name, n) for name, n in votes.items() if name != "none" and isinstance(n, int)]
    if len(counts) != 2 or sum(n for _, n in counts) < 2:
        return ""
    (first, a), (second, b) = sorted(counts, key=lambda item: -item[1])
    if a == b:
        return f"tied {a} {first} to {b} {second}"
    return f"decided by one vote, {a} {first} to {b}" if a - b == 1 else ""


_Turn = tuple[int, EvalMetricResult, Invocation, Invocation | None]


def _failing_turns(case: EvalCaseResult, metric: str) -> list[_Turn]:
    """(turn number from 1, the metric's row, actual, expected) of each turn the metric failed."""
    turns: list[_Turn] = []
    for number, row in enumerate(case.eval_metric_result_per_invocation, 1):
        for result in row.eval_metric_results:
            if result.metric_name == metric and result.eval_status is EvalStatus.FAILED:
                turns.append((number, result, row.actual_invocation, row.expected_invocation))
    return turns


def cut(text: str) -> str:
    """``text`` on one line, at most :data:`MAX_LENGTH` characters."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_LENGTH else text[: MAX_LENGTH - 1].rstrip() + "…"


def _call_text(name: str, args: Mapping[str, Any] | None) -> str:
    """``name(key=value, ...)``, a long value shortened to ``[…]``, ``{…}`` or ``"abc…"``."""
    shown = ", ".join(f"{key}={_short(value)}" for key, value in (args or {}).items())
    return f"{name}({shown})"


def _short(value: object, limit: int = 24) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    if isinstance(value, list):
        return "[…]"
    if isinstance(value, dict):
        return "{…}"
    return text[: limit - 2] + "…" + text[-1]


def _trajectory(case: EvalCaseResult, failing: Sequence[_Turn], *, ignore_args: bool) -> str:
    for number, _, actual, expected in failing:
        if expected is None:
            continue
        want = [(c.name or "", None if ignore_args else c.args) for c in expected.tool_calls()]
        got = [(c.name or "", None if ignore_args else c.args) for c in actual.tool_calls()]
        left = list(got)
        missing = []
        for call in want:
            if call in left:
                left.remove(call)
            else:
                missing.append(call)
        turn = f"turn {number}: " if len(case.eval_metric_result_per_invocation) > 1 else ""
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            return f"{turn}expected call not made: {_call_text(*missing[0])}{more}"
        if left:
            return f"{turn}unexpected call: {_call_text(*left[0])}"
        order = ", ".join(name for name, _ in want)
        made = ", ".join(name for name, _ in got)
        return f"{turn}calls out of order: expected {order}; got {made}"
    return ""


def _overlap(failing: Sequence[_Turn], threshold: float | None) -> str:
    for number, result, _, _ in failing:
        if result.score is not None and threshold is not None:
            return (
                f"turn {number}: the answer shares too few words with the expected one "
                f"(ROUGE-1 {result.score:.2f}, needs {threshold:.2f})"
            )
    return ""


def _judged(notes: MetricNotes | None, failing: Sequence[_Turn]) -> str:
    if notes is None:
        return ""
    for number, _, actual, _ in failing:
        found = _notes_for(notes, number - 1, actual)
        if found is None:
            continue
        line = _unsupported_sentence(found)
        if line:
            aligned = [s.aligned.words() for s in found.samples if s.aligned is not None]
            line = "; ".join([line, *aligned[:1]])
        line = line or _verdict(found)
        if line:
            return f"turn {number}: {line}"
    return ""


def _notes_for(notes: MetricNotes, index: int, actual: Invocation) -> InvocationNotes | None:
    for entry in notes.per_invocation:
        if actual.invocation_id and entry.invocation_id == actual.invocation_id:
            return entry
    return notes.per_invocation[index] if index < len(notes.per_invocation) else None


def _unsupported_sentence(notes: InvocationNotes) -> str:
    """A fact-check's first sentence labelled anything but supported or not applicable."""
    for step in (notes.details or {}).get("steps") or []:
        for sentence in step.get("sentences") or []:
            label = sentence.get("label")
            if label and label not in _GOOD_LABELS:
                rationale = sentence.get("rationale") or ""
                tail = f": {rationale}" if rationale else ""
                return f'"{sentence.get("sentence", "")}" is {label}{tail}'
    return ""


def _verdict(notes: InvocationNotes) -> str:
    """The failing verdicts in a turn and the first rationale the judge gave: as the judge gave
    them, or, where a judge profile decided one otherwise, what the judge said and the rule."""
    verdicts: list[str] = []
    aligned: list[str] = []
    rationale = ""
    for sample in notes.samples:
        score = sample.counted_score
        if score is None or score >= 1.0 or not sample.counted_verdict:
            continue
        if sample.aligned is not None:
            words = sample.aligned.words()
            if words not in aligned:
                aligned.append(words)
        elif sample.verdict and sample.verdict not in verdicts:
            verdicts.append(sample.verdict)
        rationale = rationale or _rationale(sample.text)
    for rubric in (notes.details or {}).get("rubrics") or []:
        if rubric.get("verdict") == "no":
            rationale = rationale or str(rubric.get("rationale") or "")
    said = [f"judge said {'; '.join(verdicts)}"] if verdicts else []
    if not said and not aligned:
        return ""
    text = "; ".join([*said, *aligned])
    return f"{text} ({rationale})" if rationale else text


def _rationale(text: str | None) -> str:
    """The reasoning a judge wrote in its JSON answer, if any (the first non-empty one)."""
    try:
        answer = json.loads(text or "")
    except ValueError:
        return ""
    found: list[str] = []

    def visit(value: object) -> None:
        if isinstance(value, dict):
            for key in ("reasoning", "rationale", "explanation"):
                text = value.get(key)
                passed = value.get("verdict") in {"yes", "safe", "valid"}
                if isinstance(text, str) and text.strip() and not passed:
                    found.append(text.strip())
            for inner in value.values():
                visit(inner)
        elif isinstance(value, list):
            for inner in value:
                visit(inner)

    visit(answer)
    return found[0] if found else ""
