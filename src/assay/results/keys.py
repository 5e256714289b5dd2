"""The keys that name a case across assay: :class:`CaseKey`, a case result's place in a run (the
history, ``--resume`` and ``assay compare`` match results by it), and :data:`TraceKey`, the case
a traces file records runs for.

They are two notions, not one: a traces file need not say its eval set (an ADK traces file of
one set often does not), so a :data:`TraceKey`'s set id may be None, and it holds no run
number: a case's runs are kept under it, by number. Both are tuples: a plain tuple of the same
values finds the same entry."""

from __future__ import annotations

from typing import NamedTuple


class CaseKey(NamedTuple):
    """Which case a result belongs to: eval set, eval case and run number (1 for the first)."""

    eval_set_id: str
    eval_id: str
    run: int

    @property
    def label(self) -> str:
        """``set / case``, with ``(run N)`` after it for runs other than the first."""
        run = f" (run {self.run})" if self.run != 1 else ""
        return f"{self.eval_set_id} / {self.eval_id}{run}"


TraceKey = tuple[str | None, str]
"""The case a traces file records runs for: its eval set id (None when the file does not say)
and its eval id."""


__all__ = ["CaseKey", "TraceKey"]
