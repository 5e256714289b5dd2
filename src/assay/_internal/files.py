"""Reading input files into plain data, with errors that name the file and the position."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pydantic_core

from assay._internal.write_behind import write_behind
from assay.errors import InputError, Problem

if TYPE_CHECKING:  # imported on first use: most runs read JSON alone
    import yaml


def read_text(path: Path, error: type[InputError]) -> str:
    """The file's text (without a leading byte-order mark), or ``error`` saying why not."""
    try:
        return path.read_text(encoding="utf-8").removeprefix("\ufeff")
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


_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_DROPPED = {_BOOL, _INT, _FLOAT, "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"}
_YAML12 = [
    (_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    (_INT, re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789")),
    (
        _FLOAT,
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+0123456789."),
    ),
]


@cache
def _loader() -> type[yaml.SafeLoader]:
    """Safe YAML with YAML 1.2's plain scalars, as JSON has them.

    Only ``true``/``false`` are booleans (``on``, ``yes``, ``no`` stay strings), numbers are
    decimal (``010`` is 10, ``1:30`` a string) and dates stay strings. Made on first use, so
    reading JSON alone never imports yaml.
    """
    import yaml

    class _YamlLoader(yaml.SafeLoader):
        pass

    _YamlLoader.yaml_implicit_resolvers = {
        first: [(tag, regex) for tag, regex in resolvers if tag not in _DROPPED]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for tag, regex, first in _YAML12:
        _YamlLoader.add_implicit_resolver(tag, regex, first)
    _YamlLoader.add_constructor(_INT, _decimal_int)
    return _YamlLoader


def _decimal_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    return int(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


@cache
def _dumper() -> type[yaml.SafeDumper]:
    """Quotes every string that YAML 1.1 or 1.2 would read as something else."""
    import yaml

    class _YamlDumper(yaml.SafeDumper):
        pass

    for tag, regex, first in _YAML12:
        _YamlDumper.add_implicit_resolver(tag, regex, first)
    _YamlDumper.add_representer(str, _represent_str)
    return _YamlDumper


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML's single-quoted and block styles turn a NEL (U+0085) into a space or line feed;
    # double quotes escape it.
    style = '"' if any(c in value for c in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def parse_yaml(text: str, file: str, error: type[InputError]) -> Any:
    """Parse YAML safely (no object tags), with YAML 1.2 scalars (see :func:`_loader`)."""
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise error([Problem(file, "", f"malformed YAML{at}: {problem}")]) from None


def dump_yaml(data: Any) -> str:
    """YAML text for plain data that :func:`parse_yaml` reads back unchanged."""
    import yaml

    return yaml.dump(data, Dumper=_dumper(), sort_keys=False, allow_unicode=True)


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


def write_atomically(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (a string, or its pieces, written as they come) to ``path`` through a
    temporary file beside it, so a reader never sees half a file; the temporary file is removed
    if writing fails (the OSError is raised)."""
    _replace_atomically(path, [text] if isinstance(text, str) else text, "w")


def write_bytes_atomically(path: Path, pieces: Iterable[bytes]) -> None:
    """:func:`write_atomically` for UTF-8 pieces already encoded (the results file's cases are
    bytes when made: encoding them again would cost as much as writing them)."""
    _replace_atomically(path, pieces, "wb")


def _replace_atomically(path: Path, pieces: Iterable[str] | Iterable[bytes], mode: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        if mode == "wb":
            with tmp.open("wb") as binary:  # written from a thread while the next are made
                write_behind(binary, cast("Iterable[bytes]", pieces))
        else:
            with tmp.open(mode, encoding="utf-8") as out:
                out.writelines(pieces)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
