"""How a case result is stored in the history: compactly, by reference to the run's inputs.

A full ``EvalCaseResult`` repeats what the run already has: the expected invocations (the eval
set), the actual ones when they came from a traces file, and each metric's criterion on every
row. Serialising all that for every case cost more than scoring a deterministic case (about
9 KB and 0.3 ms a case), so a case is stored as record version 2::

    {"v": 2, "k": 0, "c": [...], "s": [...], "t": [...], "a": ..., "e": ..., "n": ...}

``k``
    the run's metric header: each metric's name, threshold and criterion, in order, stored once
    per run (``run_metrics``). Every row of the case follows it: the case's own rows, then each
    invocation's.
``s``, ``t`` (and ``D``, ``d``)
    the rows' scores, and their statuses as hex digits (a byte each); details (rubric verdicts,
    token and duration breakdowns) as ``D``, ``[metric, details]`` where all of a metric's rows
    have the same, and ``d``, ``[row, details]`` for other rows that have any.
``c``
    eval set file, eval set id, eval id, final status, session id, user id (``x`` holds the
    session details and ADK's ``eval_metric_results`` when either is set).
``a``
    the actual invocations: ``["t", set_id, eval_id, run]``, an entry of the run's traces, or
    the invocations themselves (an agent's).
``e``
    the expected invocations: ``[position, case index]`` in the run's eval sets, null when the
    rows have none, or ``{"inline": [...]}``.
``n``
    ``[run, duration_s]`` when the case notes say nothing else, else the notes.

References are checked by object identity (the runner passes the loaded invocations through), so
checking them costs next to nothing and cannot match the wrong thing; what is not recognised is
stored in full. Where a case's invocations came from is said by the runner, captured with its
rows (a streamed eval set or traces file is never held whole, so there is nothing to look them
up in), or else found among the inputs held in memory. A result that does not follow one metric header (an imported ADK result, say)
is stored as its full JSON, which is how schema version 1 stored every case; :func:`decode`
reads both.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, cycle
from typing import Any

import pydantic_core
from pydantic import TypeAdapter

from assay.evalset.case import EvalSet
from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.results.captured import CapturedRows, Head, RowValues, StoredRecord, set_details
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultDetails,
    EvalMetricResultPerInvocation,
    trusted_row,
)
from assay.results.traces import Traces

RECORD_VERSION = 2

Header = tuple[Head, ...]
"""The metrics every row of a case follows (a row with a custom function is stored in full)."""

_INVOCATIONS = TypeAdapter(list[Invocation | None])
_FIELDS = operator.attrgetter("__dict__")  # a row's fields: faster than attribute lookups
_HEAD = operator.itemgetter("metric_name", "threshold", "criterion", "custom_function_path")
_FIRST, _SECOND, _THIRD, _FOURTH = map(operator.itemgetter, range(4))
_SCORE = operator.itemgetter("score")
_STATUS = operator.itemgetter("eval_status")
_DETAILS = operator.itemgetter("details")
_ACTUAL = operator.attrgetter("actual_invocation")
_EXPECTED = operator.attrgetter("expected_invocation")


class RecordError(ValueError):
    """A stored record cannot be read back (its inputs are missing, or it is malformed)."""


@dataclass
class Inputs:
    """What a run read: its eval sets (by position) and the traces, when it read any."""

    eval_sets: Sequence[EvalSet] = ()
    traces: Traces | None = None


@dataclass
class Encoded:
    """A case's stored text, and the metric header it introduced (to store with it)."""

    text: str
    new_header: tuple[int, str] | None = None


