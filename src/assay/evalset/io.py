"""Reading and writing eval sets in every format assay accepts.

* ADK's ``.evalset.json`` (an EvalSet object);
* ADK's legacy ``.test.json`` per-turn list, with ``initial.session.json`` beside it;
* ADK's legacy list of named cases (``[{name, data, initial_session}]``);
* the same EvalSet object as YAML (``.yaml`` / ``.yml``);
* JSONL: one EvalCase per line, optionally preceded by a header line
  ``{"eval_set_id": ..., "name": ..., "description": ...}``.

EvalSet objects are checked strictly (an unknown key is an error, with a "did you mean" hint);
the legacy lists ignore unknown keys as ADK does, and report each in
:attr:`LoadedEvalSet.warnings`.

A JSONL or ``.evalset.json``/``.json`` EvalSet file larger than ``ASSAY_STREAM_MB``
(:func:`~assay._internal.json_stream.should_stream`) is *streamed*: checked in full as it is read, with
the same problems as the eager reader reports, each case's JSON put into the process's spill file
and parsed again only when used (:attr:`LoadedEvalSet.streamed`; ``eval_cases`` is then a
read-only :class:`~assay._internal.spill.SpilledSequence`). The legacy lists and YAML are always read
whole: they are small in practice.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import pydantic_core
from pydantic import (
    PrivateAttr,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    field_serializer,
)

from assay._internal.file_kinds import wrong_kind
from assay._internal.files import dump_yaml, load_data, parse_json, read_text, type_name
from assay._internal.json_stream import (
    EXACT_LIMIT,
    JsonError,
    Member,
    NotStreamable,
    SpanFallback,
    Spans,
    built,
    items,
    open_json,
    scan,
    should_stream,
    syntax_problem,
    yajl_unsure,
)
from assay._internal.spill import Spill, SpilledSequence, shared_spill
from assay.errors import (
    EvalSetError,
    Problem,
    format_path,
    keys_at,
    problems_from_validation,
    short_value,
)
from assay.evalset import legacy
from assay.evalset.case import EvalCase, EvalSet

_T = TypeVar("_T")

Format = Literal["evalset", "legacy_turns", "legacy_cases", "jsonl"]

INITIAL_SESSION_FILE = "initial.session.json"
CONFIG_FILE = "test_config.json"

_HEADER_FIELDS = ("eval_set_id", "name", "description", "creation_timestamp")
_HEADER_KEYS = frozenset(_HEADER_FIELDS) | {"evalSetId", "creationTimestamp"}
_CASES_KEYS = frozenset({"eval_cases", "evalCases"})
_BEFORE_CASES = frozenset({"eval_set_id", "evalSetId", "name", "description"})
"""EvalSet's fields before ``eval_cases``: pydantic reports their problems before the cases'."""
_BATCH = 512
_EXPECTED_TOP = (
    "expected an eval set object with 'eval_set_id' and 'eval_cases', or ADK's legacy list "
    "of turns ([{query, expected_tool_use, reference}]) or of named cases ([{name, data}])"
)


@dataclass(frozen=True)
class LoadedEvalSet:
    """An eval set with where it came from, and the keys ignored while reading it."""

    eval_set: EvalSet
    path: Path
    format: Format
    warnings: tuple[Problem, ...] = ()
    streamed: bool = False
    """Whether the cases were streamed into the spill file (``eval_cases`` parses on access)."""

    @property
    def config_beside(self) -> Path | None:
        """``test_config.json`` in the same folder, if there is one (:func:`config_beside`)."""
        return config_beside(self.path)


class StreamedEvalSet(EvalSet):
    """An :class:`EvalSet` whose cases are in the spill file (``eval_cases`` is a
    :class:`~assay._internal.spill.SpilledSequence`): dumped with its cases as a list, and equal to an
    ``EvalSet`` with equal fields."""

    _app_name: str | None = PrivateAttr(default=None)

    @property
    def app_name(self) -> str | None:
        """The first case's ``session_input.app_name`` that has one, noted as the file was read
        (finding it again would parse every case)."""
        return self._app_name

    @field_serializer("eval_cases", mode="wrap")
    def _cases_as_list(self, cases: Any, handler: SerializerFunctionWrapHandler) -> Any:
        return handler(list(cases))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EvalSet):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.model_extra == other.model_extra


def config_beside(eval_set_file: Path) -> Path | None:
    """ADK's ``test_config.json`` in the eval set file's folder, if there is one; None too for an
    eval set that was not read from a file (its path is ``<eval_set_id>``)."""
    if eval_set_file.name.startswith("<"):
        return None
    candidate = eval_set_file.parent / CONFIG_FILE
    return candidate if candidate.is_file() else None


def _validate(
    adapter: TypeAdapter[_T],
    data: Any,
    file: str,
    root: Any = None,
    prefix: tuple[str | int, ...] = (),
) -> _T:
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        if root is None:
            problems = problems_from_validation(exc, file, data, prefix)
        else:
            problems = problems_from_validation(
                exc, file, data, prefix, known_keys=lambda loc: keys_at(root, loc)
            )
        raise EvalSetError(problems) from None


_EVAL_SET = TypeAdapter(EvalSet)
_EVAL_CASE = TypeAdapter(EvalCase)
_TURNS = TypeAdapter(list[legacy.LegacyTurn])
_NAMED_CASES = TypeAdapter(list[legacy.LegacyNamedCase])
_SESSION = TypeAdapter(legacy.LegacyInitialSession)


def load_eval_set(path: str | Path) -> LoadedEvalSet:
    """Load an eval set from any supported format, or raise :class:`EvalSetError`.

    Duplicate ``eval_id``s load (ADK accepts them) but are reported as warnings, since traces
    and results are keyed by ``eval_id``.
    """
    loaded = _load(Path(path))
    if loaded.streamed:  # its duplicates were found as it was read
        return loaded
    duplicates = _duplicate_ids(loaded.eval_set, str(loaded.path))
    if not duplicates:
        return loaded
    return replace(loaded, warnings=(*loaded.warnings, *duplicates))


def _duplicate_ids(eval_set: EvalSet, file: str) -> list[Problem]:
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for index, case in enumerate(eval_set.eval_cases):
        _note_id(first, case.eval_id, index, file, problems)
    return problems


def _note_id(
    first: dict[str, int], eval_id: str, index: int, file: str, found: list[Problem]
) -> None:
    """Remember where ``eval_id`` is first seen; a warning in ``found`` when seen before."""
    if eval_id not in first:
        first[eval_id] = index
        return
    found.append(
        Problem(
            file,
            format_path(["eval_cases", index, "eval_id"]),
            f"duplicate eval_id '{eval_id}' (first at eval_cases[{first[eval_id]}]); "
            "traces and results are keyed by eval_id",
        )
    )


def _load(path: Path) -> LoadedEvalSet:
    suffix = path.suffix.lower()
    if suffix not in {".yaml", ".yml"} and should_stream(path):
        try:
            return _load_jsonl_streamed(path) if suffix == ".jsonl" else _load_object_streamed(path)
        except (NotStreamable, OSError):
            pass  # a shape only the eager reader reads (or it says why the file cannot be read)
        except JsonError as exc:
            if path.stat().st_size > EXACT_LIMIT:
                raise EvalSetError([syntax_problem(path, exc)]) from None
            # else read whole, for the very error (or success) a small file gives
    if suffix == ".jsonl":
        return LoadedEvalSet(_load_jsonl(path), path, "jsonl")
    data = load_data(path, EvalSetError)
    file = str(path)
    if (other := wrong_kind(data, "EVALSET")) is not None:  # a traces file, a config...
        raise EvalSetError([Problem(file, "", other)])
    if isinstance(data, dict):
        return LoadedEvalSet(_validate(_EVAL_SET, data, file, EvalSet), path, "evalset")
    if not isinstance(data, list) or not data:
        raise EvalSetError([Problem(file, "", f"{_EXPECTED_TOP}; got {_describe(data)}")])
    not_objects = [
        Problem(
            file,
            format_path([i]),
            "expected an object (a legacy turn with 'query', or a named case with 'name' and "
            f"'data'); got {short_value(item)}",
        )
        for i, item in enumerate(data)
        if not isinstance(item, dict)
    ]
    if not_objects:
        raise EvalSetError(not_objects)
    if _is_named_cases(data[0]):
        cases = _validate(_NAMED_CASES, data, file)
        eval_set = legacy.eval_set_from_named_cases(_stem(path), cases)
        warnings = legacy.ignored_keys(cases, file)
        return LoadedEvalSet(eval_set, path, "legacy_cases", tuple(warnings))
    turns = _validate(_TURNS, data, file)
    session, session_warnings = _initial_session_beside(path)
    eval_id = _stem(path)
    case = legacy.case_from_turns(eval_id, turns, session)
    eval_set = EvalSet(eval_set_id=eval_id, name=eval_id, eval_cases=[case])
    warnings = [*legacy.ignored_keys(turns, file), *session_warnings]
    return LoadedEvalSet(eval_set, path, "legacy_turns", tuple(warnings))


def _is_named_cases(first: dict[str, Any]) -> bool:
    return "data" in first or ("name" in first and "query" not in first)


def _describe(data: Any) -> str:
    if data is None:
        return "null (is the file empty?)"
    if isinstance(data, list):
        return "an empty list"
    return f"{type_name(data)} ({short_value(data)})"


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".evalset.json", ".test.json", ".json", ".yaml", ".yml", ".jsonl"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _initial_session_beside(
    path: Path,
) -> tuple[legacy.LegacyInitialSession | None, list[Problem]]:
    candidate = path.parent / INITIAL_SESSION_FILE
    if not candidate.is_file():
        return None, []
    return read_initial_session(candidate)


def read_initial_session(
    candidate: Path,
) -> tuple[legacy.LegacyInitialSession | None, list[Problem]]:
    """ADK's ``initial.session.json`` (None when it is ``{}``) and the warnings for its keys
    that are ignored; raises :class:`EvalSetError` when it is not a session object."""
    file = str(candidate)
    data = parse_json(read_text(candidate, EvalSetError), file, EvalSetError)
    if isinstance(data, dict) and not data:
        return None, []
    if not isinstance(data, dict):
        message = (
            "expected an ADK session object with 'app_name', 'user_id' and 'state'; "
            f"got {type_name(data)}"
        )
        raise EvalSetError([Problem(file, "", message)])
    session = _validate(_SESSION, data, file)
    return session, legacy.ignored_keys(session, file)


def _load_jsonl(path: Path) -> EvalSet:
    text = read_text(path, EvalSetError)
    file = str(path)
    header: dict[str, Any] = {}
    header_line = 0
    cases: list[EvalCase] = []
    problems: list[Problem] = []
    lines = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    for number, line in lines:
        where = f"line {number}"
        try:
            data = _parse_line(line, file, where)
            case = _jsonl_case(data, number == lines[0][0], file, where)
            if case is None:
                header, header_line = data, number
            else:
                cases.append(case)
        except EvalSetError as exc:
            problems.extend(_at_line(p, where) for p in exc.problems)
    if not lines:
        problems.append(Problem(file, "", "empty file; expected one eval case object per line"))
    if problems:
        raise EvalSetError(problems)
    return _jsonl_meta(path, header, header_line).model_copy(update={"eval_cases": cases})


def _jsonl_case(data: Any, first: bool, file: str, where: str) -> EvalCase | None:
    """The case a JSONL line holds (None for a header, which only the ``first`` line may be)."""
    if _is_header(data):
        if not first:
            raise EvalSetError([Problem(file, where, _misplaced_header())])
        return None
    if not isinstance(data, dict):
        message = f"expected an eval case object; got {short_value(data)}"
        raise EvalSetError([Problem(file, where, message)])
    return _validate(_EVAL_CASE, data, file, EvalCase)


def _jsonl_meta(path: Path, header: dict[str, Any], header_line: int) -> EvalSet:
    """The eval set a JSONL header line describes (its cases left empty)."""
    if "eval_set_id" not in header and "evalSetId" not in header:
        header = {"eval_set_id": _stem(path), **header}
    try:
        return _validate(_EVAL_SET, {**header, "eval_cases": []}, str(path), EvalSet)
    except EvalSetError as exc:
        raise EvalSetError([_at_line(p, f"line {header_line}") for p in exc.problems]) from None


class _SpilledCases:
    """Cases as a streamed file gives them: each one's JSON into the spill file (in batches), its
    ``eval_id`` kept for the duplicate warnings. After a problem nothing more is stored."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.spill: Spill = shared_spill()
        self.key = self.spill.new_key(file)
        self.count = 0
        self.duplicates: list[Problem] = []
        self.app_name: str | None = None
        """The first case's ``session_input.app_name`` that has one."""
        self._first: dict[str, int] = {}
        self._batch: list[tuple[str, int, bytes]] = []
        self._failed = False

    def add(self, case: EvalCase, body: bytes) -> None:
        _note_id(self._first, case.eval_id, self.count, self.file, self.duplicates)
        if self.app_name is None and case.session_input and case.session_input.app_name:
            self.app_name = case.session_input.app_name
        if not self._failed:
            self._batch.append((self.key, self.count, body))
            if len(self._batch) >= _BATCH:
                self._flush()
        self.count += 1

    def fail(self) -> None:
        """Store no more, and drop what was stored."""
        if not self._failed:
            self._failed = True
            self._batch.clear()
            self.spill.drop("case", self.key)

    def sequence(self) -> SpilledSequence[EvalCase]:
        self._flush()
        return SpilledSequence(
            self.spill, "case", self.key, self.count, EvalCase.model_validate_json
        )

    def _flush(self) -> None:
        if self._batch:
            self.spill.put_many("case", self._batch)
            self._batch = []


