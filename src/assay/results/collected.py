"""A set's case results as they finish, held in memory while few, spilled to disk when many.

A run of a few thousand cases keeps its results as models (reports read them many times, and
that is cheap). Past ``ASSAY_KEEP_CASES`` results (default 2,000) a set's results are moved to
the process's spill file (:mod:`assay.spill`) and every later one is written there as it
finishes, so memory stops growing with the eval set: what is read back is loaded again on each
pass. They are stored pickled (by this process, for itself, in a file only it can read): loading
a pickle costs a third of validating the result's JSON again, whose invocations dominate. The
summary, token usage and the count of unevaluated metrics in passed cases are kept as the
results arrive, so that reading them costs no pass at all.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator, Sequence
from typing import overload

from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.results.model import SIMULATOR, EvalCaseResult, RunSummary
from assay.spill import Spill, SpilledSequence, shared_spill

KEEP_CASES = 2000
"""Case results of one set held as models before they are spilled (``ASSAY_KEEP_CASES``)."""

_FLUSH = 256
"""Spilled results written per transaction."""

_KIND = "result"


def keep_cases() -> int:
    """``ASSAY_KEEP_CASES``, else :data:`KEEP_CASES` (0 spills every result)."""
    raw = os.environ.get("ASSAY_KEEP_CASES", "").strip()
    try:
        return max(int(raw), 0) if raw else KEEP_CASES
    except ValueError:
        return KEEP_CASES


def _dump(result: EvalCaseResult) -> bytes:
    return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)


def _parse(body: bytes) -> EvalCaseResult:
    found = pickle.loads(body)
    assert isinstance(found, EvalCaseResult)
    return found


class CaseResults(Sequence[EvalCaseResult]):
    """One set's case results in order: append each as it finishes, then read them like a list
    (each pass over spilled results parses them again)."""

    def __init__(self, keep: int | None = None, spill: Spill | None = None) -> None:
        self._keep = keep_cases() if keep is None else keep
        self._spill_given = spill
        self._held: list[EvalCaseResult] = []
        self._buffer: list[tuple[str, int, bytes]] = []
        self._spill: Spill | None = None
        self._key = ""
        self._count = 0
        self._statuses = {EvalStatus.PASSED: 0, EvalStatus.FAILED: 0}
        self._usage: dict[str, TokenUsage] = {}
        self.unevaluated_in_passed = 0
        """Applicable metrics not evaluated in cases that passed (see
        :meth:`EvalCaseResult.unevaluated_metrics`)."""

    @classmethod
    def of(cls, results: Sequence[EvalCaseResult]) -> CaseResults:
        """``results`` collected (as :func:`~assay.runner.evaluate.set_result` takes them)."""
        if isinstance(results, CaseResults):
            return results
        collected = cls()
        for result in results:
            collected.append(result)
        return collected.close()

    @property
    def spilled(self) -> bool:
        return self._spill is not None

    def append(self, result: EvalCaseResult) -> None:
        status = result.final_eval_status
        if status in self._statuses:
            self._statuses[status] += 1
        if status is EvalStatus.PASSED:
            self.unevaluated_in_passed += len(result.unevaluated_metrics())
        for metric, notes in result.assay.metrics.items():
            self._usage[metric] = self._usage.get(metric, TokenUsage()) + notes.usage
        if result.assay.simulator_usage is not None:
            before = self._usage.get(SIMULATOR, TokenUsage())
            self._usage[SIMULATOR] = before + result.assay.simulator_usage
        if self._spill is None and self._count >= self._keep:
            self._start_spilling()
        if self._spill is None:
            self._held.append(result)
        else:
            self._buffer.append((self._key, self._count, _dump(result)))
            if len(self._buffer) >= _FLUSH:
                self._flush()
        self._count += 1

    def close(self) -> CaseResults:
        """Write what is still buffered (reading does this too); the collection itself."""
        self._flush()
        return self

    @property
    def summary(self) -> RunSummary:
        passed = self._statuses[EvalStatus.PASSED]
        failed = self._statuses[EvalStatus.FAILED]
        return RunSummary(passed=passed, failed=failed, not_evaluated=self._count - passed - failed)

    @property
    def usage(self) -> dict[str, TokenUsage]:
        """Tokens used per judged metric (and by the simulated user), over every case."""
        return dict(self._usage)

    def _start_spilling(self) -> None:
        self._spill = self._spill_given or shared_spill()
        self._key = self._spill.new_key("results")
        self._buffer = [(self._key, index, _dump(held)) for index, held in enumerate(self._held)]
        self._held = []
        self._flush()

    def _flush(self) -> None:
        if self._spill is not None and self._buffer:
            self._spill.put_many(_KIND, self._buffer)
            self._buffer = []

    def _stored(self) -> Sequence[EvalCaseResult]:
        if self._spill is None:
            return self._held
        self._flush()
        return SpilledSequence(self._spill, _KIND, self._key, self._count, _parse)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> EvalCaseResult: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[EvalCaseResult]: ...
    def __getitem__(self, index: int | slice) -> EvalCaseResult | Sequence[EvalCaseResult]:
        return self._stored()[index]

    def __iter__(self) -> Iterator[EvalCaseResult]:
        return iter(self._stored())

    def __bool__(self) -> bool:
        return self._count > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        where = "spilled" if self.spilled else "held"
        return f"<{self._count} case results, {where}>"
