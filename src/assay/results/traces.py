"""Recorded traces: the actual invocations of each case, from a file.

Two shapes are read:

* a JSON (or YAML) object mapping ``eval_id`` to the list of actual invocations (ADK Invocation
  JSON), which is what ``--save-traces`` writes;
* ADK's ``.evalset_result.json`` (also its legacy double-encoded form, and a list of them as
  ``assay eval --output`` writes): the actual invocations of each case are taken from
  ``eval_metric_result_per_invocation``. A case result without any (one that was not evaluated
  because it had no trace) gives no trace for that case, so reading results back reproduces them.

A JSON file larger than ``ASSAY_STREAM_MB`` is streamed (:mod:`assay.results.trace_stream`):
checked in full as it is read, each case's invocations put into the process's spill file and
parsed again each time they are asked for (:attr:`Traces.streamed`).

A span file (OpenTelemetry: OTLP/JSON, OTLP protobuf, Jaeger JSON, gzipped or not; told by its
content) is read with :mod:`assay.traces`: its spans grouped into sessions, each session's
invocations stored the same way under its case key (:class:`SpanReading`: the root spans'
attribute it names, by default ``gen_ai.conversation.id``, else the session id). A session that
cannot be scored (:attr:`~assay.traces.Session.problem`) is kept as its case's reason
(:meth:`Traces.problem`); one whose spans carry no message content as the note that says which
setting to turn on (:meth:`Traces.content_note`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic_core

from assay._internal.file_kinds import not_traces, wrong_kind
from assay._internal.files import load_data, parse_json, type_name
from assay._internal.json_stream import (
    EXACT_LIMIT,
    JsonError,
    NotStreamable,
    events,
    open_json,
    should_stream,
    syntax_problem,
)
from assay._internal.spill import shared_spill
from assay.errors import Problem, TracesError, format_path, short_value
from assay.evalset.invocation import Invocation
from assay.results.keys import TraceKey
from assay.results.run_index import RunIndex
from assay.results.trace_stream import (
    KIND,
    RUN_KEY,
    case_actuals,
    field_key,
    load_streamed,
    mapping_key,
    parse_invocations,
    spill_key,
    validate_invocations,
)

if TYPE_CHECKING:
    from assay.traces import Session

__all__ = ["RUN_KEY", "SpanReading", "TraceKey", "Traces", "load_traces"]


@dataclass
class Traces:
    """Actual invocations per case, keyed by eval set id (None when the file does not say).

    ``by_case`` holds each case's first run; ``later_runs`` the runs after it, by run number
    (a traces file written with ``--num-runs``, or an ADK result listing a case more than once).
    Both hold the runs kept in memory; a streamed file's runs are in the spill file, and are
    parsed each time :meth:`lookup`, :meth:`get`, :meth:`runs` or :meth:`entries` gives them.
    A run is in one place or the other, never both.
    """

    by_case: dict[TraceKey, list[Invocation]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    later_runs: dict[TraceKey, dict[int, list[Invocation]]] = field(default_factory=dict)
    streamed: bool = False
    """Whether some runs are in the spill file (a file was streamed)."""
    spilled: dict[int, RunIndex] = field(default_factory=dict, repr=False)
    """The runs in the spill file, by run number then case: the prefix of the load that stored
    each (:func:`~assay.results.trace_stream.spill_key`). By run first, as most files have one
    run a case: one entry a case."""
    problems: dict[TraceKey, str] = field(default_factory=dict)
    """Cases whose session (read from a span file) cannot be scored, with the reason."""
    content_notes: dict[TraceKey, str] = field(default_factory=dict)
    """Cases whose session's spans carry no message content, with the setting to turn on."""
    sessions: dict[TraceKey, tuple[str, str] | None] = field(default_factory=dict)
    """The cases read from span files' sessions (those with a problem too), in file order, each
    with the span its verdicts are about: (trace id, span id) of the session's first root span
    (None when it has none)."""
    left_out: int = 0
    """Sessions of span files left out by :class:`SpanReading`'s sample or filters."""

    def problem(self, set_id: str, eval_id: str) -> str | None:
        """Why the case's session cannot be scored, if it is one that cannot."""
        return self.problems.get((set_id, eval_id), self.problems.get((None, eval_id)))

    def notes_only(self) -> Traces:
        """What these traces say of their span files' cases besides their runs (to hand to
        another process that is given the runs themselves)."""
        return Traces(
            sources=list(self.sources),
            problems=dict(self.problems),
            content_notes=dict(self.content_notes),
            sessions=dict(self.sessions),
            left_out=self.left_out,
        )

    def content_note(self, set_id: str, eval_id: str) -> str | None:
        """The note of a case whose spans carry no message content (None when they do)."""
        notes = self.content_notes
        return notes.get((set_id, eval_id), notes.get((None, eval_id)))

    def lookup(self, set_id: str | None, eval_id: str, run: int) -> list[Invocation] | None:
        """The invocations of exactly this entry (no falling back to ``set_id`` None), or None."""
        found = self.raw(set_id, eval_id, run)
        return parse_invocations(found) if isinstance(found, bytes) else found

    def raw(self, set_id: str | None, eval_id: str, run: int) -> list[Invocation] | bytes | None:
        """This entry's invocations as they are kept: held in memory, or the JSON the spill file
        holds (:func:`~assay.results.trace_stream.parse_invocations` reads it); None when there
        is no such entry."""
        key: TraceKey = (set_id, eval_id)
        found = self.by_case.get(key) if run == 1 else self.later_runs.get(key, {}).get(run)
        if found is not None:
            return found
        cases = self.spilled.get(run)
        prefix = None if cases is None else cases.get(key)
        if prefix is None:
            return None
        return shared_spill().get(KIND, spill_key(prefix, key), run)

    def get(self, eval_set_id: str, eval_id: str) -> list[Invocation] | None:
        """The invocations recorded for a case, preferring an entry for the same eval set."""
        found = self.lookup(eval_set_id, eval_id, 1)
        return found if found is not None else self.lookup(None, eval_id, 1)

    def runs(self, eval_set_id: str, eval_id: str) -> list[tuple[int, list[Invocation]]]:
        """Every recorded run of a case as ``(run, invocations)``, first run first."""
        return [
            (run, parse_invocations(found) if isinstance(found, bytes) else found)
            for run, found in self.raw_runs(eval_set_id, eval_id)
        ]

    def raw_runs(
        self, eval_set_id: str, eval_id: str
    ) -> list[tuple[int, list[Invocation] | bytes]]:
        """:meth:`runs`, each run's invocations as they are kept (:meth:`raw`): a spilled run's
        JSON is not parsed (another process may parse it)."""
        key, numbers = self.run_numbers(eval_set_id, eval_id)
        found: list[tuple[int, list[Invocation] | bytes]] = []
        for run in numbers:
            given = self.raw(key[0], key[1], run)
            if given is not None:
                found.append((run, given))
        return found

    def run_numbers(self, eval_set_id: str, eval_id: str) -> tuple[TraceKey, list[int]]:
        """The entry key a case's runs are under (its eval set's, else none's), and the numbers
        of its recorded runs in order, without reading them (:meth:`raw` reads one)."""
        key: TraceKey = (eval_set_id, eval_id)
        if not self._has(key):
            key = (None, eval_id)
        spilled = {run for run, cases in self.spilled.items() if key in cases}
        numbers = {*self.later_runs.get(key, {}), *spilled}
        first = [1] if key in self.by_case or 1 in numbers else []
        return key, first + sorted(numbers - {1})

    def entries(self) -> Iterator[tuple[TraceKey, int, list[Invocation]]]:
        """Every run as ``(case key, run, invocations)``: those in memory, then the spilled ones
        (parsed one at a time)."""
        for key, first in self.by_case.items():
            yield key, 1, first
        for key, runs in self.later_runs.items():
            for run, later in runs.items():
                yield key, run, later
        for run, cases in list(self.spilled.items()):
            for key in list(cases):
                found = self.lookup(key[0], key[1], run)
                if found is not None:
                    yield key, run, found

    def add(self, key: TraceKey, invocations: list[Invocation], run: int = 1) -> None:
        """Record one run of a case."""
        self._unspill(key, run)
        if run == 1:
            self.by_case[key] = invocations
        else:
            self.later_runs.setdefault(key, {})[run] = invocations

    def merge(self, other: Traces) -> None:
        """Add another file's traces; later files win on the same case."""
        for key, invocations in other.by_case.items():
            self.add(key, invocations)
        for key, runs in other.later_runs.items():
            for run, invocations in runs.items():
                self.add(key, invocations, run)
        for run, cases in other.spilled.items():
            if run not in self.spilled and not (self.by_case if run == 1 else self.later_runs):
                # nothing of this run to override (the first file, as a rule): its index taken
                # as it is, not copied key by key (a million cases held twice at once)
                self.spilled[run] = cases
                continue
            mine = self.spilled.setdefault(run, RunIndex())
            for key, prefix in cases.items():
                self._forget(key, run)
                mine[key] = prefix
        self.sources.extend(other.sources)
        self.streamed = self.streamed or other.streamed
        for key in other.sessions:
            self.problems.pop(key, None)
            self.content_notes.pop(key, None)
        self.problems.update(other.problems)
        self.content_notes.update(other.content_notes)
        self.sessions.update(other.sessions)
        self.left_out += other.left_out

    def _has(self, key: TraceKey) -> bool:
        in_spill = any(key in cases for cases in self.spilled.values())
        return key in self.by_case or key in self.later_runs or in_spill

    def names(self, key: TraceKey) -> bool:
        """Whether these traces record a run of the case ``key`` names, or a session of it
        (one that cannot be scored still names its case): asked without listing every case."""
        return self._has(key) or key in self.sessions

    def _unspill(self, key: TraceKey, run: int) -> None:
        cases = self.spilled.get(run)
        if cases is not None and cases.pop(key, None) is not None and not cases:
            del self.spilled[run]

    def _forget(self, key: TraceKey, run: int) -> None:
        """Drop the in-memory entry of this run, if any."""
        if run == 1:
            self.by_case.pop(key, None)
            return
        later = self.later_runs.get(key)
        if later is not None and later.pop(run, None) is not None and not later:
            del self.later_runs[key]