def _load_jsonl_streamed(path: Path) -> LoadedEvalSet:
    """:func:`_load_jsonl` a line at a time: the same checks and problems, each case's line put
    into the spill file."""
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
                case = _case_of_text(line)
                if case is not None:
                    cases.add(case, line.strip().encode("utf-8"))
                    continue
                where = f"line {number}"
                try:
                    data = _parse_line(line, file, where)
                    case = _jsonl_case(data, number == first_line, file, where)
                    if case is None:
                        header, header_line = data, number
                    else:
                        cases.add(case, line.strip().encode("utf-8"))
                except EvalSetError as exc:
                    problems.extend(_at_line(p, where) for p in exc.problems)
                    cases.fail()
        if not first_line:
            problems.append(Problem(file, "", "empty file; expected one eval case object per line"))
        if problems:
            raise EvalSetError(problems)
        meta = _jsonl_meta(path, header, header_line)
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


def _case_of_text(text: str | bytes) -> EvalCase | None:
    """The case the JSON ``text`` holds, checked by pydantic in one step (parsed as
    :func:`~assay._internal.files.parse_json` parses it), or None for the two-step reading to
    judge (and word the problems of) what it refuses."""
    try:
        return _EVAL_CASE.validate_json(text)
    except ValidationError:
        return None


