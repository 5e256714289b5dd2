"""Reading a large traces file a case at a time (see :mod:`assay._internal.json_stream`).

Each case's actual invocations are checked as they are read, with the problems the eager reader
(:mod:`assay.results.traces`) reports, and their JSON put into the process's spill file under
kind ``"trace"``: one key per case (:func:`spill_key`: the load's prefix, the eval set id and the
eval_id), the run as index. What is kept in memory is which runs of which case were stored.

* The mapping ``{eval_id: [Invocation, ...], "<eval_id>#run2": [...]}`` is read member by
  member, in one pass when its first key is none of an EvalSetResult's (else after a first
  pass that makes sure it is no ADK result; one found later is read again as such).
* ADK result files (an object with ``eval_case_results``, a list of them, or the legacy
  double-encoded string of either) are read in two passes: the first notes each set's
  ``eval_set_id`` (it may come after the cases) and how many cases it has, the second checks the
  cases in turn.

Shapes the eager reader alone reads (a key given twice, a set spelling ``eval_case_results`` in
both cases...) raise :class:`~assay._internal.json_stream.NotStreamable`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from assay._internal.files import type_name
from assay._internal.json_stream import (
    EXACT_LIMIT,
    TYPE_NAMES,
    Fields,
    JsonError,
    Member,
    NotStreamable,
    Source,
    SpanFallback,
    Spans,
    built,
    events,
    items,
    kvitems,
    open_json,
    scan,
    yajl_unsure,
)
from assay._internal.spill import Spill, shared_spill
from assay.errors import Problem, TracesError, format_path, problems_from_validation, short_value
from assay.evalset.fast_check import surely_invocations, surely_invocations_json
from assay.evalset.invocation import Invocation
from assay.results.keys import TraceKey
from assay.results.run_index import KIND as KIND
from assay.results.run_index import ORDER_KIND, RunIndex, order_key
from assay.results.run_index import spill_key as spill_key

RUN_KEY = re.compile(r"^(?P<eval_id>.+)#run(?P<run>[0-9]+)$")
"""``<eval_id>#run<N>``: the key ``--save-traces`` writes run N (N ≥ 2) of a case under."""

INVOCATIONS = TypeAdapter(list[Invocation])

_SET_ID_KEYS = frozenset({"eval_set_id", "evalSetId"})
_CASES_KEYS = frozenset({"eval_case_results", "evalCaseResults"})
_RESULT_KEYS = (
    _SET_ID_KEYS
    | _CASES_KEYS
    | {
        "eval_set_result_id",
        "evalSetResultId",
        "eval_set_result_name",
        "evalSetResultName",
        "creation_timestamp",
        "creationTimestamp",
    }
)
"""The keys of an ADK EvalSetResult: an object that starts with one is read as one."""
_BATCH = 512


def validate_invocations(data: Any, file: str, path: list[str | int]) -> list[Invocation]:
    """``data`` checked as a list of invocations, or TracesError naming ``path`` in ``file``."""
    try:
        return INVOCATIONS.validate_python(data)
    except ValidationError as exc:
        raise TracesError(problems_from_validation(exc, file, data, path)) from None


def check_invocations(data: Any, file: str, path: list[str | int]) -> None:
    """``data`` checked as a list of invocations without building them (they are built when
    scored): by :func:`~assay.evalset.fast_check.surely_invocations`, else by the models, which
    raise TracesError naming ``path`` in ``file``."""
    if not surely_invocations(data):
        validate_invocations(data, file, path)


def parse_invocations(body: bytes) -> list[Invocation]:
    """A run's invocations from the JSON the spill file holds."""
    return INVOCATIONS.validate_json(body)


def mapping_key(eval_id: str) -> tuple[str, int]:
    """The case and run a key of the mapping shape names (``c#run2`` is run 2 of ``c``)."""
    numbered = RUN_KEY.match(eval_id)
    run = int(numbered["run"]) if numbered else 1
    case_id = numbered["eval_id"] if numbered and run >= 1 else eval_id
    return case_id, max(run, 1)


def field_key(data: dict[str, Any], snake: str) -> str:
    """The key ``data`` spells a field with: ``snake`` or its camelCase form (ADK reads both)."""
    head, *rest = snake.split("_")
    camel = head + "".join(word.capitalize() for word in rest)
    return camel if snake not in data and camel in data else snake


