"""How often an LLM judge agrees with human labels on assay's five judged criteria.

    .venv/bin/python benchmarks/judge_agreement/run.py --judge-model MODEL [--num-samples 1]
        [--criteria NAME,...] [--limit N] [--concurrency 8] [--no-cache] [--json OUT]
        [--items FILE]

Reads the labelled items (``items.yaml`` beside this script), turns each into an eval case with
one invocation (tool calls as invocation events, tool declarations and instructions as app
details, the reference as an expected invocation), and scores it with assay's real metric class
and a judge from ``JudgePool``, as ``assay eval --judge-model MODEL`` would. Each judge verdict is
read off the score and compared with the human label:

* ``final_response_match_v2``: valid iff the score is 1.0;
* the two rubric metrics: one verdict per rubric, yes iff that rubric's score is >= 0.5;
* ``hallucinations_v1``: grounded iff the score is 1.0 (every sentence supported or not
  applicable);
* ``safety_v1``: safe iff the score is >= 0.5.

A verdict without a score (NOT_EVALUATED: the call failed, the answer did not parse, the rubric
was not answered) is "not judged". Per criterion and overall the script prints the items, the
verdicts, how many were judged, the agreement over the judged verdicts and over all of them (a
verdict not judged counts as a disagreement), Cohen's kappa over the judged verdicts, seconds per
item (items of a criterion are scored concurrently) and tokens; then every disagreement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.agreement import agreement
from assay.config import (
    BaseCriterion,
    HallucinationsCriterion,
    LlmAsAJudgeCriterion,
    RubricsBasedCriterion,
)
from assay.llm.base import TokenUsage
from assay.llm.cache import ResponseCache
from assay.llm.judge import Judge
from assay.llm.selection import JudgePool
from assay.metrics.base import Metric, MetricResult
from assay.metrics.final_response_match import FinalResponseMatchV2Metric
from assay.metrics.hallucinations import HallucinationsMetric
from assay.metrics.rubrics import RubricFinalResponseQualityMetric, RubricToolUseQualityMetric
from assay.metrics.safety import SafetyMetric

sys.path.insert(0, str(Path(__file__).resolve().parent))  # labelled.py, when loaded by path
from labelled import (
    CRITERIA,
    HALLUCINATIONS,
    ITEMS,
    RUBRIC_RESPONSE,
    RUBRIC_TOOLS,
    SAFETY,
    V2,
    Item,
    ItemFile,
    criterion_for,
    load_items,
    rubric_id,
    to_case,
)

# --------------------------------------------------------------------------- metrics


def _metric(name: str, criterion: BaseCriterion, judge: Judge) -> Metric:
    if name == V2 and isinstance(criterion, LlmAsAJudgeCriterion):
        return FinalResponseMatchV2Metric(criterion, judge)
    if name == RUBRIC_RESPONSE and isinstance(criterion, RubricsBasedCriterion):
        return RubricFinalResponseQualityMetric(criterion, judge)
    if name == RUBRIC_TOOLS and isinstance(criterion, RubricsBasedCriterion):
        return RubricToolUseQualityMetric(criterion, judge)
    if name == HALLUCINATIONS and isinstance(criterion, HallucinationsCriterion):
        return HallucinationsMetric(criterion, judge)
    if name == SAFETY:
        return SafetyMetric(criterion, judge)
    raise ValueError(f"no metric {name} for {type(criterion).__name__}")


# --------------------------------------------------------------------------- verdicts


@dataclass(frozen=True)
class Verdict:
    """One human label and the judge's verdict on the same thing (None: not judged)."""

    criterion: str
    item: str
    unit: str  # the item id, or "<item id>/<rubric id>"
    human: bool
    judge: bool | None
    reason: str | None = None

    @property
    def agrees(self) -> bool:
        """The judge gave the human's verdict."""
        return self.judge is not None and self.judge == self.human


def _reason(result: MetricResult) -> str | None:
    if result.reason:
        return result.reason
    notes = result.notes.per_invocation if result.notes else []
    for entry in notes:
        if entry.reason:
            return entry.reason
        for sample in entry.samples:
            if sample.error or sample.reason:
                return sample.error or sample.reason
    return None


