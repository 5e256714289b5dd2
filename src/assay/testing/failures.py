"""What a failed evaluation says in a pytest report.

One block per case (and run) that did not pass: its eval id, each metric with its score, its
threshold and its status (and why it was not evaluated), the case's own reason when the agent
could not be run, and, for each failing turn, a short excerpt: the user's message, the expected
and actual final response, the expected and actual tool calls. Texts are cut to a readable length
and only the first few turns and cases are shown; the results hold the rest.

A case run *passes* when its status is PASSED and every configured metric that applies to it was
evaluated: a gate must not pass on metrics that never ran. Informational metrics (tool calls,
tokens, duration) never fail anything, nor do metrics marked not applicable to the kind of case.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.results.model import (
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    EvalSetResult,
)

TEXT_LIMIT = 160
"""Characters of one response or message shown in an excerpt."""
TOOLS_LIMIT = 240
"""Characters of one turn's tool calls shown in an excerpt."""
TURNS_SHOWN = 3
"""Failing turns shown per block."""
BLOCKS_SHOWN = 12
"""Blocks (case runs) shown per message."""


class EvaluationFailed(AssertionError):
    """An evaluation did not pass; the message says which cases and why, ``results`` holds
    everything. An ``AssertionError``, so pytest reports it as a test failure."""

    def __init__(self, message: str, results: Sequence[EvalSetResult]) -> None:
        super().__init__(message)
        self.results = list(results)


@dataclass(frozen=True)
class MetricLine:
    """One metric of a block: its score against its threshold, and its status."""

    name: str
    score: float | None
    threshold: float | None
    status: EvalStatus
    note: str = ""


@dataclass(frozen=True)
class TurnExcerpt:
    """A turn to show: the actual and expected invocations and the metrics that failed it."""

    index: int
    total: int
    actual: Invocation
    expected: Invocation | None
    failed: tuple[str, ...] = ()
    runs: tuple[int, ...] = ()


