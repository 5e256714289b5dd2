"""What the eager readers (:mod:`assay.evalset.io`) and the streamed ones
(:mod:`assay.evalset.streamed_io`) share: the loaded set's types, checking data against the
models with the eager reader's problems, and the JSONL line helpers.

It is apart so that both readers can import it and neither imports the other back: ``io``
chooses a reader and imports ``streamed_io``, which must not import ``io``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    PrivateAttr,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    field_serializer,
)

from assay._internal.files import parse_json
from assay.errors import (
    EvalSetError,
    Problem,
    format_path,
    keys_at,
    problems_from_validation,
    short_value,
)
from assay.evalset.case import EvalCase, EvalSet

_T = TypeVar("_T")

Format = Literal["evalset", "legacy_turns", "legacy_cases", "jsonl"]

CONFIG_FILE = "test_config.json"

_HEADER_FIELDS = ("eval_set_id", "name", "description", "creation_timestamp")
_HEADER_KEYS = frozenset(_HEADER_FIELDS) | {"evalSetId", "creationTimestamp"}


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


def validate(
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


EVAL_SET = TypeAdapter(EvalSet)
EVAL_CASE = TypeAdapter(EvalCase)


def note_id(
    first: dict[str, int], eval_id: str, index: int, file: str, found: list[Problem]
) -> None:
    """Remember where ``eval_id`` is first seen; a warning in ``found`` when seen before."""
    if eval_id not in first:
        first[eval_id] = index
        return
    found.append(duplicate_id(file, eval_id, index, first[eval_id]))


def duplicate_id(file: str, eval_id: str, index: int, first: int) -> Problem:
    """The warning for ``eval_cases[index]``, whose ``eval_id`` case ``first`` has already."""
    return Problem(
        file,
        format_path(["eval_cases", index, "eval_id"]),
        f"duplicate eval_id '{eval_id}' (first at eval_cases[{first}]); "
        "traces and results are keyed by eval_id",
    )


def stem(path: Path) -> str:
    name = path.name
    for suffix in (".evalset.json", ".test.json", ".json", ".yaml", ".yml", ".jsonl"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def jsonl_case(data: Any, first: bool, file: str, where: str) -> EvalCase | None:
    """The case a JSONL line holds (None for a header, which only the ``first`` line may be)."""
    if _is_header(data):
        if not first:
            raise EvalSetError([Problem(file, where, _misplaced_header())])
        return None
    if not isinstance(data, dict):
        message = f"expected an eval case object; got {short_value(data)}"
        raise EvalSetError([Problem(file, where, message)])
    return validate(EVAL_CASE, data, file, EvalCase)


def jsonl_meta(path: Path, header: dict[str, Any], header_line: int) -> EvalSet:
    """The eval set a JSONL header line describes (its cases left empty)."""
    if "eval_set_id" not in header and "evalSetId" not in header:
        header = {"eval_set_id": stem(path), **header}
    try:
        return validate(EVAL_SET, {**header, "eval_cases": []}, str(path), EvalSet)
    except EvalSetError as exc:
        raise EvalSetError([at_line(p, f"line {header_line}") for p in exc.problems]) from None


def parse_line(line: str, file: str, where: str) -> Any:
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


def at_line(problem: Problem, where: str) -> Problem:
    if problem.path.startswith("line "):
        return problem
    path = f"{where}: {problem.path}" if problem.path else where
    return Problem(problem.file, path, problem.message)
