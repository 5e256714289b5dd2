"""How many of the eval sets' cases the traces record: a traces file of another eval set is said
in one line, before anything is scored, instead of a "no trace" row per case.

Only the first :data:`CHECKED` cases of each eval set are looked at, so a streamed eval set of a
million cases is not read through for it; the counts then say "of the first".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from assay.errors import AssayError
from assay.evalset.case import EvalSet
from assay.results.keys import TraceKey
from assay.results.traces import Traces

CHECKED = 1000
"""Cases per eval set whose ids are looked up."""
_NAMED = 5
"""Ids named in a message."""


@dataclass(frozen=True)
class Coverage:
    """The eval ids looked up, and those the traces have no run for."""

    checked: int
    missing: list[str]
    partial: bool
    """Whether only the first :data:`CHECKED` cases of some eval set were looked at."""

    @property
    def found(self) -> int:
        """How many of the ids looked up have a trace."""
        return self.checked - len(self.missing)


def recorded_keys(traces: Traces) -> dict[TraceKey, None]:
    """Every case the traces record, in the files' order (the spilled ones by key, without
    parsing them)."""
    keys = dict.fromkeys([*traces.by_case, *traces.later_runs])
    for cases in traces.spilled.values():
        keys.update(dict.fromkeys(cases))
    keys.update(traces.sessions)  # a session that cannot be scored still names its case
    return keys


def coverage(traces: Traces, eval_sets: Sequence[EvalSet]) -> Coverage:
    """Which cases of ``eval_sets`` (their first :data:`CHECKED` each) have no trace, as
    :meth:`Traces.runs` finds them: by eval set id and eval id, else by eval id alone."""
    # each case asked of the traces: listing every case they record (recorded_keys) would cost a
    # million tuples at the peak of a million-case run, for the thousand looked up
    checked, missing, partial = 0, [], False
    for eval_set in eval_sets:
        partial = partial or len(eval_set.eval_cases) > CHECKED
        for case in islice(eval_set.eval_cases, CHECKED):
            checked += 1
            if not (
                traces.names((eval_set.eval_set_id, case.eval_id))
                or traces.names((None, case.eval_id))
            ):
                missing.append(case.eval_id)
    return Coverage(checked, missing, partial)


def _listed(ids: Sequence[str], total: int | None = None) -> str:
    total = len(ids) if total is None else total
    shown = ", ".join(ids[:_NAMED])
    return shown + (f", … ({total} in all)" if total > _NAMED else "")


def _other_sets(traces: Traces, eval_sets: Sequence[EvalSet], missing: Sequence[str]) -> str:
    """The eval set ids the traces record the missing cases under, when they do."""
    wanted = set(missing)
    ours = {eval_set.eval_set_id for eval_set in eval_sets}
    others = sorted(
        {
            s
            for s, eval_id in recorded_keys(traces)
            if s is not None and s not in ours and eval_id in wanted
        }
    )
    return ", ".join(repr(s) for s in others)


def mismatch(traces: Traces, eval_sets: Sequence[EvalSet]) -> tuple[str, bool] | None:
    """What to say when the traces lack some of the eval sets' cases, and whether they lack
    every one (a traces file of another eval set, or no trace at all); None when none is
    missing."""
    found = coverage(traces, eval_sets)
    if not found.missing:
        return None
    sources = ", ".join(traces.sources) or "the traces"
    first = "of the first " if found.partial else "of "
    counted = f"{found.found} {first}{found.checked} eval ids found in {sources}"
    if found.found:
        return (
            f"{counted}; no trace for {_listed(found.missing)} (those cases are not evaluated)",
            False,
        )
    others = _other_sets(traces, eval_sets, found.missing)
    if others:
        return f"{counted}: it records them for eval set {others} (another eval set's run?)", True
    recorded = list(dict.fromkeys(eval_id for _, eval_id in recorded_keys(traces)))
    if not recorded:
        return f"{counted}: it records no case (are they all not evaluated?)", True
    has = _listed(recorded)
    return f"{counted}; it has {has} (did you pass the traces of another eval set?)", True


def extra_sessions(traces: Traces, eval_sets: Sequence[EvalSet]) -> str | None:
    """What to say of the sessions read from span files that match no case of the eval sets
    (their case keys named; only the first :data:`CHECKED` cases of each set are looked at, and
    then nothing is said when some set has more); None when every session has a case."""
    if not traces.sessions or any(len(s.eval_cases) > CHECKED for s in eval_sets):
        return None
    ids = {case.eval_id for eval_set in eval_sets for case in eval_set.eval_cases}
    extra = [eval_id for _, eval_id in traces.sessions if eval_id not in ids]
    if not extra:
        return None
    return (
        f"{len(extra)} session(s) in the span files match no eval case (not scored): "
        f"{_listed(extra)}; a session is matched by its case key (--trace-case-key)"
    )


def traces_note(traces: Traces, eval_sets: Sequence[EvalSet]) -> str | None:
    """The line to print when the traces lack some of the eval sets' cases or have sessions of
    no case (None when neither); raises :class:`~assay.errors.AssayError` with it when they lack
    every case, since nothing could be scored."""
    found = mismatch(traces, eval_sets)
    extra = extra_sessions(traces, eval_sets)
    if found is None:
        return extra
    message, none_found = found
    if none_found:
        raise AssayError(message)
    return message if extra is None else f"{message}\n{extra}"
