"""Reading and writing eval sets in every format assay accepts.

* ADK's ``.evalset.json`` (an EvalSet object);
* ADK's legacy ``.test.json`` per-turn list, with ``initial.session.json`` beside it;
* ADK's legacy list of named cases (``[{name, data, initial_session}]``);
* the same EvalSet object as YAML (``.yaml`` / ``.yml``);
* JSONL: one EvalCase per line, optionally preceded by a header line
  ``{"eval_set_id": ..., "name": ..., "description": ...}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from assay._files import load_data, parse_json, read_text, type_name
from assay.errors import EvalSetError, Problem, problems_from_validation
from assay.evalset import legacy
from assay.evalset.case import EvalCase, EvalSet

_T = TypeVar("_T")

Format = Literal["evalset", "legacy_turns", "legacy_cases", "jsonl"]

INITIAL_SESSION_FILE = "initial.session.json"
CONFIG_FILE = "test_config.json"

_HEADER_KEYS = {"eval_set_id", "name", "description", "creation_timestamp"}


@dataclass(frozen=True)
class LoadedEvalSet:
    """An eval set with where it came from."""

    eval_set: EvalSet
    path: Path
    format: Format

    @property
    def config_beside(self) -> Path | None:
        """``test_config.json`` in the same folder, if there is one."""
        candidate = self.path.parent / CONFIG_FILE
        return candidate if candidate.is_file() else None


@cache
def _known_keys() -> tuple[str, ...]:
    names: set[str] = set()
    pending: list[type[BaseModel]] = [EvalSet, legacy.LegacyNamedCase]
    seen: set[type[BaseModel]] = set()
    while pending:
        model = pending.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, field in model.model_fields.items():
            names.add(name)
            pending.extend(_models_in(field.annotation))
    return tuple(sorted(names))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found.extend(_models_in(arg))
    for meta in getattr(annotation, "__metadata__", ()) or ():
        found.extend(_models_in(meta))
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and origin is not annotation:
        found.extend(_models_in(origin))
    return found


def _validate(
    adapter: TypeAdapter[_T], data: Any, file: str, prefix: tuple[str | int, ...] = ()
) -> _T:
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        raise EvalSetError(
            problems_from_validation(exc, file, data, prefix, known_keys=_known_keys())
        ) from None


_EVAL_SET = TypeAdapter(EvalSet)
_EVAL_CASE = TypeAdapter(EvalCase)
_TURNS = TypeAdapter(list[legacy.LegacyTurn])
_NAMED_CASES = TypeAdapter(list[legacy.LegacyNamedCase])
_SESSION = TypeAdapter(legacy.LegacyInitialSession)


def load_eval_set(path: str | Path) -> LoadedEvalSet:
    """Load an eval set from any supported format, or raise :class:`EvalSetError`."""
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return LoadedEvalSet(_load_jsonl(path), path, "jsonl")
    data = load_data(path, EvalSetError)
    file = str(path)
    if isinstance(data, dict):
        return LoadedEvalSet(_validate(_EVAL_SET, data, file), path, "evalset")
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        first = data[0]
        if "data" in first or "name" in first:
            cases = _validate(_NAMED_CASES, data, file)
            return LoadedEvalSet(
                legacy.eval_set_from_named_cases(_stem(path), cases), path, "legacy_cases"
            )
        turns = _validate(_TURNS, data, file)
        eval_id = _stem(path)
        case = legacy.case_from_turns(eval_id, turns, _initial_session_beside(path))
        eval_set = EvalSet(eval_set_id=eval_id, name=eval_id, eval_cases=[case])
        return LoadedEvalSet(eval_set, path, "legacy_turns")
    raise EvalSetError(
        [
            Problem(
                file,
                "",
                "expected an eval set object with 'eval_set_id' and 'eval_cases', or ADK's "
                f"legacy list of turns or of named cases; got {_describe(data)}",
            )
        ]
    )


def _describe(data: Any) -> str:
    if isinstance(data, list):
        if not data:
            return "an empty list"
        bad = next(i for i, item in enumerate(data) if not isinstance(item, dict))
        return f"a list whose item [{bad}] is {type_name(data[bad])}"
    return type_name(data)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".evalset.json", ".test.json", ".json", ".yaml", ".yml", ".jsonl"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _initial_session_beside(path: Path) -> legacy.LegacyInitialSession | None:
    candidate = path.parent / INITIAL_SESSION_FILE
    if not candidate.is_file():
        return None
    data = parse_json(read_text(candidate, EvalSetError), str(candidate), EvalSetError)
    if isinstance(data, dict) and not data:
        return None
    return _validate(_SESSION, data, str(candidate))


def _load_jsonl(path: Path) -> EvalSet:
    text = read_text(path, EvalSetError)
    file = str(path)
    header: dict[str, Any] = {}
    cases: list[EvalCase] = []
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = parse_json(line, file, EvalSetError, where)
            if isinstance(data, dict) and "eval_id" not in data and "evalId" not in data:
                if cases or header or not set(data) <= _HEADER_KEYS:
                    raise EvalSetError(
                        [
                            Problem(
                                file,
                                where,
                                "expected an eval case (with 'eval_id'); only the first line "
                                f"may be a header with keys {sorted(_HEADER_KEYS)}",
                            )
                        ]
                    )
                header = data
                continue
            cases.append(_validate(_EVAL_CASE, data, file))
        except EvalSetError as exc:
            problems.extend(_at_line(p, where) for p in exc.problems)
    if problems:
        raise EvalSetError(problems)
    header.setdefault("eval_set_id", _stem(path))
    return _validate(_EVAL_SET, {**header, "eval_cases": []}, file).model_copy(
        update={"eval_cases": cases}
    )


def _at_line(problem: Problem, where: str) -> Problem:
    if problem.path.startswith("line "):
        return problem
    path = f"{where}: {problem.path}" if problem.path else where
    return Problem(problem.file, path, problem.message)


def write_eval_set(eval_set: EvalSet, path: str | Path) -> None:
    """Write an eval set as ``.json`` (ADK's shape), ``.yaml``/``.yml`` or ``.jsonl``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in {".yaml", ".yml"}:
        data = eval_set.model_dump(mode="json", exclude_none=True)
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    elif suffix == ".jsonl":
        header = eval_set.model_dump(mode="json", exclude_none=True, exclude={"eval_cases"})
        lines = [json.dumps(header, ensure_ascii=False)]
        lines += [
            case.model_dump_json(exclude_none=True) for case in eval_set.eval_cases
        ]
        text = "\n".join(lines) + "\n"
    else:
        text = eval_set.model_dump_json(indent=2, exclude_none=True) + "\n"
    path.write_text(text, encoding="utf-8")
