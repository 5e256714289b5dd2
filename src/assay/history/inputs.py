"""A run's input files, kept in the history so its results can be read back whole.

The stored case results refer to the run's eval sets and traces (:mod:`assay.history.compact`).
Each input file is kept once, by the sha256 of its bytes (``blobs``), however many runs read it;
``run_inputs`` lists a run's files in order. Reading a run back loads its files again the way
``assay eval`` did (from a temporary folder, under their own names, since the loaders read the
format from the name), so what the records refer to is found exactly. Files are hashed,
compressed, stored and written back a chunk at a time: a run over a 5 GB traces file holds
no more of it than a run over a small one.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

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


CHUNK = 1 << 20
"""Bytes read, hashed, compressed or written at a time."""
PART = 4 << 20
"""Compressed bytes stored in one row: a larger file's are stored in parts of this size (a part is
held twice while it is written, once here and once by SQLite: at 64 MB, a run over a 260 MB
traces file peaked at 140 MB where it otherwise held 100)."""


@dataclass(frozen=True)
class HashedInput:
    """An input file as a run read it: its sha256 and size (its bytes stay in the file)."""

    file: InputFile
    sha256: str
    size: int


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


def read_inputs(files: Sequence[InputFile]) -> list[HashedInput]:
    """Each file's sha256 and size, read a chunk at a time (hashing releases the GIL, so this
    suits a thread)."""
    found = []
    for file in files:
        digest, size = hashlib.sha256(), 0
        with open(file.path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
        found.append(HashedInput(file, digest.hexdigest(), size))
    return found


@dataclass(frozen=True)
class PackedInput:
    """An input file as the history keeps it: zlib-compressed (level 1: about a tenth of the
    size for JSON, at ~150 MB/s) into the file ``packed``, or None when the history already
    has the same bytes."""

    file: InputFile
    sha256: str
    size: int
    packed: Path | None


def pack(
    hashed: Sequence[HashedInput], folder: Path, known: Container[str] = ()
) -> list[PackedInput]:
    """Compress the files whose sha256 is not ``known`` into ``folder``, a chunk at a time
    (zlib lets go of the GIL, so this suits a thread)."""
    packed = []
    for number, item in enumerate(hashed):
        target = None
        if item.sha256 not in known:
            target = folder / f"{number}.zlib"
            squeeze = zlib.compressobj(1)
            with open(item.file.path, "rb") as source, target.open("wb") as out:
                while chunk := source.read(CHUNK):
                    out.write(squeeze.compress(chunk))
                out.write(squeeze.flush())
        packed.append(PackedInput(item.file, item.sha256, item.size, target))
    return packed


def parts(path: Path) -> Iterator[bytes]:
    """A packed file's bytes, :data:`PART` at a time."""
    with path.open("rb") as handle:
        while part := handle.read(PART):
            yield part


def unpack(packed: Iterable[bytes], out: BinaryIO) -> None:
    """Write what the compressed ``packed`` pieces hold, :data:`CHUNK` at a time."""
    loosen = zlib.decompressobj()
    for piece in packed:
        while piece:
            out.write(loosen.decompress(piece, CHUNK))
            piece = loosen.unconsumed_tail
    out.write(loosen.flush())
    if not loosen.eof:
        raise zlib.error("the stored file stops short")


def digests(stored: Sequence[HashedInput | PackedInput]) -> dict[str, str]:
    """sha256 by path."""
    return {item.file.path: item.sha256 for item in stored}


def place(file: InputFile, folder: Path) -> Path:
    """Where a stored file is written back under ``folder``: a folder per eval set or traces
    file, the file under its own name (the loaders read the format from the name; a legacy
    eval set's ``initial.session.json`` beside it)."""
    kind, position = file.kind, file.position
    where = folder / f"{'traces' if kind == 'traces' else 'eval_set'}-{position}"
    where.mkdir(parents=True, exist_ok=True)
    return where / (INITIAL_SESSION_FILE if kind == "session" else Path(file.path).name)


def load_stored(extracted: Sequence[tuple[InputFile, Path]]) -> Inputs:
    """The eval sets and traces in the files written back by :func:`place` (each with the
    file it was), loaded as ``assay eval`` loads them (a large one streamed)."""
    eval_sets = {f.position: path for f, path in extracted if f.kind == "eval_set"}
    traces = {f.position: path for f, path in extracted if f.kind == "traces"}
    return Inputs(
        [load_eval_set(eval_sets[p]).eval_set for p in sorted(eval_sets)],
        load_traces(traces[p] for p in sorted(traces)) if traces else None,
    )


def keep_blob(db: sqlite3.Connection, digest: str, size: int, packed: Path) -> None:
    """Keep a file's compressed bytes (``packed``) once: in one row when at most :data:`PART`
    bytes, else in parts (the row's own bytes then empty), read from disk a part at a time."""
    if db.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone():
        return
    if packed.stat().st_size <= PART:
        db.execute("INSERT INTO blobs VALUES (?, ?, ?)", (digest, size, packed.read_bytes()))
        return
    db.execute("INSERT INTO blobs VALUES (?, ?, ?)", (digest, size, b""))
    for number, part in enumerate(parts(packed)):
        db.execute("INSERT OR REPLACE INTO blob_parts VALUES (?, ?, ?)", (digest, number, part))
