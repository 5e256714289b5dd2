"""A run's input files, kept in the history so its results can be read back whole.

The stored case results refer to the run's eval sets and traces (:mod:`assay.history.compact`).
Each input file is kept once, by the sha256 of its bytes (``blobs``), however many runs read it;
``run_inputs`` lists a run's files in order. Reading a run back loads its files again the way
``assay eval`` did (from a temporary folder, under their own names, since the loaders read the
format from the name), so what the records refer to is found exactly.
"""

from __future__ import annotations

import hashlib
import tempfile
import zlib
from collections.abc import Container, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from assay.evalset.io import INITIAL_SESSION_FILE, load_eval_set
from assay.history.compact import Inputs
from assay.results.traces import load_traces

Kind = Literal["eval_set", "session", "traces"]


@dataclass(frozen=True)
class InputFile:
    """One file a run read: an eval set (and the legacy ``initial.session.json`` beside it),
    or a traces file, at its position among the run's eval sets or traces."""

    kind: Kind
    position: int
    path: str


@dataclass(frozen=True)
class StoredInput:
    """An input file with its content."""

    file: InputFile
    sha256: str
    data: bytes


def input_files(
    eval_sets: Sequence[tuple[str, str]], traces: Sequence[str] = ()
) -> list[InputFile]:
    """The files of a run reading ``eval_sets`` (path and format each, in order) and
    ``traces``."""
    files: list[InputFile] = []
    for position, (path, format_) in enumerate(eval_sets):
        files.append(InputFile("eval_set", position, path))
        session = Path(path).parent / INITIAL_SESSION_FILE
        if format_ == "legacy_turns" and session.is_file():
            files.append(InputFile("session", position, str(session)))
    files.extend(InputFile("traces", position, path) for position, path in enumerate(traces))
    return files


def read_inputs(files: Sequence[InputFile]) -> list[StoredInput]:
    """Each file's bytes and sha256 (hashing releases the GIL, so this suits a thread)."""
    found = []
    for file in files:
        data = Path(file.path).read_bytes()
        found.append(StoredInput(file, hashlib.sha256(data).hexdigest(), data))
    return found


@dataclass(frozen=True)
class PackedInput:
    """An input file as the history keeps it: zlib-compressed (level 1: about a tenth of the
    size for JSON, at ~150 MB/s), or None when the history already has the same bytes."""

    file: InputFile
    sha256: str
    size: int
    packed: bytes | None


def pack(stored: Sequence[StoredInput], known: Container[str] = ()) -> list[PackedInput]:
    """Compress the files whose sha256 is not ``known`` (zlib lets go of the GIL, so this
    suits a thread)."""
    return [
        PackedInput(
            item.file,
            item.sha256,
            len(item.data),
            None if item.sha256 in known else zlib.compress(item.data, 1),
        )
        for item in stored
    ]


def digests(stored: Sequence[StoredInput | PackedInput]) -> dict[str, str]:
    """sha256 by path."""
    return {item.file.path: item.sha256 for item in stored}


def load_stored(stored: Sequence[StoredInput]) -> Inputs:
    """The eval sets and traces the stored files hold, loaded as ``assay eval`` loads them."""
    with tempfile.TemporaryDirectory(prefix="assay-run-") as folder:
        eval_sets: dict[int, Path] = {}
        traces: dict[int, Path] = {}
        for item in stored:
            kind, position = item.file.kind, item.file.position
            place = Path(folder) / f"{'traces' if kind == 'traces' else 'eval_set'}-{position}"
            place.mkdir(exist_ok=True)
            name = INITIAL_SESSION_FILE if kind == "session" else Path(item.file.path).name
            (place / name).write_bytes(item.data)
            if kind == "eval_set":
                eval_sets[position] = place / name
            elif kind == "traces":
                traces[position] = place / name
        return Inputs(
            [load_eval_set(eval_sets[p]).eval_set for p in sorted(eval_sets)],
            load_traces(traces[p] for p in sorted(traces)) if traces else None,
        )