@dataclass
class Block:
    """What is shown for one case (or one case run)."""

    case: str
    status: str
    run: int | None = None
    runs: int = 1
    metrics: list[MetricLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    turns: list[TurnExcerpt] = field(default_factory=list)

    @property
    def title(self) -> str:
        """``eval_id``, with ``run N of M`` or ``M runs`` when the case ran more than once."""
        if self.runs < 2:
            return self.case
        if self.run is None:
            return f"{self.case}, {self.runs} runs"
        return f"{self.case}, run {self.run} of {self.runs}"


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` on one line, cut to ``limit`` characters (marked with an ellipsis)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def tool_calls_text(invocation: Invocation | None) -> str:
    """A turn's tool calls as ``name({"arg": value})``, separated by ``; `` (``(none)`` if none)."""
    if invocation is None:
        return ""
    calls = [
        f"{call.name}({json.dumps(call.args, ensure_ascii=False, sort_keys=True, default=str)})"
        if call.args
        else f"{call.name}()"
        for call in invocation.tool_calls()
    ]
    return "; ".join(calls) or "(none)"


def _applicable(case: EvalCaseResult, row: EvalMetricResult) -> bool:
    """Whether a metric row counts: not informational, not marked not applicable to the case."""
    return (
        row.eval_status is not EvalStatus.INFORMATIONAL
        and row.metric_name not in case.assay.not_applicable
    )


def unevaluated_metrics(case: EvalCaseResult) -> list[str]:
    """The applicable metrics a case result has no verdict for."""
    return case.unevaluated_metrics()


def case_passed(case: EvalCaseResult) -> bool:
    """PASSED, with every applicable metric evaluated (the CLI's exit code uses the same rule)."""
    return case.passed_cleanly()


def failing_cases(results: Sequence[EvalSetResult]) -> list[tuple[EvalSetResult, EvalCaseResult]]:
    """Every case result that did not pass, with its eval-set result."""
    return [
        (result, case)
        for result in results
        for case in result.eval_case_results
        if not case_passed(case)
    ]


def metric_lines(case: EvalCaseResult) -> list[MetricLine]:
    """The case's applicable metrics, in config order."""
    return [
        MetricLine(
            row.metric_name,
            row.score,
            row.threshold,
            row.eval_status,
            case.assay.metric_reasons.get(row.metric_name, ""),
        )
        for row in case.overall_eval_metric_results
        if _applicable(case, row)
    ]


def _failed_metrics(case: EvalCaseResult, row: EvalMetricResultPerInvocation) -> tuple[str, ...]:
    return tuple(
        m.metric_name
        for m in row.eval_metric_results
        if m.eval_status is EvalStatus.FAILED and m.metric_name not in case.assay.not_applicable
    )


def failing_turns(case: EvalCaseResult, runs: tuple[int, ...] = ()) -> list[TurnExcerpt]:
    """The turns a failing metric failed; when none is marked (a case that could not be scored,
    such as one whose turn count differs from the expected one), every turn. ``runs`` labels
    them with the runs they come from."""
    rows = case.eval_metric_result_per_invocation
    turns = [
        TurnExcerpt(i + 1, len(rows), row.actual_invocation, row.expected_invocation, failed, runs)
        for i, row in enumerate(rows)
        if (failed := _failed_metrics(case, row))
    ]
    if turns or case.final_eval_status is EvalStatus.PASSED:
        return turns
    return [
        TurnExcerpt(i + 1, len(rows), row.actual_invocation, row.expected_invocation, (), runs)
        for i, row in enumerate(rows)
    ]


def _runs_of(result: EvalSetResult) -> dict[str, int]:
    runs: dict[str, int] = {}
    for case in result.eval_case_results:
        runs[case.eval_id] = max(runs.get(case.eval_id, 0), case.assay.run)
    return runs


def case_block(case: EvalCaseResult, runs: int = 1) -> Block:
    """The block for one case run."""
    status = case.final_eval_status.name
    missing = unevaluated_metrics(case)
    if case.final_eval_status is EvalStatus.PASSED and missing:
        status = f"PASSED, but {len(missing)} metric(s) not evaluated"
    block = Block(case.eval_id, status, case.assay.run, runs)
    reason = case.assay.reason
    if reason:
        block.notes.append(reason)
    lines = metric_lines(case)
    if not (reason and all(line.note == reason for line in lines)):
        block.metrics = lines  # the case's reason stands for metrics that all share it
    block.turns = failing_turns(case)
    return block


def _metric_text(line: MetricLine, width: int) -> str:
    status = "passed" if line.status is EvalStatus.PASSED else line.status.name
    text = f"{status:<13} {line.name:<{width}}  {_number(line.score)}"
    if line.threshold is not None:
        text += f" (threshold {_number(line.threshold)})"
    if line.note:
        text += f": {clip(line.note, TEXT_LIMIT)}"
    return text


def _turn_lines(turn: TurnExcerpt) -> list[str]:
    where = f"turn {turn.index} of {turn.total}"
    if turn.runs:
        label = "run" if len(turn.runs) == 1 else "runs"
        where += f", {label} {', '.join(map(str, turn.runs))}"
    if turn.failed:
        where += f" ({', '.join(turn.failed)} failed)"
    lines = [where + ":", f"  user:           {clip(content_text(turn.actual.user_content))}"]
    if turn.expected is not None:
        lines.append(f"  expected:       {clip(content_text(turn.expected.final_response))}")
    lines.append(f"  actual:         {clip(content_text(turn.actual.final_response))}")
    if turn.expected is not None:
        lines.append(f"  expected tools: {clip(tool_calls_text(turn.expected), TOOLS_LIMIT)}")
    lines.append(f"  actual tools:   {clip(tool_calls_text(turn.actual), TOOLS_LIMIT)}")
    return lines


def block_body(block: Block) -> list[str]:
    """The lines under a block's title, indented by two spaces."""
    lines = [f"  {clip(note, 2 * TEXT_LIMIT)}" for note in block.notes]
    width = max((len(m.name) for m in block.metrics), default=0)
    lines += [f"  {_metric_text(m, width)}" for m in block.metrics]
    for turn in block.turns[:TURNS_SHOWN]:
        lines += [f"  {line}" for line in _turn_lines(turn)]
    if len(block.turns) > TURNS_SHOWN:
        lines.append(f"  … and {len(block.turns) - TURNS_SHOWN} more failing turn(s)")
    return lines


def render_blocks(groups: Iterable[tuple[str, Sequence[Block]]], headline: str) -> str:
    """The message: the headline, then per eval set its blocks (at most :data:`BLOCKS_SHOWN` in
    all). A block whose body repeats an earlier one of the same case says so in one line."""
    out = [headline]
    shown = hidden = 0
    for label, blocks in groups:
        if not blocks:
            continue
        out += ["", label]
        bodies: dict[str, tuple[int | None, list[str]]] = {}
        for block in blocks:
            if shown >= BLOCKS_SHOWN:
                hidden += 1
                continue
            shown += 1
            body = block_body(block)
            earlier = bodies.get(block.case)
            if earlier is not None and earlier[1] == body:
                out.append(f"  {block.title}: {block.status}, same as run {earlier[0]}")
                continue
            bodies.setdefault(block.case, (block.run, body))
            out.append(f"  {block.title}: {block.status}")
            out += [f"  {line}" for line in body]
    if hidden:
        out += ["", f"… and {hidden} more (see the results for every case)"]
    return "\n".join(out)


def set_label(result: EvalSetResult) -> str:
    """``eval_set_id (path)``."""
    path = result.assay.eval_set_path if result.assay is not None else None
    return f"{result.eval_set_id} ({path})" if path else result.eval_set_id


def failure_report(results: Sequence[EvalSetResult]) -> str | None:
    """The readable message for every case run that did not pass, or None when all passed."""
    failing = failing_cases(results)
    if not failing:
        return None
    total = sum(len(r.eval_case_results) for r in results)
    failed = sum(1 for _, c in failing if c.final_eval_status is EvalStatus.FAILED)
    unevaluated = sum(1 for _, c in failing if c.final_eval_status is EvalStatus.NOT_EVALUATED)
    partial = len(failing) - failed - unevaluated
    counts = [f"{failed} failed", f"{unevaluated} not evaluated"]
    if partial:
        counts.append(f"{partial} passed with metrics not evaluated")
    headline = f"{len(failing)} of {total} case run(s) did not pass: {', '.join(counts)}"
    groups = []
    for result in results:
        runs = _runs_of(result)
        blocks = [
            case_block(case, runs.get(case.eval_id, 1))
            for case in result.eval_case_results
            if not case_passed(case)
        ]
        groups.append((set_label(result), blocks))
    return render_blocks(groups, headline)


def assert_passed(results: Sequence[EvalSetResult]) -> None:
    """Raise :class:`EvaluationFailed` with :func:`failure_report`'s message unless every case
    run passed."""
    message = failure_report(results)
    if message is not None:
        raise EvaluationFailed(message, results)
