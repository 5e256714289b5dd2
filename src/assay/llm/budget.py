"""A run's judge spending, counted and capped: :class:`CostMeter` (``--max-cost USD``).

Every :class:`~assay.llm.judge.Judge` of a run holds the run's one meter. Before a judge call it
asks :meth:`CostMeter.refusal`: once what the run has spent reaches the cap, no new judge call
starts (an answer the response cache already holds is still served: it costs nothing), and the
sample fails with :class:`CostCapReached`, whose message
(``--max-cost 0.50 reached``) becomes the NOT_EVALUATED reason of the verdict it was for
(:func:`assay.metrics.judging.call_failure`). Calls already in flight finish and are counted,
so a run can end a little above its cap (by at most the calls in flight when it was reached);
every verdict finished before is kept.

The meter prices each response's usage as it arrives (:class:`~assay.llm.prices.PriceBook`),
per metric and per model; the part a provider's batch API answered
(:attr:`~assay.llm.base.TokenUsage.batched`) at the batch price, as the set's recorded cost is.
With ``--judge-batch`` a whole batch round is in flight before its cost is known, so the cap can
be passed by up to one round. A model with no known price cannot be capped: with a cap, its calls
are refused at once, saying how to give it a price (a judge that may cost anything is not run
under a cap); without a cap its cost is reported unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.llm.base import LlmCallError, TokenUsage
from assay.llm.prices import PriceBook


class CostCapReached(LlmCallError):
    """The run's ``--max-cost`` was reached (or a judge's price is unknown under a cap): this
    judge call was not started. Never retried."""

    retryable = False


def cap_words(max_usd: float) -> str:
    """The cap as the option is written: ``--max-cost 0.50``."""
    if round(max_usd, 2) == max_usd:
        return f"--max-cost {max_usd:.2f}"
    return f"--max-cost {max_usd:g}"


@dataclass
class CostMeter:
    """What a run's judges have spent, in US dollars, per metric; ``max_usd`` caps it (None: no
    cap). ``unpriced`` holds the models whose cost is unknown (their calls are not in the sums).
    """

    prices: PriceBook = field(default_factory=PriceBook)
    max_usd: float | None = None
    by_metric: dict[str, float] = field(default_factory=dict)
    unpriced: set[str] = field(default_factory=set)
    refused: int = 0
    """Judge calls not started because of the cap."""

    def __post_init__(self) -> None:
        if self.max_usd is not None and self.max_usd < 0:
            raise ValueError(f"max_usd cannot be negative, got {self.max_usd}")

    @property
    def spent_usd(self) -> float:
        """Dollars spent over every metric."""
        return sum(self.by_metric.values())

    @property
    def reached(self) -> bool:
        """Whether the cap is reached: no new judge call starts."""
        return self.max_usd is not None and self.spent_usd >= self.max_usd

    def reason(self) -> str:
        """The NOT_EVALUATED reason of a verdict the cap stopped: ``--max-cost 0.50 reached``."""
        assert self.max_usd is not None
        return f"{cap_words(self.max_usd)} reached"

    def check(self, model: str) -> None:
        """Raise :class:`CostCapReached` when a call to ``model`` must not start: the cap is
        reached, or ``model`` has no known price under a cap (counted in :attr:`refused`)."""
        refused = self.refusal(model)
        if refused is not None:
            self.refused += 1
            raise refused

    def refusal(self, model: str) -> CostCapReached | None:
        """Why a call to ``model`` must not start (the error :meth:`check` raises), or None;
        counts nothing. A caller that can answer from the response cache instead (an answer
        already paid for costs nothing) asks this first."""
        if self.max_usd is None:
            return None
        if self.reached:
            return CostCapReached(
                f"{self.reason()} (spent ${self.spent_usd:.4f}); no more judge calls were started"
            )
        if self.prices.find(model) is None:
            return CostCapReached(
                f"{cap_words(self.max_usd)} needs a price for {model}, and none is known: "
                "add it under 'prices' in the config (US dollars per million tokens, "
                '"input" and "output")'
            )
        return None

    def charge(
        self, metric: str, model: str, usage: TokenUsage, *, batched: TokenUsage | None = None
    ) -> float | None:
        """Count ``usage`` of ``model`` against ``metric``; its cost (None when unknown).
        ``batched`` is the part of it a batch API answered (``usage.batched``)."""
        dollars = self.prices.cost(model, usage, batched=batched)
        if dollars is None:
            if usage.calls:
                self.unpriced.add(model)
            return None
        self.by_metric[metric] = self.by_metric.get(metric, 0.0) + dollars
        return dollars

    def metric_costs(self) -> dict[str, float]:
        """Dollars per metric, rounded to a millionth (what results record)."""
        return {metric: round(dollars, 6) for metric, dollars in sorted(self.by_metric.items())}


__all__ = ["CostCapReached", "CostMeter", "cap_words"]
