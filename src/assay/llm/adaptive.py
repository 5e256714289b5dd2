"""How many calls one provider endpoint is sent at once, adapted to what it serves.

A run starts at ``--judge-concurrency`` (the ceiling, never exceeded) and moves the limit by what
the answers say. The rule is AIMD whose decrease on refusals is measured rather than guessed:

* **Each refusal (HTTP 429; 503 and 529, "overloaded", alike) lowers the limit by one.** Against
  a server that serves ``C`` requests at once, each refused request is exactly one too many, so
  subtracting one per refusal lands on ``C`` within one round from any start (16 sent to a
  4-at-once server: 12 refused, limit 4), where halving would undershoot to ``C/2`` on every
  probe and refuse about one call in ten. Over a round it *is* a multiplicative decrease, by the
  share refused: ``limit * (1 - refused/limit)``; a rate window that refuses every call takes
  the limit to 1 within a round.
* **A refusal at one call at a time holds the whole endpoint back for its ``Retry-After``**: the
  server serves nobody now, so no call starts before then (the refused call itself always waits
  at least that long before its retry, :class:`~assay.llm.client.RetryPolicy`). Above one the
  other calls are being served, so only the refused call waits.
* **A smoothed latency past twice its baseline (plus a little slack) halves the limit**, once
  per rise (answers to calls sent before the cut do not cut again): the server queues instead
  of refusing, and how far over its capacity we are is unknown, so the classic multiplicative
  decrease applies.
* **Success grows the limit additively**, by one per round of calls (``1/limit`` a call), and
  only while the limit is in use (the call shared the server with ``limit`` calls of ours): a
  limit never filled learns nothing. After a refusal the limit stays put for
  :attr:`AdaptivePolicy.hold_rounds` rounds, twice as many after each probe that fails again
  (up to :attr:`AdaptivePolicy.max_hold_rounds`), so a steady server costs a handful of
  refusals per run, not one every few rounds.

:class:`AdaptiveLimit` is plain state with no clock or loop of its own: an
:class:`~assay.llm.client.LlmClient` drives it in one process, the cluster's
:class:`~assay.llm.shared.Limiter` actor drives one per key for a Ray run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

OVERLOAD_STATUSES = frozenset({429, 503, 529})
"""HTTP statuses that say the server has too much to do now (too many requests; unavailable;
Anthropic's overloaded): the signals that lower the limit."""


@dataclass(frozen=True)
class AdaptivePolicy:
    """The constants of :class:`AdaptiveLimit`: ``decrease`` the multiplicative factor;
    ``latency_ratio`` how far the smoothed latency may rise over its baseline before it counts
    as the server queueing (``latency_slack_s`` more is always allowed, so a fast server's
    jitter is not a rise); ``smoothing`` the weight of a new latency in the average (ignored
    before ``min_samples`` answers); ``hold_rounds``/``max_hold_rounds`` the rounds spent at a
    level after a failed probe above it."""

    decrease: float = 0.5
    latency_ratio: float = 2.0
    latency_slack_s: float = 0.05
    smoothing: float = 0.1
    min_samples: int = 20
    hold_rounds: float = 4.0
    max_hold_rounds: float = 64.0

    def __post_init__(self) -> None:
        if not 0 < self.decrease < 1:
            raise ValueError("decrease must be between 0 and 1")
        if self.latency_ratio <= 1:
            raise ValueError("latency_ratio must be above 1")
        if not 0 < self.smoothing <= 1:
            raise ValueError("smoothing must be in (0, 1]")
        if self.hold_rounds < 0 or self.max_hold_rounds < self.hold_rounds:
            raise ValueError("hold rounds must be >= 0, the maximum at least the first")


@dataclass(frozen=True)
class Ticket:
    """One attempt sent: how many were in flight with it (itself included) and the round of
    the limit it was sent in."""

    level: int
    epoch: int


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended: ``ok`` an answer that took ``latency_s``; else the HTTP
    ``status`` it failed with (None: no answer at all, which says nothing about load) and the
    ``Retry-After`` seconds the server asked for."""

    ok: bool
    status: int | None = None
    latency_s: float | None = None
    retry_after: float | None = None


@dataclass
class SharedSlot:
    """What a :class:`~assay.llm.shared.SharedLimit` may yield for a held slot: the client sets
    :attr:`outcome` before the block ends, and the limit adapts to it when the slot is
    released (a cluster's :class:`~assay.llm.shared.Limiter` does)."""

    outcome: Outcome | None = None


@dataclass
class AdaptiveStats:
    """What the limit did: calls refused for load, cuts (measured and multiplicative), the
    lowest limit reached, and the seconds new calls were held back for a ``Retry-After``."""

    refused: int = 0
    measured_cuts: int = 0
    halvings: int = 0
    lowest: int = 0
    paused_s: float = 0.0


class AdaptiveLimit:
    """The adapted limit of one endpoint (see the module docstring); ``ceiling`` is where it
    starts and the most it reaches. Call :meth:`sent` when an attempt starts and
    :meth:`finished` when it ends; :attr:`limit` is how many may be in flight."""

    def __init__(self, ceiling: int, policy: AdaptivePolicy | None = None) -> None:
        if ceiling < 1:
            raise ValueError("ceiling must be at least 1")
        self.ceiling = ceiling
        self.policy = policy or AdaptivePolicy()
        self.in_flight = 0
        self.paused_until = 0.0
        """No attempt starts before this time (the caller's monotonic clock)."""
        self.stats = AdaptiveStats(lowest=ceiling)
        self._window = float(ceiling)
        self._epoch = 0
        self._failed = ceiling + 1  # the lowest level refused since a probe last held
        self._hold = 0.0  # rounds of calls at the limit still to serve before growing again
        self._hold_next = self.policy.hold_rounds
        self._latency: float | None = None
        self._baseline: float | None = None
        self._samples = 0

    @property
    def limit(self) -> int:
        """Attempts allowed in flight now (1 to the ceiling)."""
        return max(1, min(self.ceiling, math.floor(self._window + 1e-9)))

    def sent(self) -> Ticket:
        """Note an attempt starting; give its ticket to :meth:`finished`."""
        self.in_flight += 1
        return Ticket(self.in_flight, self._epoch)

    def finished(self, ticket: Ticket, outcome: Outcome, now: float = 0.0) -> None:
        """Note how the attempt of ``ticket`` ended, at ``now`` on the caller's monotonic
        clock (what a ``Retry-After`` is counted from)."""
        # in flight with it: at most what it was sent with, and what is still in flight now
        # (attempts refused at once meanwhile never shared the server with it)
        level = min(ticket.level, self.in_flight)
        self.in_flight = max(0, self.in_flight - 1)
        if outcome.ok:
            self._answered(ticket, level, outcome.latency_s)
        elif outcome.status in OVERLOAD_STATUSES:
            self._refused(ticket, outcome.retry_after, now)

    def forget(self, ticket: Ticket) -> None:
        """The attempt of ``ticket`` was abandoned (cancelled) without an outcome."""
        self.in_flight = max(0, self.in_flight - 1)

    def _answered(self, ticket: Ticket, level: int, latency_s: float | None) -> None:
        if ticket.epoch != self._epoch:
            return  # sent before the last halving: says nothing of the limit now
        if latency_s is not None and self._rising(latency_s):
            self._halve()
            return
        if level >= self._failed:  # a probe past the last refusal held: probe freely
            self._failed = self.ceiling + 1
            self._hold_next = self.policy.hold_rounds
        if level < self.limit:
            return  # the limit was not in use: nothing learnt about a higher one
        if self._hold > 0:
            self._hold -= 1.0 / self.limit
        elif self._window < self.ceiling:
            self._window = min(float(self.ceiling), self._window + 1.0 / self._window)

    def _refused(self, ticket: Ticket, retry_after: float | None, now: float) -> None:
        self.stats.refused += 1
        if ticket.epoch != self._epoch:
            return  # sent before the last halving, which has cut for it
        if self._window <= 1.0 and retry_after:  # refused at one at a time: serving nobody
            self.stats.paused_s += max(0.0, now + retry_after - max(self.paused_until, now))
            self.paused_until = max(self.paused_until, now + retry_after)
        self.stats.measured_cuts += 1
        self._window = max(1.0, self._window - 1.0)
        self._failed = min(self._failed, ticket.level)
        if self._hold <= 0:  # a probe failed (a burst of refusals counts once)
            self._hold = self._hold_next
            self._hold_next = min(self.policy.max_hold_rounds, self._hold_next * 2)
        self.stats.lowest = min(self.stats.lowest, self.limit)

    def _halve(self) -> None:
        self.stats.halvings += 1
        self._window = max(1.0, self._window * self.policy.decrease)
        self._epoch += 1
        self._failed = self.ceiling + 1
        self._hold = 0.0
        self._hold_next = self.policy.hold_rounds
        self.stats.lowest = min(self.stats.lowest, self.limit)

    def _rising(self, latency_s: float) -> bool:
        """Fold ``latency_s`` into the smoothed latency; whether it now stands past the rise
        the policy allows over its baseline (the lowest smoothed latency seen)."""
        policy = self.policy
        self._samples += 1
        if self._latency is None:
            self._latency = latency_s
        else:
            self._latency += policy.smoothing * (latency_s - self._latency)
        if self._samples < policy.min_samples:
            return False
        if self._baseline is None or self._latency < self._baseline:
            self._baseline = self._latency
        allowed = self._baseline * policy.latency_ratio + policy.latency_slack_s
        if self._latency <= allowed:
            return False
        self._baseline = self._latency / policy.latency_ratio  # one cut per rise, not per call
        return True
