"""Errors assay raises, and how bad input is reported.

::

    AssayError                      anything assay reports to a user instead of a traceback
     └── InputError                 a file could not be used; carries every Problem found
          ├── EvalSetError          an eval set (.evalset.json, .test.json, YAML, JSONL)
          ├── ConfigError           an EvalConfig / test_config.json
          └── TracesError           a traces or .evalset_result.json file

A :class:`Problem` names the file, the JSON path inside it (``eval_cases[3].conversation[0]``)
and what was expected, so every message can be acted on without reading a stack trace.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


class AssayError(Exception):
    """Base of every error assay reports to a user."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.message}"


class InputError(AssayError):
    """An input file cannot be used. ``problems`` lists everything found wrong with it."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class EvalSetError(InputError):
    """An eval set file is missing, malformed or does not match the eval-set schema."""


class ConfigError(InputError):
    """An EvalConfig file is missing, malformed or names unknown metrics or keys."""


class TracesError(InputError):
    """A traces file is missing, malformed or holds invalid invocations."""


def format_path(parts: Iterable[str | int]) -> str:
    """``("eval_cases", 3, "conversation")`` -> ``eval_cases[3].conversation``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _data_path(loc: tuple[str | int, ...], data: Any) -> list[str | int]:
    """Keep the parts of a pydantic location that exist in the input (drops union tags)."""
    kept: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str):
            key = part if part in node else _camel(part)
            if key in node:
                kept.append(part)
                node = node[key]
                continue
            if last or not _looks_like_tag(part):
                kept.append(part)
                node = None
            continue
        if isinstance(node, list | tuple) and isinstance(part, int) and 0 <= part < len(node):
            kept.append(part)
            node = node[part]
            continue
        if node is None or not _looks_like_tag(str(part)):
            kept.append(part)
    return kept


def _looks_like_tag(part: str) -> bool:
    return (
        part in {"data", "events", "str", "int", "float", "bool", "list", "dict"}
        or part[:1].isupper()
        or "[" in part
    )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _message(error: ErrorDetails, known_keys: Sequence[str]) -> str:
    kind = error["type"]
    loc = error["loc"]
    name = loc[-1] if loc else ""
    if kind == "missing":
        return f"missing required key '{name}'"
    if kind == "extra_forbidden":
        hint = difflib.get_close_matches(str(name), known_keys, n=1)
        suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
        return f"unknown key '{name}'{suffix}"
    message = error["msg"]
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
        return message
    return f"{message}; got {_short(error.get('input'))}"


def problems_from_validation(
    error: ValidationError,
    file: str | Path,
    data: Any,
    prefix: Sequence[str | int] = (),
    known_keys: Sequence[str] = (),
) -> list[Problem]:
    """Turn a pydantic ValidationError into one Problem per distinct location and message."""
    seen: set[tuple[str, str]] = set()
    problems: list[Problem] = []
    for detail in error.errors(include_url=False):
        path = format_path([*prefix, *_data_path(tuple(detail["loc"]), data)])
        message = _message(detail, known_keys)
        if (path, message) in seen:
            continue
        seen.add((path, message))
        problems.append(Problem(str(file), path, message))
    return problems
