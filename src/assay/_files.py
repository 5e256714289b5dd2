"""Reading input files into plain data, with errors that name the file and the position."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic_core
import yaml

from assay.errors import InputError, Problem


def read_text(path: Path, error: type[InputError]) -> str:
    """The file's text, or ``error`` saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error([Problem(str(path), "", "file not found")]) from None
    except IsADirectoryError:
        raise error([Problem(str(path), "", "is a directory, expected a file")]) from None
    except UnicodeDecodeError as exc:
        raise error([Problem(str(path), "", f"not UTF-8 text ({exc.reason})")]) from None
    except OSError as exc:
        raise error([Problem(str(path), "", f"cannot be read: {exc.strerror}")]) from None


def parse_json(text: str, file: str, error: type[InputError], where: str = "") -> Any:
    """Parse JSON the way pydantic (and so ADK) does: same numbers, same strictness."""
    try:
        return pydantic_core.from_json(text)
    except ValueError as exc:
        raise error([Problem(file, where, f"malformed JSON: {exc}")]) from None


def parse_yaml(text: str, file: str, error: type[InputError]) -> Any:
    """Parse YAML safely (no object tags)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error([Problem(file, "", f"malformed YAML{at}: {problem}")]) from None


def load_data(path: Path, error: type[InputError]) -> Any:
    """Read a JSON or YAML file (by extension) into plain data."""
    text = read_text(path, error)
    if path.suffix.lower() in {".yaml", ".yml"}:
        return parse_yaml(text, str(path), error)
    return parse_json(text, str(path), error)


def type_name(value: Any) -> str:
    """A JSON-ish name for a value's type, for messages."""
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