def _load_object_streamed(path: Path) -> LoadedEvalSet:
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
    case = None if yajl_unsure(body) else _case_of_text(body)
    if case is not None:
        cases.add(case, body)
        return
    item = built(body)
    try:
        case = _validate(_EVAL_CASE, item, cases.file, EvalCase, where)
    except EvalSetError as exc:
        problems.extend(exc.problems)
        return
    cases.add(case, pydantic_core.to_json(item))


def _object_loaded(
    path: Path, members: list[Member], cases: _SpilledCases, case_problems: list[Problem]
) -> LoadedEvalSet:
    """The set from its top-level members (``eval_cases`` among them with no value when its
    cases were streamed), in the event reader's order of problems."""
    file = str(path)
    listed = [m for m in members if m.key in _CASES_KEYS]
    data = {m.key: m.value for m in members}
    if not listed or listed[0].kind != "start_array":  # nothing was streamed: a problem for sure
        return LoadedEvalSet(_validate(_EVAL_SET, data, file, EvalSet), path, "evalset")
    data[listed[0].key] = []
    meta: EvalSet | None = None
    header_problems: list[Problem] = []
    try:
        meta = _validate(_EVAL_SET, data, file, EvalSet)
    except EvalSetError as exc:
        header_problems = exc.problems
    problems = [p for p in header_problems if _before_cases(p)] + case_problems
    problems += [p for p in header_problems if not _before_cases(p)]
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
        return LoadedEvalSet(_validate(_EVAL_SET, data, file, EvalSet), path, "evalset")
    cases_key = listed[0].key
    data[cases_key] = []
    meta: EvalSet | None = None
    header_problems: list[Problem] = []
    try:
        meta = _validate(_EVAL_SET, data, file, EvalSet)
    except EvalSetError as exc:
        header_problems = exc.problems
    problems = [p for p in header_problems if _before_cases(p)]
    cases = _SpilledCases(file)
    try:
        with open_json(path) as handle:
            for index, item in enumerate(items(handle, f"{cases_key}.item")):
                try:
                    case = _validate(_EVAL_CASE, item, file, EvalCase, (cases_key, index))
                except EvalSetError as exc:
                    problems.extend(exc.problems)
                    continue
                cases.add(case, pydantic_core.to_json(item))
        problems += [p for p in header_problems if not _before_cases(p)]
        if problems or meta is None:
            raise EvalSetError(problems)
    except BaseException:
        cases.fail()
        raise
    eval_set = _streamed(meta, cases)
    return LoadedEvalSet(eval_set, path, "evalset", tuple(cases.duplicates), streamed=True)


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