@dataclass
class CaseEncoder:
    """Encodes one run's case results against its inputs."""

    inputs: Inputs = field(default_factory=Inputs)
    headers: list[Header] = field(default_factory=list)
    """The run's metric headers so far (those of a resumed run, to go on from)."""

    def __post_init__(self) -> None:
        self._expected: dict[int, tuple[list[Any], Sequence[Invocation]]] = {}
        for position, eval_set in enumerate(self.inputs.eval_sets):
            if not isinstance(eval_set.eval_cases, list):  # streamed: the runner says (captured)
                continue
            for index, case in enumerate(eval_set.eval_cases):
                if case.conversation:
                    ref = [position, index]
                    self._expected[id(case.conversation[0])] = (ref, case.conversation)
        self._actual: dict[int, tuple[list[Any], Sequence[Invocation]]] = {}
        traces = self.inputs.traces
        if traces is not None:
            for (set_id, eval_id), invocations in traces.by_case.items():
                self._remember_trace(set_id, eval_id, 1, invocations)
            for (set_id, eval_id), runs in traces.later_runs.items():
                for run, invocations in runs.items():
                    self._remember_trace(set_id, eval_id, run, invocations)
        self._last = 0
        self._shared: dict[int, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        self._repeats: dict[tuple[int, int], list[Head]] = {}
        self._by_names: dict[tuple[str, ...], list[int]] = {}
        for number, header in enumerate(self.headers):
            self._by_names.setdefault(tuple(h[0] for h in header), []).append(number)

    def _remember_trace(
        self, set_id: str | None, eval_id: str, run: int, invocations: list[Invocation]
    ) -> None:
        if invocations:
            self._actual[id(invocations[0])] = (["t", set_id, eval_id, run], invocations)

    def encode(self, result: EvalCaseResult, captured: CapturedRows | None = None) -> Encoded:
        """The text to store for ``result``; ``captured``, its rows as scoring made them, spares
        reading them back."""
        if captured is not None and captured.stored is not None:
            return self._adopted(captured.stored)
        per_invocation = result.eval_metric_result_per_invocation
        rows = len(per_invocation) + 1
        if captured is not None and captured.length == rows:
            number, new = self._header(captured.heads)
            by_row = list(chain.from_iterable(zip(*captured.values, strict=True)))
            scores = list(map(_FIRST, by_row))
            statuses = bytes(map(_SECOND, by_row)).hex()
            details = self._captured_details(captured, by_row)
            return self._record(result, number, new, scores, statuses, details, captured)
        overall = result.overall_eval_metric_results
        everything = list(chain(overall, *(p.eval_metric_results for p in per_invocation)))
        fields = list(map(_FIELDS, everything))
        heads: list[Head] = list(map(_HEAD, fields))
        number, new = self._header(heads[: len(overall)])
        if heads != self._repeated(number, rows):
            stored = (number, _header_text(self.headers[number])) if new else None
            return Encoded(result.model_dump_json(), stored)  # stored in full
        width = len(overall)
        every = [set_details(_DETAILS(f)) for f in fields]
        by_metric = [every[j::width] for j in range(width)]
        scores = list(map(_SCORE, fields))
        statuses = bytes(map(_STATUS, fields)).hex()
        return self._record(result, number, new, scores, statuses, by_metric, captured)

    def _adopted(self, stored: StoredRecord) -> Encoded:
        """A record another encoder made, its metric header numbered as this run's."""
        if stored.header is None or stored.number is None:
            return Encoded(stored.text)
        number, new = self._header(stored.header)
        theirs, ours = _record_start(stored.number), _record_start(number)
        if not stored.text.startswith(theirs):
            raise RecordError(f"a record made elsewhere does not start with {theirs}")
        text = ours + stored.text[len(theirs) :]
        return Encoded(text, (number, _header_text(self.headers[number])) if new else None)

    def _record(
        self,
        result: EvalCaseResult,
        number: int,
        new: bool,
        scores: list[float | None],
        statuses: str,
        details: Sequence[Sequence[dict[str, Any] | None]],
        captured: CapturedRows | None = None,
    ) -> Encoded:
        """The stored text of a case whose rows follow header ``number``."""
        record: dict[str, Any] = {
            "v": RECORD_VERSION,
            "k": number,
            "c": [
                result.eval_set_file,
                result.eval_set_id,
                result.eval_id,
                int(result.final_eval_status),
                result.session_id,
                result.user_id,
            ],
            "s": scores,
            "t": statuses,
            "n": _notes(result.assay),
        }
        record.update(_details(details))
        if result.session_details is not None or result.eval_metric_results is not None:
            record["x"] = [result.session_details, result.eval_metric_results]
        per_invocation = result.eval_metric_result_per_invocation
        if per_invocation:
            record["a"] = self._actual_ref(per_invocation, captured)
            record["e"] = self._expected_ref(per_invocation, captured)
        stored = (number, _header_text(self.headers[number])) if new else None
        return Encoded(pydantic_core.to_json(record).decode("utf-8"), stored)

    def _captured_details(
        self, captured: CapturedRows, by_row: Sequence[RowValues]
    ) -> list[list[dict[str, Any] | None]]:
        """Each metric's rows' details as stored (:func:`set_details`), from what the rows were
        made of: one shared value where all of a metric's rows were made of no rubric scores
        and equal details (most metrics), which spares reading its rows."""
        rubrics = list(map(_THIRD, by_row))
        judged = rubrics.count(None) != len(rubrics)  # some row has rubric scores
        extras = list(map(_FOURTH, by_row))
        width = len(captured.values)
        found: list[list[dict[str, Any] | None]] = []
        for column, rows in enumerate(captured.rows):
            made_of = extras[column::width]
            first = made_of[0]
            if made_of.count(first) != len(made_of) or (
                judged and rubrics[column::width].count(None) != len(made_of)
            ):
                found.append([set_details(row.details) for row in rows])
            elif not first:
                found.append([None] * len(made_of))
            else:  # the same as the last case's, usually: stored the same, found by ==
                known = self._shared.get(column)
                if known is None or known[0] != first:
                    known = self._shared[column] = (first, set_details(rows[0].details))
                found.append([known[1]] * len(made_of))
        return found

    def _header(self, given: Sequence[Head]) -> tuple[int, bool]:
        """The number of the run's header the case's own rows follow (a new one if none)."""
        if self.headers and tuple(given) == self.headers[self._last]:
            return self._last, False
        heads = list(given)
        names = tuple(h[0] for h in heads)
        for number in self._by_names.get(names, ()):
            if heads == list(self.headers[number]):
                self._last = number
                return number, False
        if any(h[3] is not None for h in heads):  # never a header: such cases are stored whole
            heads = [(name, threshold, criterion, None) for name, threshold, criterion, _ in heads]
        self.headers.append(tuple(heads))
        self._last = len(self.headers) - 1
        self._by_names.setdefault(names, []).append(self._last)
        return self._last, True

    def _repeated(self, number: int, times: int) -> list[Head]:
        """Header ``number`` once for the case's own rows and once per invocation."""
        key = (number, times)
        found = self._repeats.get(key)
        if found is None:
            found = self._repeats[key] = list(self.headers[number]) * times
        return found

    def _actual_ref(
        self, rows: Sequence[EvalMetricResultPerInvocation], captured: CapturedRows | None
    ) -> Any:
        actual: list[Invocation | None] = list(map(_ACTUAL, rows))
        found = self._actual.get(id(actual[0]))
        if found is None and captured is not None:  # inputs not held: the runner says
            found = captured.actual
        if found is not None and _same(found[1], actual):
            return found[0]
        return _INVOCATIONS.dump_python(actual, mode="json", exclude_none=True)

    def _expected_ref(
        self, rows: Sequence[EvalMetricResultPerInvocation], captured: CapturedRows | None
    ) -> Any:
        expected: list[Invocation | None] = list(map(_EXPECTED, rows))
        found = self._expected.get(id(expected[0]))
        if found is None and captured is not None:  # inputs not held: the runner says
            found = captured.expected
        if found is not None and _same(found[1], expected):
            return found[0]
        if all(invocation is None for invocation in expected):  # not list.count: == is slow
            return None
        return {"inline": _INVOCATIONS.dump_python(expected, mode="json", exclude_none=True)}


def _details(by_metric: Sequence[Sequence[dict[str, Any] | None]]) -> dict[str, Any]:
    """``D``: ``[metric, details]`` for each metric whose rows all have the same details (the
    case's and every invocation's), and ``d``: ``[row, details]`` for the other rows that have
    any; ``by_metric`` holds each metric's rows' details, None where empty."""
    width = len(by_metric)
    same: list[tuple[int, dict[str, Any]]] = []
    rows: list[tuple[int, dict[str, Any]]] = []
    for column, values in enumerate(by_metric):
        first = values[0] if values else None
        if values.count(first) == len(values):
            if first is not None:
                same.append((column, first))
            continue
        rows.extend(
            (column + width * i, value) for i, value in enumerate(values) if value is not None
        )
    found: dict[str, Any] = {}
    if same:
        found["D"] = same
    if rows:
        found["d"] = rows
    return found


def _header_text(header: Header) -> str:
    return pydantic_core.to_json([list(head[:3]) for head in header]).decode("utf-8")


def _record_start(number: int) -> str:
    """How the text of a record that follows metric header ``number`` begins (its first two
    keys, as :meth:`CaseEncoder._record` writes them)."""
    return f'{{"v":{RECORD_VERSION},"k":{number},'


def record_header(text: str) -> int | None:
    """The number of the metric header a stored record follows; None for a case stored in full
    (its result's JSON)."""
    start = f'{{"v":{RECORD_VERSION},"k":'
    if not text.startswith(start):
        return None
    end = text.find(",", len(start))
    digits = text[len(start) : end]
    return int(digits) if end > 0 and digits.isdigit() else None


def _same(known: Sequence[Invocation], given: Sequence[Invocation | None]) -> bool:
    return len(known) == len(given) and all(map(operator.is_, known, given))


def _notes(notes: CaseNotes) -> Any:
    if (
        notes.reason is None
        and not notes.metric_reasons
        and not notes.not_applicable
        and notes.simulator_usage is None
        and not notes.metrics
    ):
        return [notes.run, notes.duration_s]
    return notes.model_dump(mode="json")


def parse_header(text: str) -> Header:
    """A stored metric header."""
    data = pydantic_core.from_json(text)
    if not isinstance(data, list):
        raise RecordError("a metric header is not a JSON array")
    return tuple((name, threshold, criterion, None) for name, threshold, criterion in data)


def may_need_inputs(text: str) -> bool:
    """Whether a stored text may refer to the run's inputs (cheap, without parsing; a false
    yes only costs loading them)."""
    return text.startswith('{"v":2') and ('"a":["t"' in text or '"e":[' in text)


def decode(
    text: str,
    headers: Mapping[int, Header],
    inputs: Inputs | None,
    actual: Sequence[Invocation] | None = None,
    expected: Sequence[Invocation] | None = None,
) -> EvalCaseResult:
    """The case result a stored text holds (record version 2, or a full result). ``actual``
    and ``expected``, when given, are what the text's references to the run's traces and to its
    eval set's case stand for, as the caller has already read them (a streamed input would be
    read and parsed again to look them up)."""
    data = pydantic_core.from_json(text)
    if not isinstance(data, dict) or data.get("v") != RECORD_VERSION:
        return EvalCaseResult.model_validate(data)
    header = headers.get(data["k"])
    if header is None:
        raise RecordError(f"metric header {data['k']} is not recorded")
    set_file, set_id, eval_id, status, session_id, user_id = data["c"]
    session_details, adk_results = data.get("x", [None, None])
    ref = data.get("a")
    if actual is None or not (ref and ref[0] == "t"):
        actual = _actual(ref, inputs)
    wanted = data.get("e")
    turns: Sequence[Invocation | None] | None = expected
    if turns is None or not isinstance(wanted, list) or len(turns) != len(actual):
        turns = _expected(wanted, inputs, len(actual))
    metrics = _metric_results(data, header)
    width = len(header)
    rows = [
        EvalMetricResultPerInvocation.model_construct(
            actual_invocation=actual[i],
            expected_invocation=turns[i],
            eval_metric_results=metrics[width * (i + 1) : width * (i + 2)],
        )
        for i in range(len(actual))
    ]
    notes = data["n"]
    return EvalCaseResult.model_validate(
        {
            "eval_set_file": set_file,
            "eval_set_id": set_id,
            "eval_id": eval_id,
            "final_eval_status": status,
            "eval_metric_results": adk_results,
            "overall_eval_metric_results": metrics[:width],
            "eval_metric_result_per_invocation": rows,
            "session_id": session_id,
            "session_details": session_details,
            "user_id": user_id,
            "assay": (
                CaseNotes(run=notes[0], duration_s=notes[1])
                if isinstance(notes, list)
                else CaseNotes.model_validate(notes)
            ),
        }
    )


def _metric_results(data: Mapping[str, Any], header: Header) -> list[EvalMetricResult]:
    """The case's metric rows, its own then each invocation's, each following the header. The
    values are of their fields' types as the encoder wrote them, so the rows are built without
    validating each (a resumed run reads tens of thousands); each distinct details value is
    validated once per case. A record of other types is validated row by row."""
    scores = data["s"]
    statuses = bytes.fromhex(data["t"])
    if not all(score is None or type(score) is float for score in scores) or not all(
        type(t) is float or t is None for _, t, _, _ in header
    ):
        return _validated_rows(data, header)
    rows = list(data.get("d", []))
    by_metric = list(data.get("D", []))
    details = {int(i): EvalMetricResultDetails.model_validate(v) for i, v in rows if v}
    shared = {int(i): EvalMetricResultDetails.model_validate(v) for i, v in by_metric if v}
    width = len(header)
    empty = None
    found = []
    for i, (score, status, (name, threshold, criterion, _)) in enumerate(
        zip(scores, statuses, cycle(header))
    ):
        row_details = details.get(i) or shared.get(i % width)
        if row_details is None:
            row_details = empty = empty or EvalMetricResultDetails()
        found.append(
            trusted_row(name, threshold, criterion, None, score, _STATUSES[status], row_details)
        )
    return found


def _validated_rows(data: Mapping[str, Any], header: Header) -> list[EvalMetricResult]:
    details = dict(data.get("d", []))
    by_metric = dict(data.get("D", []))
    width = len(header)
    return [
        EvalMetricResult(
            metric_name=name,
            threshold=threshold,
            criterion=criterion,
            score=score,
            eval_status=status,
            details=EvalMetricResultDetails.model_validate(
                details.get(i) or by_metric.get(i % width) or {}
            ),
        )
        for i, (score, status, (name, threshold, criterion, _)) in enumerate(
            zip(data["s"], bytes.fromhex(data["t"]), cycle(header))
        )
    ]


_STATUSES = {int(status): status for status in EvalStatus}


def _actual(ref: Any, inputs: Inputs | None) -> list[Invocation]:
    if ref is None:
        return []
    if ref and ref[0] == "t":
        _, set_id, eval_id, run = ref
        traces = inputs.traces if inputs is not None else None
        found = None
        if traces is not None:  # the set's own entry, else the file's entry for any set
            for entry_set in dict.fromkeys([set_id, None]):
                found = traces.lookup(entry_set, eval_id, run)
                if found is not None:
                    break
        if found is None:
            raise RecordError(f"the traces of {eval_id} (run {run}) are not in the run's inputs")
        return found
    return [Invocation.model_validate(item) for item in ref]


def _expected(ref: Any, inputs: Inputs | None, count: int) -> list[Invocation | None]:
    if ref is None:
        return [None] * count
    if isinstance(ref, dict):
        return [None if e is None else Invocation.model_validate(e) for e in ref["inline"]]
    position, index = ref
    if inputs is None or position >= len(inputs.eval_sets):
        raise RecordError(f"eval set {position} is not in the run's inputs")
    cases = inputs.eval_sets[position].eval_cases
    conversation = cases[index].conversation if index < len(cases) else None
    if conversation is None or len(conversation) != count:
        raise RecordError(f"case {index} of eval set {position} does not match the record")
    return list(conversation)
