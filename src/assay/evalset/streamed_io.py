"""The streamed readers: an eval set too big to read whole (``ASSAY_STREAM_MB``,
:func:`~assay._internal.json_stream.should_stream`) checked as it is read, each case's JSON put
into the process's spill file.

They are apart from :mod:`assay.evalset.io`, which chooses between them and the eager readers,
to keep each module small; what both use is in :mod:`assay.evalset.reading`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic_core
from pydantic import ValidationError

from assay._internal.json_stream import (
    Member,
    NotStreamable,
    SpanFallback,
    Spans,
    built,
    items,
    open_json,
    scan,
    yajl_unsure,
)
from assay._internal.spill import Spill, SpilledSequence, key_under, shared_spill
from assay.errors import EvalSetError, Problem
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.fast_check import surely_case_json
from assay.evalset.reading import (
    EVAL_CASE,
    EVAL_SET,
    LoadedEvalSet,
    StreamedEvalSet,
    at_line,
    duplicate_id,
    jsonl_case,
    jsonl_meta,
    parse_line,
    validate,
)

_CASES_KEYS = frozenset({"eval_cases", "evalCases"})
_BEFORE_CASES = frozenset({"eval_set_id", "evalSetId", "name", "description"})
"""EvalSet's fields before ``eval_cases``: pydantic reports their problems before the cases'."""
_BATCH = 512

Seen = tuple[str, str | None]
"""What a streamed set keeps of a case as it is read: its eval_id and app name."""
_IDS = "case-id"
"""The spill kind a streamed set's eval ids are stored under (key: the set's key and the id)."""


class _SpilledCases:
    """Cases as a streamed file gives them: each one's JSON into the spill file (in batches), and
    its ``eval_id`` too, for the duplicate warnings (:attr:`duplicates`): a set of a million ids
    held while the file is read was the peak of a million-case run. After a problem nothing
    more is stored."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.spill: Spill = shared_spill()
        self.key = self.spill.new_key(file)
        self.count = 0
        self.app_name: str | None = None
        """The first case's ``session_input.app_name`` that has one."""
        self._batch: list[tuple[str, int, bytes]] = []
        self._ids: list[tuple[str, int, bytes]] = []
        self._duplicates: list[Problem] | None = None
        self._failed = False

    def add(self, case: Seen, body: bytes) -> None:
        eval_id, app_name = case
        if self.app_name is None and app_name:
            self.app_name = app_name
        if not self._failed:
            self._batch.append((self.key, self.count, body))
            self._ids.append((key_under(self.key, eval_id), self.count, b""))
            if len(self._batch) >= _BATCH:
                self._flush()
        self.count += 1

    @property
    def duplicates(self) -> list[Problem]:
        """A warning for each case whose ``eval_id`` an earlier case has, in file order, naming
        where it was first seen (as :func:`~assay.evalset.reading.duplicate_id` words it)."""
        if self._duplicates is None:
            self._flush()
            found: list[tuple[int, Problem]] = []
            first: dict[str, int] = {}
            for key, index in self.spill.repeated(_IDS, self.key):
                eval_id = key[len(self.key) + 1 :]
                if eval_id not in first:
                    first[eval_id] = index
                    continue
                found.append((index, duplicate_id(self.file, eval_id, index, first[eval_id])))
            self.spill.drop_prefix(_IDS, self.key)
            self._duplicates = [problem for _, problem in sorted(found, key=lambda f: f[0])]
        return self._duplicates

    def fail(self) -> None:
        """Store no more, and drop what was stored."""
        if not self._failed:
            self._failed = True
            self._batch.clear()
            self._ids.clear()
            self.spill.drop("case", self.key)
            self.spill.drop_prefix(_IDS, self.key)

    def sequence(self) -> SpilledSequence[EvalCase]:
        self._flush()
        return SpilledSequence(
            self.spill, "case", self.key, self.count, EvalCase.model_validate_json
        )

    def _flush(self) -> None:
        if self._batch:
            self.spill.put_many("case", self._batch)
            self.spill.put_many(_IDS, self._ids)
            self._batch, self._ids = [], []