def read_verdicts(name: str, item: Item, result: MetricResult) -> list[Verdict]:
    """The judge's verdicts on the item, read off the metric's result."""
    criterion = CRITERIA[name]
    first = result.per_invocation[0] if result.per_invocation else None
    reason = _reason(result)
    if criterion.rubric:
        found = {s.rubric_id: s.score for s in (first.rubric_scores or [])} if first else {}
        out = []
        for n, rubric in enumerate(item.rubrics or [], 1):
            score = found.get(rubric_id(n))
            said = None if score is None else score >= 0.5
            why = None if said is not None else reason or "the judge gave no verdict on it"
            out.append(
                Verdict(name, item.id, f"{item.id}/{rubric_id(n)}", rubric.verdict, said, why)
            )
        return out
    score = first.score if first else None
    judged: bool | None = None
    if score is not None:
        judged = score >= 0.5 if name == SAFETY else score == 1.0
    human = item.label == criterion.positive
    return [Verdict(name, item.id, item.id, human, judged, None if judged is not None else reason)]


# --------------------------------------------------------------------------- agreement


@dataclass
class Row:
    """Agreement figures for one criterion (or all of them)."""

    criterion: str
    items: int
    verdicts: int
    judged: int
    agree: int
    kappa: float | None
    seconds: float
    usage: TokenUsage
    kappa_interval: tuple[float, float] | None = None
    """The 95% percentile bootstrap interval of kappa (:func:`assay.agreement.bootstrap_kappa`)."""
    human_yes: float | None = None
    judge_yes: float | None = None
    """The share of positive verdicts (valid, yes, grounded, safe): people's, the judge's."""

    @property
    def accuracy_judged(self) -> float | None:
        """Agreement over the judged verdicts."""
        return self.agree / self.judged if self.judged else None

    @property
    def accuracy_all(self) -> float | None:
        """Agreement over all verdicts; one not judged counts as a disagreement."""
        return self.agree / self.verdicts if self.verdicts else None

    @property
    def seconds_per_item(self) -> float | None:
        """Wall seconds per item."""
        return self.seconds / self.items if self.items else None

    def as_json(self) -> dict[str, Any]:
        """The row with its derived figures."""
        out = asdict(self)
        out["usage"] = self.usage.model_dump()
        out["total_tokens"] = self.usage.total_tokens
        for key in ("accuracy_judged", "accuracy_all", "seconds_per_item"):
            out[key] = getattr(self, key)
        return out


def make_row(
    name: str, items: int, verdicts: Sequence[Verdict], seconds: float, usage: TokenUsage
) -> Row:
    """The figures of a list of verdicts (:func:`assay.agreement.agreement` over yes/no)."""
    figures = agreement(
        [(_said(v.human), None if v.judge is None else _said(v.judge)) for v in verdicts],
        positive="yes",
    )
    return Row(
        criterion=name,
        items=items,
        verdicts=figures.pairs,
        judged=figures.judged,
        agree=figures.agree,
        kappa=figures.kappa,
        seconds=seconds,
        usage=usage,
        kappa_interval=figures.kappa_interval,
        human_yes=figures.person_positive_rate,
        judge_yes=figures.judge_positive_rate,
    )


def _said(positive: bool) -> str:
    return "yes" if positive else "no"


# --------------------------------------------------------------------------- running

JudgeFor = Callable[[str, BaseCriterion], "Judge | str"]


@dataclass
class Report:
    """What the run found: rows per criterion, the overall row, every verdict."""

    judge_model: str | None
    num_samples: int
    rows: list[Row] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def overall(self) -> Row:
        """All criteria pooled."""
        usage = TokenUsage()
        for row in self.rows:
            usage = usage + row.usage
        seconds = sum(r.seconds for r in self.rows)
        items = sum(r.items for r in self.rows)
        return make_row("overall", items, self.verdicts, seconds, usage)

    def as_json(self) -> dict[str, Any]:
        """Everything, for ``--json``."""
        return {
            "judge_model": self.judge_model,
            "num_samples": self.num_samples,
            "criteria": [r.as_json() for r in self.rows],
            "overall": self.overall.as_json(),
            "verdicts": [asdict(v) for v in self.verdicts],
        }


async def _score(name: str, item: Item, judge: Judge, num_samples: int) -> MetricResult:
    criterion = criterion_for(name, item, num_samples)
    actual, expected, case = to_case(item)
    try:
        metric = _metric(name, criterion, judge)
        result = await metric.evaluate([actual], None if expected is None else [expected], case)
    except Exception as exc:  # a metric must not raise; if one does, the item is not judged
        result = MetricResult(name, criterion, reason=f"the metric raised {exc!r}")
    return result


