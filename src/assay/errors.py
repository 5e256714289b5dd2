"""Errors assay raises, and how bad input is reported.

::

    AssayError                      anything assay reports to a user instead of a traceback
     ├── InputError                 a file could not be used; carries every Problem found
     │    ├── EvalSetError          an eval set (.evalset.json, .test.json, YAML, JSONL)
     │    ├── ConfigError           an EvalConfig / test_config.json
     │    ├── TracesError           a traces or .evalset_result.json file
     │    └── LabelsError           a file of people's labels on a recorded run
     └── UserSimulatorError         a user simulator cannot be set up or used as configured

    ConfigWarning (a UserWarning)   a config key or value that loads, as in ADK, but is ignored

A :class:`Problem` names the file, the JSON path inside it (``eval_cases[3].conversation[0]``)
and what was expected, so every message can be acted on without reading a stack trace. An
unknown or missing key is reported at the object that holds it
(``eval_cases[0]: missing required key 'eval_id'``).
"""

from __future__ import annotations

import difflib
import json
import re
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Tag, ValidationError
from pydantic_core import ErrorDetails

Loc = tuple[str | int, ...]
KnownKeys = Sequence[str] | Callable[[Loc], Sequence[str]]


class AssayError(Exception):
    """Base of every error assay reports to a user."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file (or, as a warning, one thing ignored in it)."""

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
    """A traces or results file is missing, malformed or holds invalid invocations."""


class ProfileError(InputError):
    """A judge profile file is missing or malformed."""


class LabelsError(InputError):
    """A labels file is missing or malformed, or names a case, turn, criterion, rubric or label
    that its eval set, traces or config do not have."""


class ConfigWarning(UserWarning):
    """A config loads, as ADK loads it, but something in it is ignored or read loosely: an
    unknown key where ADK allows extra keys (a typo ADK would not report), a boolean threshold.

    :func:`~assay.config.parse_config` and :func:`~assay.config.load_config` emit one per
    :class:`Problem` in the config's ``warnings``; the CLI prints those instead."""


class UserSimulatorError(AssayError):
    """A simulator cannot be set up or used as configured: an unknown persona id, custom
    instructions that cannot be rendered, a scenario without an LLM to play the user.

    Here, not in :mod:`assay.simulation`, because the simulator's settings are checked where the
    config is read (:mod:`assay.config.simulator`), below the simulators."""


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")


def format_path(parts: Iterable[str | int]) -> str:
    """``("eval_cases", 3, "conversation")`` -> ``eval_cases[3].conversation``.

    Keys that are not plain names are quoted: ``("state", "a b")`` -> ``state["a b"]``.
    """
    out = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif not isinstance(part, str) or not _PLAIN_KEY.fullmatch(part):
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
        else:
            out += f".{part}" if out else part
    return out


