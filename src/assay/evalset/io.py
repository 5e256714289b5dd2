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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from assay._files import dump_yaml, load_data, parse_json, read_text, type_name
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

    @property
    def config_beside(self) -> Path | None:
        """``test_config.json`` in the same folder, if there is one (:func:`config_beside`)."""
        return config_beside(self.path)


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
    duplicates = _duplicate_ids(loaded.eval_set, str(loaded.path))
    if not duplicates:
        return loaded
    return replace(loaded, warnings=(*loaded.warnings, *duplicates))


def _duplicate_ids(eval_set: EvalSet, file: str) -> list[Problem]:
    first: dict[str, int] = {}
    problems: list[Problem] = []
    for index, case in enumerate(eval_set.eval_cases):
        if case.eval_id in first:
            problems.append(
                Problem(
                    file,
                    format_path(["eval_cases", index, "eval_id"]),
                    f"duplicate eval_id '{case.eval_id}' (first at eval_cases[{first[case.eval_id]}]); "
                    "traces and results are keyed by eval_id",
                )
            )
        else:
            first[case.eval_id] = index
    return problems


def _load(path: Path) -> LoadedEvalSet:
    if path.suffix.lower() == ".jsonl":
        return LoadedEvalSet(_load_jsonl(path), path, "jsonl")
    data = load_data(path, EvalSetError)
    file = str(path)
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
            if _is_header(data):
                if number != lines[0][0]:
                    raise EvalSetError([Problem(file, where, _misplaced_header())])
                header, header_line = data, number
            elif not isinstance(data, dict):
                message = f"expected an eval case object; got {short_value(data)}"
                raise EvalSetError([Problem(file, where, message)])
            else:
                cases.append(_validate(_EVAL_CASE, data, file, EvalCase))
        except EvalSetError as exc:
            problems.extend(_at_line(p, where) for p in exc.problems)
    if not lines:
        problems.append(Problem(file, "", "empty file; expected one eval case object per line"))
    if problems:
        raise EvalSetError(problems)
    if "eval_set_id" not in header and "evalSetId" not in header:
        header = {"eval_set_id": _stem(path), **header}
    try:
        meta = _validate(_EVAL_SET, {**header, "eval_cases": []}, file, EvalSet)
    except EvalSetError as exc:
        raise EvalSetError([_at_line(p, f"line {header_line}") for p in exc.problems]) from None
    return meta.model_copy(update={"eval_cases": cases})


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
    data = eval_set.model_dump(mode="json", exclude_none=True)
    data["eval_cases"] = [_case_data(case) for case in eval_set.eval_cases]
    return data


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
