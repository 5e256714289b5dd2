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
read-only :class:`~assay._internal.spill.SpilledSequence`), by :mod:`assay.evalset.streamed_io`.
The legacy lists and YAML are always read whole: they are small in practice.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from assay._internal.file_kinds import wrong_kind
from assay._internal.files import dump_yaml, load_data, parse_json, read_text, type_name
from assay._internal.json_stream import (
    EXACT_LIMIT,
    JsonError,
    NotStreamable,
    should_stream,
    syntax_problem,
)
from assay.errors import EvalSetError, Problem, format_path, short_value
from assay.evalset import legacy
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.reading import CONFIG_FILE as CONFIG_FILE
from assay.evalset.reading import (
    EVAL_SET,
    at_line,
    jsonl_case,
    jsonl_meta,
    note_id,
    parse_line,
    stem,
    validate,
)
from assay.evalset.reading import Format as Format
from assay.evalset.reading import LoadedEvalSet as LoadedEvalSet
from assay.evalset.reading import StreamedEvalSet as StreamedEvalSet
from assay.evalset.reading import config_beside as config_beside
from assay.evalset.streamed_io import load_jsonl_streamed, load_object_streamed

INITIAL_SESSION_FILE = "initial.session.json"

_EXPECTED_TOP = (
    "expected an eval set object with 'eval_set_id' and 'eval_cases', or ADK's legacy list "
    "of turns ([{query, expected_tool_use, reference}]) or of named cases ([{name, data}])"
)


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
        note_id(first, case.eval_id, index, file, problems)
    return problems


def _load(path: Path) -> LoadedEvalSet:
    suffix = path.suffix.lower()
    if suffix not in {".yaml", ".yml"} and should_stream(path):
        try:
            return load_jsonl_streamed(path) if suffix == ".jsonl" else load_object_streamed(path)
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
        return LoadedEvalSet(validate(EVAL_SET, data, file, EvalSet), path, "evalset")
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
        cases = validate(_NAMED_CASES, data, file)
        eval_set = legacy.eval_set_from_named_cases(stem(path), cases)
        warnings = legacy.ignored_keys(cases, file)
        return LoadedEvalSet(eval_set, path, "legacy_cases", tuple(warnings))
    turns = validate(_TURNS, data, file)
    session, session_warnings = _initial_session_beside(path)
    eval_id = stem(path)
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
    session = validate(_SESSION, data, file)
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
            data = parse_line(line, file, where)
            case = jsonl_case(data, number == lines[0][0], file, where)
            if case is None:
                header, header_line = data, number
            else:
                cases.append(case)
        except EvalSetError as exc:
            problems.extend(at_line(p, where) for p in exc.problems)
    if not lines:
        problems.append(Problem(file, "", "empty file; expected one eval case object per line"))
    if problems:
        raise EvalSetError(problems)
    return jsonl_meta(path, header, header_line).model_copy(update={"eval_cases": cases})


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