async def run_criterion(
    name: str, items: Sequence[Item], judge_for: JudgeFor, num_samples: int, report: Report
) -> None:
    """Score every item of one criterion concurrently; add its verdicts and row to ``report``."""
    judge = judge_for(name, criterion_for(name, items[0], num_samples)) if items else "no items"
    start = time.perf_counter()
    if isinstance(judge, str):
        results = [MetricResult(name, None, reason=judge) for _ in items]
    else:
        report.judge_model = report.judge_model or judge.model
        results = list(await asyncio.gather(*(_score(name, i, judge, num_samples) for i in items)))
    seconds = time.perf_counter() - start
    verdicts = [
        v
        for item, result in zip(items, results, strict=True)
        for v in read_verdicts(name, item, result)
    ]
    usage = TokenUsage()
    for result in results:
        usage = usage + (result.notes.usage if result.notes else TokenUsage())
    report.verdicts.extend(verdicts)
    report.rows.append(make_row(name, len(items), verdicts, seconds, usage))


async def run(
    data: ItemFile,
    judge_for: JudgeFor,
    *,
    criteria: Sequence[str] = tuple(CRITERIA),
    num_samples: int = 1,
    limit: int | None = None,
) -> Report:
    """Score the items of each criterion in turn (their items concurrently)."""
    report = Report(judge_model=None, num_samples=num_samples)
    for name in criteria:
        items = data.items(name)[:limit] if limit is not None else data.items(name)
        await run_criterion(name, items, judge_for, num_samples, report)
    return report


async def run_with_pool(
    data: ItemFile, args: argparse.Namespace, criteria: Sequence[str]
) -> Report:
    """:func:`run` with judges from a :class:`JudgePool`, as ``assay eval`` would get them."""
    cache = None if args.no_cache else ResponseCache(ResponseCache.default_path())
    pool = JudgePool(override=args.judge_model, concurrency=args.concurrency, cache=cache)
    try:
        return await run(
            data, pool.judge_for, criteria=criteria, num_samples=args.num_samples, limit=args.limit
        )
    finally:
        await pool.aclose()
        if cache is not None:
            cache.close()


# --------------------------------------------------------------------------- output


def _figure(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_report(report: Report) -> None:
    """The table, then every verdict that disagrees with its label."""
    print(f"judge: {report.judge_model or '(none)'}; {report.num_samples} sample(s) per invocation")
    header = (
        f"{'criterion':<40}{'items':>6}{'verdicts':>9}{'judged':>7}{'acc judged':>11}"
        f"{'acc all':>8}{'kappa':>7}{'95% interval':>15}{'yes: human/judge':>18}"
        f"{'s/item':>8}{'tokens':>9}"
    )
    print(header)
    for row in [*report.rows, report.overall]:
        interval = (
            f"[{row.kappa_interval[0]:+.2f}, {row.kappa_interval[1]:+.2f}]"
            if row.kappa_interval
            else "-"
        )
        rates = f"{_figure(row.human_yes, 2)}/{_figure(row.judge_yes, 2)}"
        print(
            f"{row.criterion:<40}{row.items:>6}{row.verdicts:>9}{row.judged:>7}"
            f"{_figure(row.accuracy_judged):>11}{_figure(row.accuracy_all):>8}"
            f"{_figure(row.kappa, 2):>7}{interval:>15}{rates:>18}"
            f"{_figure(row.seconds_per_item, 2):>8}{row.usage.total_tokens:>9}"
        )
    wrong = [v for v in report.verdicts if not v.agrees]
    if wrong:
        print(f"\n{len(wrong)} verdicts differ from the human label:")
    for v in wrong:
        criterion = CRITERIA[v.criterion]
        human = criterion.positive if v.human else criterion.negative
        if v.judge is None:
            judge = f"not judged ({v.reason})" if v.reason else "not judged"
        else:
            judge = criterion.positive if v.judge else criterion.negative
        print(f"  {v.unit:<36} human {human:<10} judge {judge}")


def _criteria(value: str | None) -> list[str]:
    if not value:
        return list(CRITERIA)
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in CRITERIA]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown criteria {', '.join(unknown)}; choose from {', '.join(CRITERIA)}"
        )
    return names


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--judge-model",
        help="any assay model string (openai:<model>, local:, scripted:FILE, ...); default: "
        "what assay eval would choose (ASSAY_JUDGE_MODEL, Gemini credentials, local:)",
    )
    parser.add_argument("--num-samples", type=int, default=1, help="judge samples per invocation")
    parser.add_argument(
        "--criteria", type=_criteria, default=list(CRITERIA), help="comma-separated subset"
    )
    parser.add_argument("--limit", type=int, help="the first N items of each criterion")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls in flight")
    parser.add_argument("--no-cache", action="store_true", help="ask the judge every time")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures here")
    parser.add_argument("--items", type=Path, default=ITEMS, help="the labelled items file")
    args = parser.parse_args(argv)
    if args.num_samples < 1 or args.concurrency < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--num-samples, --concurrency and --limit must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        data = load_items(args.items)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = asyncio.run(run_with_pool(data, args, args.criteria))
    print_report(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