def load_jsonl_streamed(path: Path) -> LoadedEvalSet:
    """:func:`~assay.evalset.io._load_jsonl` a line at a time: the same checks and problems,
    each case's line put into the spill file."""
    file = str(path)
    header: dict[str, Any] = {}
    header_line = first_line = 0
    problems: list[Problem] = []
    cases = _SpilledCases(file)
    try:
        with path.open(encoding="utf-8", newline="\n") as handle:  # lines end at "\n" only
            for number, raw in enumerate(handle, start=1):
                line = raw.removesuffix("\n")
                if number == 1:
                    line = line.removeprefix("\ufeff")
                if not line.strip():
                    continue
                first_line = first_line or number
                seen = _case_of_text(line)
                if seen is not None:
                    cases.add(seen, line.strip().encode("utf-8"))
                    continue
                where = f"line {number}"
                try:
                    data = parse_line(line, file, where)
                    case = jsonl_case(data, number == first_line, file, where)
                    if case is None:
                        header, header_line = data, number
                    else:
                        cases.add(_seen(case), line.strip().encode("utf-8"))
                except EvalSetError as exc:
                    problems.extend(at_line(p, where) for p in exc.problems)
                    cases.fail()
        if not first_line:
            problems.append(Problem(file, "", "empty file; expected one eval case object per line"))
        if problems:
            raise EvalSetError(problems)
        meta = jsonl_meta(path, header, header_line)
    except UnicodeDecodeError as exc:
        cases.fail()
        raise EvalSetError([Problem(file, "", f"not UTF-8 text ({exc.reason})")]) from None
    except OSError:
        cases.fail()
        raise NotStreamable(path) from None  # the eager reader says why it cannot be read
    except BaseException:
        cases.fail()
        raise
    eval_set = _streamed(meta, cases)
    return LoadedEvalSet(eval_set, path, "jsonl", tuple(cases.duplicates), streamed=True)


def _case_of_text(text: str | bytes) -> Seen | None:
    """What is kept of the case the JSON ``text`` holds, checked in one step (by
    :func:`~assay.evalset.fast_check.surely_case_json`, else by pydantic, which parses as
    :func:`~assay._internal.files.parse_json` does), or None for the two-step reading to judge
    (and word the problems of) what it refuses."""
    seen = surely_case_json(text)
    if seen is not None:
        return seen
    try:
        return _seen(EVAL_CASE.validate_json(text))
    except ValidationError:
        return None


def _seen(case: EvalCase) -> Seen:
    return case.eval_id, case.session_input.app_name if case.session_input else None


def load_object_streamed(path: Path) -> LoadedEvalSet:
    """An EvalSet object in two passes: the first checks the whole file's syntax and takes the
    keys other than ``eval_cases``; the second checks each case in turn (with the same JSON
    paths as the eager reader) and puts its JSON into the spill file.

    Problems come in the eager reader's order: those of the fields before ``eval_cases``, the
    cases', then the rest. A top level that is not an object, or ``eval_cases`` given twice
    (also as ``evalCases``), raises :class:`NotStreamable`.
    """
    try:
        return _object_by_spans(path)
    except SpanFallback:
        return _object_by_events(path)


def _object_by_spans(path: Path) -> LoadedEvalSet:
    """:func:`_object_by_events` in one pass (:class:`~assay._internal.json_stream.Spans`): each
    case's text checked by pydantic as it is and stored as it is; a case pydantic refuses, or
    whose digits yajl may refuse, is built by ijson and judged as the event reader judges it.
    What that reader would say otherwise (malformed JSON, ``eval_cases`` given twice, a top
    level that is no object) raises :class:`SpanFallback` for it to say."""
    file = str(path)
    members: list[Member] = []
    case_problems: list[Problem] = []
    cases = _SpilledCases(file)
    try:
        with open_json(path) as handle:
            spans = Spans(handle)
            for key in spans.members():
                kind = spans.kind()
                if key in _CASES_KEYS and any(m.key in _CASES_KEYS for m in members):
                    raise SpanFallback("eval_cases given twice")
                if key not in _CASES_KEYS or kind != "start_array":
                    members.append(Member(key, kind, built(spans.value())))
                    continue
                members.append(Member(key, kind))
                for index, body in enumerate(spans.items()):
                    _case_of_span(body, (key, index), cases, case_problems)
            spans.end()
        return _object_loaded(path, members, cases, case_problems)
    except BaseException:
        cases.fail()
        raise