@dataclass(frozen=True)
class SpanReading:
    """How a span file's sessions become cases: ``case_key`` the root span attribute naming a
    session's case (None: :data:`assay.traces.DEFAULT_CASE_KEY`; the session id when a session
    has none); ``sample`` the share of sessions kept (0 < sample <= 1, chosen by a hash of the
    case key, so a rerun keeps the same ones; None keeps all); ``filters`` the
    ``(attribute, value)`` pairs a session's root span attributes must all have."""

    case_key: str | None = None
    sample: float | None = None
    filters: tuple[tuple[str, str], ...] = ()

    def keeps(self, session: Session, key: str) -> bool:
        """Whether the session of case ``key`` is scored."""
        for attribute, value in self.filters:
            if _attribute_text(session.attributes.get(attribute)) != value:
                return False
        if self.sample is None or self.sample >= 1:
            return True
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") < self.sample * 2**64


def _attribute_text(value: Any) -> str | None:
    """An attribute value as ``--trace-filter`` spells it (booleans as true/false)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_traces(paths: Iterable[str | Path], reading: SpanReading | None = None) -> Traces:
    """Read one or more traces files (span files among them, as ``reading`` says), reporting
    every problem with file and JSON path (a span file's: its line and span)."""
    traces = Traces()
    problems: list[Problem] = []
    for raw in paths:
        try:
            path = Path(raw)
            if is_span_file(path):
                traces.merge(_load_spans(path, reading or SpanReading()))
                continue
            traces.merge(_load_one(path))
        except TracesError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TracesError(problems)
    return traces


_GZIP = b"\x1f\x8b"
_SPAN_KEYS = frozenset({"resourceSpans", "resource_spans"})
_JAEGER_KEYS = frozenset({"traceID", "spans", "processes"})


def is_span_file(path: Path) -> bool:
    """Whether ``path`` holds OpenTelemetry spans (by its content): gzip, OTLP protobuf, an
    OTLP/JSON request (``resourceSpans``) or a Jaeger export (``data`` of traces)."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(64)
    except OSError:
        return False  # the reader of traces files says why
    head = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if raw[:2] == _GZIP:
        return True
    if head[:1] != b"{":
        return raw[:1] in (b"\x0a", b"\x00") and head[:1] != b"["
    try:
        return _span_document(path)
    except (JsonError, OSError, StopIteration):
        return False


def _span_document(path: Path) -> bool:
    """Whether the JSON document starts as OTLP/JSON or a Jaeger export does."""
    with open_json(path) as handle:
        stream = events(handle)
        next(stream)  # start_map
        kind, key = next(stream)
        if kind != "map_key" or key not in _SPAN_KEYS | {"data"}:
            return False
        if key in _SPAN_KEYS:
            return True
        if next(stream)[0] != "start_array" or next(stream)[0] != "start_map":
            return False
        kind, key = next(stream)
        return kind == "map_key" and key in _JAEGER_KEYS


def _load_spans(path: Path, reading: SpanReading) -> Traces:
    """A span file's sessions, each a case's one run in the spill file (see the module's
    docstring); a malformed file raises TracesError naming its line and span."""
    from assay.traces import load_sessions, session_key

    traces = Traces(sources=[str(path)], streamed=True)
    spill = shared_spill()
    prefix = spill.new_key(str(path))
    batch: list[tuple[str, int, bytes]] = []
    seen: dict[str, int] = {}
    for session in load_sessions([path], strict=True):
        name = session_key(session, reading.case_key)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:  # two sessions with one key: the second kept apart, as convert does
            name = f"{name}~{seen[name]}"
        if not reading.keeps(session, name):
            traces.left_out += 1
            continue
        key: TraceKey = (None, name)
        traces.sessions[key] = _root_of(session)
        if session.problem:
            traces.problems[key] = f"the session's spans cannot be scored: {session.problem}"
            continue
        if session.content_missing:
            traces.content_notes[key] = _content_note(session)
        invocations = [i.model_dump(mode="json", exclude_none=True) for i in session.invocations]
        batch.append((spill_key(prefix, key), 1, pydantic_core.to_json(invocations)))
        traces.spilled.setdefault(1, RunIndex())[key] = prefix
        if len(batch) >= 512:
            spill.put_many(KIND, batch)
            batch = []
    spill.put_many(KIND, batch)
    return traces


def _root_of(session: Session) -> tuple[str, str] | None:
    """The session's evaluated span: its first root span (as report.otel_events.span_ref)."""
    if not session.trace_ids or not session.root_span_ids:
        return None
    return session.trace_ids[0], session.root_span_ids[0]


def _content_note(session: Session) -> str:
    """What a session without message content says: the setting to turn on."""
    said = [note for note in session.notes if "content" in note]
    return "; ".join(said) or "the spans carry no message content"


def _load_streamed(path: Path) -> Traces | None:
    """The file streamed (see :mod:`assay.results.trace_stream`), or None for the eager reader
    to read: a shape it leaves to that, or malformed JSON small enough to report exactly."""
    try:
        found = load_streamed(path)
    except (NotStreamable, OSError):
        return None
    except TracesError as exc:
        if _CASES_KEYS & {_top_key(p.path) for p in exc.problems}:  # an eval set, read as traces
            raise TracesError([Problem(str(path), "", not_traces("eval set"))]) from None
        raise
    except JsonError as exc:
        if path.stat().st_size > EXACT_LIMIT:
            raise TracesError([syntax_problem(path, exc)]) from None
        return None
    return Traces(sources=[str(path)], streamed=True, spilled=found.runs)


_CASES_KEYS = frozenset({"eval_cases", "evalCases"})


def _top_key(json_path: str) -> str:
    """The top-level key a JSON path starts with (``eval_cases`` of ``eval_cases[0].x``)."""
    return json_path.split("[", 1)[0].split(".", 1)[0]


def _load_one(path: Path) -> Traces:
    if path.suffix.lower() not in {".yaml", ".yml"} and should_stream(path):
        streamed = _load_streamed(path)
        if streamed is not None:
            return streamed
    file = str(path)
    data = load_data(path, TracesError)
    if isinstance(data, str):  # ADK's legacy writer double-encodes JSON
        with contextlib.suppress(TracesError):  # else a plain string, reported below
            data = parse_json(data, file, TracesError)
    if isinstance(data, dict) and ("eval_case_results" in data or "evalCaseResults" in data):
        return _from_set_results([data], file, prefix=())
    if isinstance(data, list) and data:
        not_objects = [
            Problem(
                file, format_path([i]), f"expected an eval set result object; got {short_value(d)}"
            )
            for i, d in enumerate(data)
            if not isinstance(d, dict)
        ]
        if not_objects:
            raise TracesError(not_objects)
        return _from_set_results(data, file, prefix=None)
    if (other := wrong_kind(data, "--traces")) is not None:  # an eval set, a config...
        raise TracesError([Problem(file, "", other)])
    if isinstance(data, dict):
        return _from_mapping(data, file)
    got = "an empty list" if data == [] else type_name(data)
    raise TracesError(
        [
            Problem(
                file,
                "",
                "expected an object mapping eval_id to a list of invocations, or an ADK "
                f".evalset_result.json (or a list of them); got {got}",
            )
        ]
    )


def _from_mapping(data: dict[str, Any], file: str) -> Traces:
    traces = Traces(sources=[file])
    problems: list[Problem] = []
    for eval_id, given in data.items():
        if not isinstance(given, list):
            problems.append(
                Problem(
                    file,
                    format_path([eval_id]),
                    f"expected a list of invocations; got {type_name(given)}",
                )
            )
            continue
        case_id, run = mapping_key(eval_id)
        try:
            traces.add((None, case_id), validate_invocations(given, file, [eval_id]), run)
        except TracesError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TracesError(problems)
    return traces


def _from_set_results(results: list[dict[str, Any]], file: str, prefix: tuple[()] | None) -> Traces:
    traces = Traces(sources=[file])
    problems: list[Problem] = []
    seen: dict[TraceKey, int] = {}  # a case listed again is its next run (ADK's num_runs)
    for s, result in enumerate(results):
        base: list[str | int] = [] if prefix is not None else [s]
        set_id = result.get(field_key(result, "eval_set_id"))
        cases_key = field_key(result, "eval_case_results")
        cases = result.get(cases_key)
        if not isinstance(cases, list):
            problems.append(
                Problem(
                    file,
                    format_path([*base, cases_key]),
                    f"expected a list of case results; got {type_name(cases)}",
                )
            )
            continue
        for c, case in enumerate(cases):
            found = case_actuals(case, file, [*base, cases_key, c], problems)
            if found is None:
                continue
            eval_id, actuals = found
            key: TraceKey = (set_id if isinstance(set_id, str) else None, eval_id)
            seen[key] = seen.get(key, 0) + 1
            traces.add(key, [invocation for _, invocation in actuals], seen[key])
    if problems:
        raise TracesError(problems)
    return traces
