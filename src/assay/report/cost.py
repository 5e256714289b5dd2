"""What a run's judges cost, in the words every output uses: the console's ``judge cost:`` line,
the HTML and Markdown reports, ``assay show``, ``assay compare`` and the view's run page.

A run's cost is read from its sets' notes (:attr:`~assay.results.model.SetNotes.cost_usd`), a
metric they lack priced from its usage and judge model by the bundled table (results written
before costs were). A metric whose judge calls have no known price reads ``unknown``, never
``$0``; a run whose every judge cost nothing (the embedded judge) shows no cost at all
(:attr:`RunCost.shown`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from assay.llm.budget import cap_words
from assay.llm.prices import PriceBook, format_usd
from assay.results.model import EvalSetResult

UNKNOWN = "unknown"
"""A cost whose price is not known."""


@dataclass(frozen=True)
class RunCost:
    """US dollars per judged metric over some eval sets of a run, the metrics with judge calls
    whose price is unknown, and the run's ``--max-cost`` (None: none, or not recorded)."""

    by_metric: Mapping[str, float] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()
    cap: float | None = None

    @property
    def total(self) -> float:
        """Dollars over the priced metrics."""
        return sum(self.by_metric.values())

    @property
    def known(self) -> bool:
        """Whether every judge call had a price (so :attr:`total` is the whole cost)."""
        return not self.unknown

    @property
    def shown(self) -> bool:
        """Whether there is anything to say: some cost above $0, an unknown price, or a cap."""
        return any(self.by_metric.values()) or bool(self.unknown) or self.cap is not None

    @property
    def reached(self) -> bool:
        """Whether the run's judges spent up to the cap (no judge call started after)."""
        return self.cap is not None and self.total >= self.cap

    @property
    def metrics(self) -> list[str]:
        """Every metric with a cost or an unknown price, by name."""
        return sorted({*self.by_metric, *self.unknown})

    def metric_text(self, metric: str) -> str:
        """``$0.0042``, ``unknown``, or ``""`` when the metric made no judge call."""
        if metric in self.by_metric:
            return format_usd(self.by_metric[metric])
        return UNKNOWN if metric in self.unknown else ""

    def total_text(self) -> str:
        """``$0.0123``; ``unknown`` when no metric's price is known, ``$0.01 + unknown`` when
        only some are."""
        if not self.unknown:
            return format_usd(self.total)
        return f"{format_usd(self.total)} + {UNKNOWN}" if self.by_metric else UNKNOWN

    def cap_text(self) -> str | None:
        """``--max-cost 0.50 reached`` or ``--max-cost 0.50 not reached``; None without a cap."""
        if self.cap is None:
            return None
        return f"{cap_words(self.cap)} {'reached' if self.reached else 'not reached'}"

    def parts(self) -> list[str]:
        """``metric $0.0100`` (or ``metric unknown``) for each metric, when there are several
        and some price is known (one is the total; none known: :meth:`words` names them), and
        not when every one cost nothing (a list of $0 says no more than the total)."""
        names = self.metrics
        if len(names) < 2 or not self.by_metric:
            return []
        if not self.unknown and not any(self.by_metric.values()):
            return []
        return [f"{m} {self.metric_text(m)}" for m in names]

    def words(self) -> str:
        """The cost in one line: ``$0.0123 (m1 $0.01, m2 $0.0023); --max-cost 0.50 not
        reached``; ``$0.01 + unknown (m1 $0.01, m2 unknown)``; ``unknown; price unknown for m``
        (one metric: which it is)."""
        line = self.total_text()
        parts = self.parts()
        if parts:
            line += f" ({', '.join(parts)})"
        cap = self.cap_text()
        if cap:
            line += f"; {cap}"
        if self.unknown and not parts:
            line += f"; price unknown for {', '.join(self.unknown)}"
        return line

    def without_cap(self) -> RunCost:
        """The same cost, with no cap (for one eval set of several: the cap is the run's)."""
        return replace(self, cap=None)


def run_cost(results: Iterable[EvalSetResult]) -> RunCost:
    """What ``results``' judges cost, per metric (:class:`RunCost`), and the run's cap."""
    book = PriceBook(use_litellm=False)  # reading results never imports LiteLLM
    costs: dict[str, float] = {}
    unknown: set[str] = set()
    caps: list[float] = []
    for result in results:
        notes = result.assay
        if notes is None:
            continue
        if notes.max_cost_usd is not None:
            caps.append(notes.max_cost_usd)
        for metric, usage in notes.usage.items():
            dollars: float | None = notes.cost_usd.get(metric)
            judge = notes.judges.get(metric)
            if dollars is None and judge is not None and judge.model:
                dollars = book.cost(judge.model, usage)
            if dollars is None:
                if usage.calls:
                    unknown.add(metric)
                continue
            costs[metric] = costs.get(metric, 0.0) + dollars
    return RunCost(
        dict(sorted(costs.items())), tuple(sorted(unknown - set(costs))), caps[0] if caps else None
    )


def usd_change(before: float, after: float) -> str:
    """A change in dollars, with its sign: ``+$0.0042``, ``-$0.25``, ``$0`` for none."""
    change = after - before
    if abs(change) < 0.0000005:  # costs are recorded to a millionth
        return "$0"
    return ("+" if change > 0 else "-") + format_usd(abs(change))


@dataclass(frozen=True)
class CostRow:
    """One line of two runs' costs: the run's total (``what`` is ``total``) or a metric's."""

    what: str
    base: str
    candidate: str
    change: str


def cost_rows(base: RunCost, candidate: RunCost) -> list[CostRow]:
    """Two runs' costs, side by side: the totals, then each metric either run paid for (``–``
    where a run made no judge call for it); the change only where both costs are known. Empty
    when neither run shows a cost (:attr:`RunCost.shown`)."""
    if not base.shown and not candidate.shown:
        return []
    change = usd_change(base.total, candidate.total) if base.known and candidate.known else ""
    rows = [CostRow("total", base.total_text(), candidate.total_text(), change)]
    for metric in sorted({*base.metrics, *candidate.metrics}):
        old, new = base.by_metric.get(metric), candidate.by_metric.get(metric)
        rows.append(
            CostRow(
                metric,
                base.metric_text(metric) or "–",
                candidate.metric_text(metric) or "–",
                usd_change(old, new) if old is not None and new is not None else "",
            )
        )
    return rows


def cost_of(results: Sequence[EvalSetResult], *, cap: bool = True) -> RunCost | None:
    """:func:`run_cost` when there is something to show (:attr:`RunCost.shown`), else None;
    ``cap=False`` leaves the run's cap out (for one eval set of several)."""
    found = run_cost(results)
    if not cap:
        found = found.without_cap()
    return found if found.shown else None


__all__ = ["UNKNOWN", "CostRow", "RunCost", "cost_of", "cost_rows", "run_cost", "usd_change"]