def _parse_line(line: str, file: str, where: str) -> Any:
    try:
        return parse_json(line, file, EvalSetError, where)
    except EvalSetError as exc:  # the position is within the line: drop "line 1"
        raise EvalSetError(
            [
                Problem(p.file, p.path, re.sub(r"line 1 column", "column", p.message))
                for p in exc.problems
            ]
        ) from None


def _is_header(data: Any) -> bool:
    return isinstance(data, dict) and bool(data) and set(data) <= _HEADER_KEYS


def _misplaced_header() -> str:
    return (
        "expected an eval case (with 'eval_id'); only the first line may be a header with keys "
        + ", ".join(f"'{key}'" for key in _HEADER_FIELDS)
    )


def _at_line(problem: Problem, where: str) -> Problem:
    if problem.path.startswith("line "):
        return problem
    path = f"{where}: {problem.path}" if problem.path else where
    return Problem(problem.file, path, problem.message)


def _case_data(case: EvalCase) -> dict[str, Any]:
    data = case.model_dump(mode="json", exclude_none=True)
    if case.final_session_state is None:  # null is not the default ({}): keep it
        data["final_session_state"] = None
    return data


def _eval_set_data(eval_set: EvalSet) -> dict[str, Any]:
    # the cases apart: a streamed set's are no list for pydantic to dump
    rest = eval_set.model_dump(mode="json", exclude_none=True, exclude={"eval_cases"})
    cases = [_case_data(case) for case in eval_set.eval_cases]
    return {
        name: cases if name == "eval_cases" else rest[name]
        for name in EvalSet.model_fields
        if name == "eval_cases" or name in rest
    }


def write_eval_set(eval_set: EvalSet, path: str | Path) -> None:
    """Write an eval set as ``.json`` (ADK's shape), ``.yaml``/``.yml`` or ``.jsonl``.

    Keys are snake_case and null values are left out (except where null is not the default),
    so reading the file back gives an equal :class:`EvalSet`.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in {".yaml", ".yml"}:
        text = dump_yaml(_eval_set_data(eval_set))
    elif suffix == ".jsonl":
        header = eval_set.model_dump(mode="json", exclude_none=True, exclude={"eval_cases"})
        lines = [header, *(_case_data(case) for case in eval_set.eval_cases)]
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    else:
        text = json.dumps(_eval_set_data(eval_set), indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