def case_actuals(
    case: Any, file: str, where: list[str | int], problems: list[Problem]
) -> tuple[str, list[tuple[Any, Invocation]]] | None:
    """The eval_id of a case result and its actual invocations (each as given and as checked),
    or None when it gives no trace: it is no case result (a problem is added to ``problems``),
    or it was not evaluated for want of a trace. Problems of single invocations are added to
    ``problems`` too; the valid ones are still returned."""
    eval_id = case.get(field_key(case, "eval_id")) if isinstance(case, dict) else None
    if not isinstance(case, dict) or not isinstance(eval_id, str):
        problems.append(Problem(file, format_path(where), "expected a case result with 'eval_id'"))
        return None
    rows_key = field_key(case, "eval_metric_result_per_invocation")
    rows = case.get(rows_key)
    rows = [] if rows is None else rows
    if not isinstance(rows, list):
        problems.append(
            Problem(
                file, format_path([*where, rows_key]), f"expected a list; got {type_name(rows)}"
            )
        )
        return None
    if not rows:  # not evaluated for want of a trace: still no trace
        return None
    found: list[tuple[Any, Invocation]] = []
    for r, row in enumerate(rows):
        actual_key = field_key(row, "actual_invocation") if isinstance(row, dict) else ""
        row_path = [*where, rows_key, r, actual_key or "actual_invocation"]
        actual = row.get(actual_key) if isinstance(row, dict) else None
        try:
            found += zip([actual], validate_invocations([actual], file, row_path[:-1]), strict=True)
        except TracesError as exc:
            problems.extend(_unwrap(p, row_path) for p in exc.problems)
    return eval_id, found


def _unwrap(problem: Problem, row_path: list[str | int]) -> Problem:
    """Rewrite ``...[r][0].x`` (the one-item list validated) as ``...[r].actual_invocation.x``."""
    wrapped = format_path([*row_path[:-1], 0])
    if problem.path.startswith(wrapped):
        rest = problem.path[len(wrapped) :]
        return Problem(problem.file, format_path(row_path) + rest, problem.message)
    return problem


@dataclass
class Spilled:
    """What a streamed traces file gave: the runs stored in the spill file, by run then case."""

    runs: dict[int, RunIndex] = field(default_factory=dict)


class _Writer:
    """Runs put into the spill file in batches, and noted in :attr:`found`; after a problem
    nothing more is stored."""

    def __init__(self, file: str) -> None:
        self.spill: Spill = shared_spill()
        self.prefix = self.spill.new_key(file)
        self.found = Spilled()
        self._batch: list[tuple[str, int, bytes]] = []
        self._failed = False
        self._listed: dict[int, int] | None = None
        """For the mapping shape (:meth:`list_in_spill`): how many ids each run listed."""
        self._order: list[tuple[str, int, bytes]] = []

    def list_in_spill(self) -> None:
        """Note the mapping's runs in the spill file (:data:`ORDER_KIND`), not in memory: a
        mapping's cases have no set id, and :meth:`given_twice` is asked at the end."""
        self._listed = {}

    def add(self, key: TraceKey, run: int, raw: Any) -> None:
        """Note the run (to tell a key given twice even after a problem) and store it."""
        self.add_json(key, run, None if self._failed else pydantic_core.to_json(raw))

    def add_json(self, key: TraceKey, run: int, body: bytes | None) -> None:
        """:meth:`add` for a run given as its JSON text (None after a problem)."""
        if self._listed is None:
            self.found.runs.setdefault(run, RunIndex())[key] = self.prefix
        else:
            place = self._listed.get(run, 0)
            self._listed[run] = place + 1
            self._order.append((order_key(self.prefix, run), place, key[1].encode()))
        if not self._failed and body is not None:
            self._batch.append((spill_key(self.prefix, key), run, body))
        if len(self._batch) >= _BATCH or len(self._order) >= _BATCH:
            self.flush()

    def given_twice(self) -> bool:
        """Whether a run listed in the spill was given twice (the mapping's ``c`` twice, or
        ``c`` and ``c#run1``)."""
        self.flush()
        listed = self._listed or {}
        return any(
            self.spill.repeats_body(ORDER_KIND, order_key(self.prefix, run)) for run in listed
        )

    def sealed(self) -> Spilled:
        """What was found: runs listed in the spill are asked of it (:meth:`RunIndex.in_spill`)."""
        self.flush()
        if self._listed is not None:
            self.found.runs = {
                run: RunIndex.in_spill(self.spill, self.prefix, run, count)
                for run, count in self._listed.items()
            }
        return self.found

    def restart(self) -> None:
        """Forget every run, stored or noted, to read the file again from its start."""
        self._batch.clear()
        self._order.clear()
        self.spill.drop_prefix(KIND, self.prefix)
        self.spill.drop_prefix(ORDER_KIND, self.prefix)
        self.found = Spilled()
        self._failed = False
        self._listed = {} if self._listed is not None else None

    def flush(self) -> None:
        if self._batch:
            self.spill.put_many(KIND, self._batch)
            self._batch = []
        if self._order:
            self.spill.put_many(ORDER_KIND, self._order)
            self._order = []

    def fail(self) -> None:
        """Store no more, and drop what was stored (the runs noted are no use after; ids listed
        in the spill are still listed, to tell a run given twice)."""
        if not self._failed:
            self._failed = True
            self._batch.clear()
            self.spill.drop_prefix(KIND, self.prefix)

    def drop(self) -> None:
        """:meth:`fail`, and the listed ids too (the load is given up)."""
        self.fail()
        self._order.clear()
        self.spill.drop_prefix(ORDER_KIND, self.prefix)


