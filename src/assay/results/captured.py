"""A case's metric rows as scoring makes them (:mod:`assay.runner.scoring`), captured for the run
history to encode (:mod:`assay.history.compact`): the shapes both sides share, here below both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.metrics.base import EvalStatus
from assay.results.model import EvalMetricResult, EvalMetricResultDetails

Head = tuple[str, float | None, dict[str, Any] | None, str | None]
"""A metric as each of its rows names it: name, threshold, criterion, custom function."""
RowValues = tuple[float | None, EvalStatus, object, dict[str, Any] | None]
"""What a metric row is made of: score, status, rubric scores, other details."""


class Headed(Protocol):
    """A configured metric (:class:`~assay.runner.scoring.ConfiguredMetric`), as far as its rows
    name it."""

    @property
    def head(self) -> Head: ...


@dataclass(frozen=True)
class StoredRecord:
    """A case's record for the run history, encoded where the case was scored (in another
    process, by a :class:`~assay.history.compact.CaseEncoder` of its own): the text, and, for a
    record that follows a metric header, that encoder's number for it and the header itself
    (the run's encoder numbers it as its own); and the result itself, packed."""

    text: str
    number: int | None = None
    header: tuple[Head, ...] | None = None
    output: bytes | None = None
    """The result as the history keeps it for a resumed run
    (:func:`~assay.results.collected.pack_output`)."""


@dataclass
class CapturedRows:
    """A case's metric rows as scoring made them, kept for the run history to encode
    (:mod:`assay.history.compact`) without reading thirty cold rows back: per metric, its head,
    what each row was made of (the case's row first, then each invocation's) and the rows.
    Capturing only keeps references; the encoder does the rest."""

    heads: list[Head] = field(default_factory=list)
    values: list[Sequence[RowValues]] = field(default_factory=list)
    rows: list[Sequence[EvalMetricResult]] = field(default_factory=list)
    length: int | None = None
    """How many rows each metric has (-1 when they differ)."""
    actual: tuple[list[Any], Sequence[Any]] | None = None
    """Where the actual invocations came from in the run's inputs, and the invocations: a
    traces entry, ``["t", eval set id, eval id, run]``, read for this case alone."""
    expected: tuple[list[Any], Sequence[Any]] | None = None
    """Where the expected invocations came from, ``[eval set position, case index]``, and the
    invocations."""
    stored: StoredRecord | None = None
    """The case's record, already encoded where it was scored: the run's encoder takes it as it
    is (its result is then a summary, without the rows the record was made of)."""

    def came_from(
        self,
        trace: list[Any] | None,
        actual: Sequence[Any] | None,
        place: list[int] | None,
        expected: Sequence[Any] | None,
    ) -> None:
        """Say where the case's invocations came from, for the encoder to refer to them: its
        traces entry (``trace``) for ``actual``, its ``[position, index]`` among the run's eval
        sets (``place``) for ``expected``, each when there is one."""
        if trace is not None and actual:
            self.actual = (trace, actual)
        if place is not None and expected:
            self.expected = (place, expected)

    def made(
        self,
        configured: Headed,
        values: Sequence[RowValues],
        rows: Sequence[EvalMetricResult],
    ) -> None:
        """One metric's ``rows``, just made of ``values``."""
        self.heads.append(configured.head)
        self.values.append(values)
        self.rows.append(rows)
        if self.length is None:
            self.length = len(rows)
        elif self.length != len(rows):
            self.length = -1

    def add(self, configured: Headed, rows: Sequence[EvalMetricResult]) -> None:
        """One metric's ``rows``, read back."""
        values = [
            (row.score, row.eval_status, row.details.rubric_scores, set_details(row.details))
            for row in rows
        ]
        self.made(configured, values, rows)


Captures = dict[int, CapturedRows]
"""Captured rows by ``id`` of the case result they belong to."""


def set_details(details: EvalMetricResultDetails) -> dict[str, Any] | None:
    """The fields of ``details`` that are set, or None when none is (as the history stores
    them)."""
    found = {key: value for key, value in details.__dict__.items() if value is not None}
    return found or None