def _case_of_span(
    body: bytes, where: tuple[str, int], cases: _SpilledCases, problems: list[Problem]
) -> None:
    """Check one case's text and store it (its problems into ``problems``)."""
    seen = None if yajl_unsure(body) else _case_of_text(body)
    if seen is not None:
        cases.add(seen, body)
        return
    item = built(body)
    try:
        case = validate(EVAL_CASE, item, cases.file, EvalCase, where)
    except EvalSetError as exc:
        problems.extend(exc.problems)
        return
    cases.add(_seen(case), pydantic_core.to_json(item))


def _object_loaded(
    path: Path, members: list[Member], cases: _SpilledCases, case_problems: list[Problem]
) -> LoadedEvalSet:
    """The set from its top-level members (``eval_cases`` among them with no value when its
    cases were streamed), in the event reader's order of problems."""
    file = str(path)
    listed = [m for m in members if m.key in _CASES_KEYS]
    data = {m.key: m.value for m in members}
    if not listed or listed[0].kind != "start_array":  # nothing was streamed: a problem for sure
        return LoadedEvalSet(validate(EVAL_SET, data, file, EvalSet), path, "evalset")
    data[listed[0].key] = []
    meta, before, after = _header(data, file)
    problems = before + case_problems + after
    if problems or meta is None:
        raise EvalSetError(problems)
    eval_set = _streamed(meta, cases)
    return LoadedEvalSet(eval_set, path, "evalset", tuple(cases.duplicates), streamed=True)


def _object_by_events(path: Path) -> LoadedEvalSet:
    """The object read from ijson's events, each case built as Python objects."""
    file = str(path)
    top = scan(path, note=lambda key: True, keep=_keep_header, elements=False)
    if top.kind != "start_map":
        raise NotStreamable(path)
    listed = [m for m in top.members if m.key in _CASES_KEYS]
    if len(listed) > 1:
        raise NotStreamable(path)
    data = {m.key: m.value for m in top.members}
    if not listed or listed[0].kind != "start_array":  # nothing to stream: a problem for sure
        return LoadedEvalSet(validate(EVAL_SET, data, file, EvalSet), path, "evalset")
    cases_key = listed[0].key
    data[cases_key] = []
    meta, problems, after = _header(data, file)
    cases = _SpilledCases(file)
    try:
        with open_json(path) as handle:
            for index, item in enumerate(items(handle, f"{cases_key}.item")):
                try:
                    case = validate(EVAL_CASE, item, file, EvalCase, (cases_key, index))
                except EvalSetError as exc:
                    problems.extend(exc.problems)
                    continue
                cases.add(_seen(case), pydantic_core.to_json(item))
        problems += after
        if problems or meta is None:
            raise EvalSetError(problems)
    except BaseException:
        cases.fail()
        raise
    eval_set = _streamed(meta, cases)
    return LoadedEvalSet(eval_set, path, "evalset", tuple(cases.duplicates), streamed=True)


def _header(data: dict[str, Any], file: str) -> tuple[EvalSet | None, list[Problem], list[Problem]]:
    """The set's own fields (its cases left out) checked: the set, or its problems in pydantic's
    order around the cases': those of the fields before ``eval_cases``, then the rest."""
    try:
        return validate(EVAL_SET, data, file, EvalSet), [], []
    except EvalSetError as exc:
        found = exc.problems
    return None, [p for p in found if _before_cases(p)], [p for p in found if not _before_cases(p)]


def _streamed(meta: EvalSet, cases: _SpilledCases) -> StreamedEvalSet:
    """``meta`` with its cases in the spill file (a read-only sequence where a list would be)."""
    fields: dict[str, Any] = {name: getattr(meta, name) for name in EvalSet.model_fields}
    fields["eval_cases"] = cases.sequence()
    streamed = StreamedEvalSet.model_construct(_fields_set=set(meta.model_fields_set), **fields)
    streamed._app_name = cases.app_name
    return streamed


def _keep_header(key: str, kind: str) -> bool:
    """Build every top-level value but a list of cases (a non-list one is a problem to report)."""
    return key not in _CASES_KEYS or kind != "start_array"


def _before_cases(problem: Problem) -> bool:
    """Whether pydantic reports ``problem`` (one of the eval set's own) before the cases'."""
    return problem.path in _BEFORE_CASES or problem.message == "missing required key 'eval_set_id'"