def load_streamed(path: Path) -> Spilled:
    """Read a traces file into the spill file, or raise TracesError with every problem (or
    :class:`NotStreamable`, or :data:`~assay._internal.json_stream.JsonError` for malformed JSON)."""
    file = str(path)
    if _first_key(path) not in _RESULT_KEYS | {None}:  # a mapping, surely: one pass
        writer = _Writer(file)
        try:
            _mapping(path, file, writer)
            return writer.sealed()
        except _ResultAfterAll:
            writer.drop()
        except BaseException:
            writer.drop()
            raise
    writer = _Writer(file)
    try:
        top = scan(path, note=_noted, keep=_kept, elements=True)
        if top.kind == "string":  # ADK's legacy writer double-encodes JSON
            _legacy(top.value, path, writer)
        else:
            _read(top, path, file, writer)
        return writer.sealed()
    except BaseException:
        writer.drop()
        raise


class _ResultAfterAll(Exception):
    """An object read as a mapping has ``eval_case_results`` after other keys."""


def _first_key(source: Source) -> str | None:
    """The first key of the top-level object, if the document is an object with a key."""
    with open_json(source) as handle:
        stream = events(handle)
        if next(stream, ("", None))[0] != "start_map":
            return None
        kind, key = next(stream)
        return key if kind == "map_key" else None


def _noted(key: str) -> bool:
    return key in _SET_ID_KEYS or key in _CASES_KEYS


def _kept(key: str, kind: str) -> bool:
    return key in _SET_ID_KEYS


def _legacy(text: str, path: Path, writer: _Writer) -> None:
    """A document double-encoded as a JSON string: streamed from its text (a string that is not
    JSON is the eager reader's to report)."""
    inner = text.encode("utf-8")
    try:
        top = scan(inner, note=_noted, keep=_kept, elements=True)
    except JsonError:
        if path.stat().st_size <= EXACT_LIMIT:  # as pydantic reads it, it may be JSON
            raise NotStreamable("a string") from None
        top = None
    if top is None or top.kind == "string":
        raise TracesError([_unexpected(str(path), "a string")])
    _read(top, inner, str(path), writer)


def _read(top: Any, source: Source, file: str, writer: _Writer) -> None:
    if top.kind == "start_map" and any(m.key in _CASES_KEYS for m in top.members):
        _set_results([top.members], source, file, writer, single=True)
    elif top.kind == "start_array" and top.elements:
        not_objects = [
            Problem(
                file, format_path([i]), f"expected an eval set result object; got {short_value(d)}"
            )
            for i, d in enumerate(top.elements)
            if not isinstance(d, Fields)
        ]
        if not_objects:
            raise TracesError(not_objects)
        results = [d.members for d in top.elements]
        _set_results(results, source, file, writer, single=False)
    elif top.kind == "start_map":
        _mapping(source, file, writer)
    elif top.kind == "start_array":
        raise TracesError([_unexpected(file, "an empty list")])
    else:
        raise TracesError([_unexpected(file, TYPE_NAMES[top.kind])])


def _unexpected(file: str, got: str) -> Problem:
    return Problem(
        file,
        "",
        "expected an object mapping eval_id to a list of invocations, or an ADK "
        f".evalset_result.json (or a list of them); got {got}",
    )


def _mapping(source: Source, file: str, writer: _Writer) -> None:
    """The ``{eval_id: [Invocation, ...]}`` shape, a member at a time: each run's text as the file
    has it (:func:`_mapping_spans`), or, where that reader is unsure, as ijson builds it."""
    writer.list_in_spill()
    try:
        _mapping_spans(source, file, writer)
    except SpanFallback:
        writer.restart()
        _mapping_events(source, file, writer)


