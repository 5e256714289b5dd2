"""The summary line (:func:`summary_line`) and the ids of the cases that did not pass that it
names: the first few named, every one counted once.

A run's summary line names the first cases that failed and says how many more did, each case
once however many runs it had. Held as a set, that was ~100 bytes a failed case when the
console prints (a million failed cases: ~100 MB, the last thing in a large run that grew with
the eval set). Past :data:`HELD` distinct ids they go to the process's spill file, which counts
them once they are all in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice

from rich.markup import escape

from assay._internal.spill import Spill, key_under, shared_spill
from assay.metrics.base import EvalStatus
from assay.results.model import RunSummary

HELD = 10_000
"""Distinct ids held in memory before the rest go to the spill file."""

_FIRST = 100
"""Ids kept in order once the rest are in the spill file: more than a line names."""
_KIND = "named-id"
_BATCH = 512


class NamedIds:
    """Distinct ids in the order first seen: :meth:`first` and :meth:`count`."""

    def __init__(self, held: int = HELD) -> None:
        self._held_max = held
        self._ids: dict[str, None] = {}
        self._first: list[str] = []
        self._spill: Spill | None = None
        self._key = ""
        self._batch: list[tuple[str, int, bytes]] = []
        self._added = 0

    def add(self, eval_id: str) -> None:
        if self._spill is None:
            self._ids[eval_id] = None
            if len(self._ids) > self._held_max:
                self._to_spill()
            return
        if len(self._first) < _FIRST and eval_id not in self._first:  # still naming the first
            self._first.append(eval_id)
        self._batch.append((self._key, self._added, eval_id.encode()))
        self._added += 1
        if len(self._batch) >= _BATCH:
            self._flush()

    def first(self, n: int) -> list[str]:
        """The first ``n`` distinct ids (``n`` at most :data:`_FIRST` once past :data:`HELD`)."""
        return list(islice(self._ids, n)) if self._spill is None else self._first[:n]

    def count(self) -> int:
        """How many distinct ids were added."""
        if self._spill is None:
            return len(self._ids)
        self._flush()
        return self._spill.distinct(_KIND, self._key)

    def _to_spill(self) -> None:
        self._spill = shared_spill()
        self._key = key_under(self._spill.new_key("named"), "")
        held, self._ids = self._ids, {}
        for eval_id in held:
            self.add(eval_id)

    def _flush(self) -> None:
        if self._spill is not None and self._batch:
            self._spill.put_many(_KIND, self._batch)
            self._batch = []

    def __bool__(self) -> bool:
        return self._spill is not None or bool(self._ids)


NAMED = 5
"""Cases the summary line names per status before ``and N more``."""


def summary_line(
    summary: RunSummary, named: Mapping[EvalStatus, Sequence[str] | NamedIds] | None = None
) -> str:
    """``N passed, N failed, N not evaluated`` with colour, then the ids of the cases that
    failed and of those not evaluated (``named``; the first :data:`NAMED` of each, then how
    many more): ``4 passed, 1 failed, 0 not evaluated; failed: convert_currency``."""
    line = (
        f"[green]{summary.passed} passed[/], [red]{summary.failed} failed[/], "
        f"[yellow]{summary.not_evaluated} not evaluated[/]"
    )
    for status, word, style in (
        (EvalStatus.FAILED, "failed", "red"),
        (EvalStatus.NOT_EVALUATED, "not evaluated", "yellow"),
    ):
        given = (named or {}).get(status, ())
        if isinstance(given, NamedIds):
            ids, count = given.first(NAMED), given.count()
        else:
            ids = list(dict.fromkeys(given))
            count = len(ids)
        if ids:
            more = f" and {count - NAMED:,} more" if count > NAMED else ""
            listed = ", ".join(escape(eval_id) for eval_id in ids[:NAMED])
            line += f"; [{style}]{word}:[/] {listed}{more}"
    return line