def short_value(value: Any, limit: int = 60) -> str:
    """A value as JSON, cut to ``limit`` characters, for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _looks_like_tag(part: str) -> bool:
    """Union-member labels pydantic puts in locations (``str``, ``UserPersona``, a Tag)."""
    return (
        part in {"data", "events", "str", "int", "float", "bool", "list", "dict"}
        or part[:1].isupper()
        or "[" in part
    )


def _data_path(loc: Loc, data: Any) -> list[str | int]:
    """The parts of a pydantic location that exist in the input, spelled as in the input.

    Union-member labels are dropped; a snake_case field given in camelCase keeps its camelCase.
    """
    kept: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str):
            key = part if part in node else _camel(part)
            if key in node:
                kept.append(key)
                node = node[key]
            elif last or not _looks_like_tag(part):
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


_EXPECTED = {
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "list_type": "a list",
    "tuple_type": "a list",
    "string_type": "a string",
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "none_required": "null",
}


def closest_key(name: str, known: Iterable[str]) -> str | None:
    """The known key ``name`` is most likely a typo of, spelled as ``name`` is (a camelCase
    name gets a camelCase suggestion), or None when none is close."""
    keys = list(known)
    if "_" not in name and name != name.lower():  # written in camelCase: suggest camelCase
        keys = [_camel(k) for k in keys]
    hint = difflib.get_close_matches(name, keys, n=1)
    return hint[0] if hint else None


def _suggest(name: str, known_keys: KnownKeys, loc: Loc) -> str:
    known = list(known_keys(loc[:-1]) if callable(known_keys) else known_keys)
    if name in known or name in {_camel(k) for k in known}:
        return " (given twice, in snake_case and in camelCase: keep one)"
    hint = closest_key(name, known)
    return f" (did you mean '{hint}'?)" if hint else ""


def _message(error: ErrorDetails, known_keys: KnownKeys) -> str:
    kind = error["type"]
    loc = tuple(error["loc"])
    name = str(loc[-1]) if loc else ""
    if kind == "missing":
        return f"missing required key '{name}'"
    if kind == "extra_forbidden":
        return f"unknown key '{name}'{_suggest(name, known_keys, loc)}"
    if kind == "value_error":
        return error["msg"].removeprefix("Value error, ")
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}; got {short_value(error.get('input'))}"
    return f"{error['msg']}; got {short_value(error.get('input'))}"


def problems_from_validation(
    error: ValidationError,
    file: str | Path,
    data: Any,
    prefix: Sequence[str | int] = (),
    known_keys: KnownKeys = (),
) -> list[Problem]:
    """Turn a pydantic ValidationError into one Problem per distinct location and message.

    ``known_keys`` (the valid keys, or a function of the location of the object holding an
    unknown key) feeds the "did you mean" hint. Type errors of the members of a union at one
    location are merged (``expected an object or a string; got 5``).
    """
    problems: list[Problem] = []
    expected_at: dict[str, list[str]] = {}
    for detail in error.errors(include_url=False):
        loc = tuple(detail["loc"])
        parts = _data_path(loc, data)
        if detail["type"] in {"missing", "extra_forbidden"} and parts:
            parts = parts[:-1]  # reported at the object that holds the key
        path = format_path([*prefix, *parts])
        kind = detail["type"]
        if kind in _EXPECTED and path in expected_at:
            if _EXPECTED[kind] not in expected_at[path]:
                expected_at[path].append(_EXPECTED[kind])
            continue
        if kind in _EXPECTED:
            expected_at[path] = [_EXPECTED[kind]]
        problem = Problem(str(file), path, _message(detail, known_keys))
        if problem not in problems:
            problems.append(problem)
    return [_merge_expected(p, expected_at) for p in problems]


def _merge_expected(problem: Problem, expected_at: dict[str, list[str]]) -> Problem:
    kinds = expected_at.get(problem.path, [])
    if len(kinds) < 2 or not problem.message.startswith(f"expected {kinds[0]}; got "):
        return problem
    got = problem.message.removeprefix(f"expected {kinds[0]}; ")
    return Problem(problem.file, problem.path, f"expected {' or '.join(kinds)}; {got}")


def keys_at(annotation: Any, loc: Loc) -> list[str]:
    """The field names of the model(s) found at pydantic location ``loc`` inside ``annotation``.

    ``keys_at(EvalSet, ("eval_cases", 0))`` -> the fields of ``EvalCase``. Used for "did you
    mean" hints that only suggest keys valid where the unknown key is.
    """
    candidates = [annotation]
    for part in loc:
        candidates = [found for ann in candidates for found in _step(ann, part)]
    names = {
        name
        for ann in candidates
        for member, _ in _members(ann)
        if isinstance(member, type) and issubclass(member, BaseModel)
        for name in member.model_fields
    }
    return sorted(names)


def _members(annotation: Any) -> list[tuple[Any, set[str]]]:
    """The members of a (possibly Annotated, possibly Optional) union, with their Tags."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *meta = get_args(annotation)
        tags = {m.tag for m in meta if isinstance(m, Tag)}
        return [(member, found | tags) for member, found in _members(inner)]
    if origin is Union or origin is types.UnionType:
        return [pair for arg in get_args(annotation) for pair in _members(arg)]
    return [(annotation, set())]


def _step(annotation: Any, part: str | int) -> list[Any]:
    found: list[Any] = []
    for member, tags in _members(annotation):
        origin = get_origin(member)
        args = get_args(member)
        if isinstance(part, str) and (part in tags or getattr(member, "__name__", "") == part):
            found.append(member)
        elif isinstance(member, type) and issubclass(member, BaseModel):
            field = member.model_fields.get(str(part))
            if field is not None:
                found.append(field.annotation)
        elif origin in (list, tuple) and isinstance(part, int) and args:
            fixed = origin is tuple and args[-1] is not Ellipsis
            found.append(args[part] if fixed and part < len(args) else args[0])
        elif origin is dict and isinstance(part, str) and len(args) == 2:
            found.append(args[1])
    return found