def _mapping_spans(source: Source, file: str, writer: _Writer) -> None:
    """:func:`_mapping_events`' reading, with each run's text stored as it is and checked by a
    typed decoder; a run that check refuses is built by ijson and judged as that reader judges
    it. What is not a clean read or a list of problems (malformed JSON, a run given twice, an
    ADK result) raises :class:`SpanFallback` for that reader to say."""
    problems: list[Problem] = []
    with open_json(source) as handle:
        spans = Spans(handle)
        for eval_id in spans.members():
            case_id, run = mapping_key(eval_id)
            if eval_id in _CASES_KEYS:
                raise SpanFallback("an ADK result")
            body = spans.value()
            if body[:1] == b"[" and not yajl_unsure(body) and surely_invocations_json(body):
                writer.add_json((None, case_id), run, body)
                continue
            _judged(built(body), eval_id, file, writer, problems)
        spans.end()
    if writer.given_twice():
        raise SpanFallback("a run given twice")
    if problems:
        raise TracesError(problems)


def _judged(data: Any, eval_id: str, file: str, writer: _Writer, problems: list[Problem]) -> None:
    """One member of the mapping, built as Python objects, checked (its problems added to
    ``problems``) and noted, stored while no problem was found."""
    if not isinstance(data, list):
        got = f"expected a list of invocations; got {type_name(data)}"
        problems.append(Problem(file, format_path([eval_id]), got))
    else:
        try:
            check_invocations(data, file, [eval_id])
        except TracesError as exc:
            problems.extend(exc.problems)
    if problems:
        writer.fail()
    case_id, run = mapping_key(eval_id)
    writer.add((None, case_id), run, data)


def _mapping_events(source: Source, file: str, writer: _Writer) -> None:
    """The mapping read from ijson's events, each run built as Python objects."""
    problems: list[Problem] = []
    with open_json(source) as handle:
        for eval_id, data in kvitems(handle):
            if eval_id in _CASES_KEYS:  # an ADK result with other keys first
                raise _ResultAfterAll(eval_id)
            _judged(data, eval_id, file, writer, problems)
    if writer.given_twice():
        # a key given twice (the eager reader keeps the last, where the first was), or two keys
        # for one run ("c" and "c#run1"): left to the eager reader, whatever else was found
        raise NotStreamable("a run given twice")
    if problems:
        raise TracesError(problems)


@dataclass
class _Set:
    """One eval set result as the first pass saw it."""

    base: list[str | int]
    set_id: str | None
    cases_key: str
    count: int
    problem: Problem | None = None


def _plan(members: list[Member], base: list[str | int], file: str) -> _Set:
    keys = [m.key for m in members]
    if len(set(keys)) != len(keys) or set(keys) >= _CASES_KEYS:
        raise NotStreamable("a key given twice")
    by_key = {m.key: m for m in members}
    set_key = field_key(dict.fromkeys(keys), "eval_set_id")
    set_id = by_key[set_key].value if set_key in by_key else None
    cases_key = field_key(dict.fromkeys(keys), "eval_case_results")
    cases = by_key.get(cases_key)
    found = _Set(base, set_id if isinstance(set_id, str) else None, cases_key, 0)
    if cases is not None and cases.kind == "start_array":
        found.count = cases.items
    elif cases is not None and cases.kind == "start_map":  # its keys could look like items
        raise NotStreamable("an object of cases")
    else:
        got = TYPE_NAMES[cases.kind] if cases is not None else "null"
        where = format_path([*base, cases_key])
        found.problem = Problem(file, where, f"expected a list of case results; got {got}")
    return found


def _set_results(
    results: list[list[Member]], source: Source, file: str, writer: _Writer, *, single: bool
) -> None:
    """ADK set results: each case's actual invocations, a case listed again being its next run
    (ADK's num_runs)."""
    plans = [_plan(m, [] if single else [s], file) for s, m in enumerate(results)]
    spellings = {p.cases_key for p in plans if p.problem is None}
    if len(spellings) > 1:
        raise NotStreamable("both spellings of eval_case_results")
    problems: list[Problem] = []
    seen: dict[TraceKey, int] = {}
    prefix = f"{''.join(spellings)}.item" if single else f"item.{''.join(spellings)}.item"
    with open_json(source) as handle:
        cases = items(handle, prefix) if spellings else iter(())
        for plan in plans:
            if plan.problem is not None:
                problems.append(plan.problem)
                continue
            for c in range(plan.count):
                where: list[str | int] = [*plan.base, plan.cases_key, c]
                found = case_actuals(next(cases), file, where, problems)
                if found is None:
                    continue
                eval_id, actuals = found
                key: TraceKey = (plan.set_id, eval_id)
                seen[key] = seen.get(key, 0) + 1
                if problems:
                    writer.fail()
                writer.add(key, seen[key], [raw for raw, _ in actuals])
    if problems:
        raise TracesError(problems)
