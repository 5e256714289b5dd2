"""A run's spill file: what a large run reads or makes but need not hold in memory.

Python objects cost 10-15 times the JSON they come from, so a 50,000-case run that held its
eval set, its traces and its case results as models needed several GB. Instead, a large input is
checked as it is read and each item's JSON is put into a temporary SQLite file; a case's
items are parsed when it is scored and dropped after. Case results go the same way once a run
has more than a few thousand: reports and the results file read them back in order.

One spill file serves the process (:func:`shared_spill`); it lives in the system's temporary
folder (``ASSAY_SPILL_DIR`` to choose another) and is removed when the process ends; its name
carries the process id, so that the next spill file made there removes one whose process was
killed before it could (:func:`remove_orphans`). Items are
kept by kind, key and index (an eval set's cases by their position, a case's traces by run,
a set's results in order) as UTF-8 JSON.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar, overload

T = TypeVar("T")

_BATCH = 512
"""Items read back per query while iterating."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (kind, key, idx)
) WITHOUT ROWID
"""


class Spill:
    """A temporary SQLite file of JSON items by (kind, key, index), safe to use from several
    threads (one connection behind a lock)."""

    def __init__(self, folder: Path | None = None) -> None:
        where = folder or _folder()
        remove_orphans(Path(where or tempfile.gettempdir()))
        prefix = f"{_PREFIX}{os.getpid()}-"
        handle, name = tempfile.mkstemp(prefix=prefix, suffix=".sqlite", dir=where)
        os.close(handle)
        self.path = Path(name)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(name, check_same_thread=False, isolation_level=None)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;" + _SCHEMA
        )
        self._counter = 0

    def new_key(self, prefix: str) -> str:
        """A key no other caller of this spill has had."""
        with self._lock:
            self._counter += 1
            return f"{prefix}#{self._counter}"

    def put_many(self, kind: str, items: Iterable[tuple[str, int, bytes]]) -> int:
        """Store ``(key, index, json)`` items (one replacing another at the same place); how
        many."""
        rows = list(items)
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?)",
                [(kind, key, idx, body) for key, idx, body in rows],
            )
            self._db.execute("COMMIT")
        return len(rows)

    def get(self, kind: str, key: str, idx: int) -> bytes | None:
        with self._lock:
            row = self._db.execute(
                "SELECT body FROM items WHERE kind = ? AND key = ? AND idx = ?", (kind, key, idx)
            ).fetchone()
        return None if row is None else bytes(row[0])

    def indexes(self, kind: str, key: str) -> list[int]:
        """The indexes stored under ``key``, in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT idx FROM items WHERE kind = ? AND key = ? ORDER BY idx", (kind, key)
            ).fetchall()
        return [idx for (idx,) in rows]

    def scan(self, kind: str, key: str, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        """The items under ``key`` with ``start <= index < stop``, in order, read in batches so
        that no more than a batch is held."""
        last = start - 1
        end = stop if stop is not None else 2**62
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT idx, body FROM items WHERE kind = ? AND key = ? AND idx > ? "
                    "AND idx < ? ORDER BY idx LIMIT ?",
                    (kind, key, last, end, _BATCH),
                ).fetchall()
            for idx, body in rows:
                last = idx
                yield bytes(body)
            if len(rows) < _BATCH:
                return

    def drop(self, kind: str, key: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM items WHERE kind = ? AND key = ?", (kind, key))

    def drop_prefix(self, kind: str, prefix: str) -> None:
        """Drop the items of every key that starts with ``prefix`` followed by a unit separator
        (:func:`key_under` makes such keys)."""
        low = key_under(prefix, "")
        with self._lock:
            self._db.execute(
                "DELETE FROM items WHERE kind = ? AND key >= ? AND key < ?",
                (kind, low, prefix + "\x20"),
            )

    def repeated(self, kind: str, prefix: str) -> list[tuple[str, int]]:
        """``(key, index)`` of every item whose key under ``prefix`` (:func:`key_under`) is
        stored at more than one index, by key then index: what a set of the keys seen would
        tell, without holding one in memory."""
        low, high = key_under(prefix, ""), prefix + "\x20"
        with self._lock:
            rows = self._db.execute(
                "SELECT key, idx FROM items WHERE kind = ? AND key IN (SELECT key FROM items "
                "WHERE kind = ? AND key >= ? AND key < ? GROUP BY key HAVING COUNT(*) > 1) "
                "ORDER BY key, idx",
                (kind, kind, low, high),
            ).fetchall()
        return [(str(key), int(idx)) for key, idx in rows]

    def has(self, kind: str, key: str, idx: int) -> bool:
        """Whether an item is stored at this place (its body not read)."""
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM items WHERE kind = ? AND key = ? AND idx = ?", (kind, key, idx)
            ).fetchone()
        return row is not None

    def distinct(self, kind: str, key: str) -> int:
        """How many different bodies are stored under ``key``."""
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(DISTINCT body) FROM items WHERE kind = ? AND key = ?", (kind, key)
            ).fetchone()
        return int(row[0])

    def repeats_body(self, kind: str, key: str) -> bool:
        """Whether two items under ``key`` hold the same body."""
        with self._lock:
            row = self._db.execute(
                "SELECT 1 FROM items WHERE kind = ? AND key = ? GROUP BY body "
                "HAVING COUNT(*) > 1 LIMIT 1",
                (kind, key),
            ).fetchone()
        return row is not None

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self.path.unlink(missing_ok=True)


_PREFIX = "assay-spill-"
_OWNED = re.compile(rf"^{_PREFIX}(?P<pid>[0-9]+)-.*\.sqlite$")


def remove_orphans(folder: Path) -> list[Path]:
    """Remove the spill files in ``folder`` whose process is gone (one killed before it could
    remove its own: ``kill -9``, out of memory); the paths removed."""
    removed: list[Path] = []
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return removed
    for name in names:
        owned = _OWNED.match(name)
        if owned is None or _alive(int(owned["pid"])):
            continue
        with contextlib.suppress(OSError):
            (folder / name).unlink()
            removed.append(folder / name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def key_under(prefix: str, name: str) -> str:
    """A key for ``name`` under ``prefix`` (one of :meth:`Spill.new_key`'s), so that
    :meth:`Spill.drop_prefix` drops it with the others under ``prefix``."""
    return f"{prefix}\x1f{name}"


def _folder() -> Path | None:
    chosen = os.environ.get("ASSAY_SPILL_DIR", "").strip()
    return Path(chosen) if chosen else None


_SHARED: list[Spill] = []
_SHARED_LOCK = threading.Lock()


def shared_spill() -> Spill:
    """The process's spill file, made on first use and removed at exit."""
    with _SHARED_LOCK:
        if not _SHARED:
            spill = Spill()
            _SHARED.append(spill)
            atexit.register(spill.close)
        return _SHARED[0]


class SpilledSequence(Sequence[T]):
    """``count`` items stored under one key at indexes 0..count-1, parsed on access; nothing is
    held but the key."""

    def __init__(
        self, spill: Spill, kind: str, key: str, count: int, parse: Callable[[bytes], T]
    ) -> None:
        self._spill, self._kind, self._key = spill, kind, key
        self._count, self._parse = count, parse

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if step == 1:
                return [
                    self._parse(b) for b in self._spill.scan(self._kind, self._key, start, stop)
                ]
            return [self[i] for i in range(start, stop, step)]
        position = index + self._count if index < 0 else index
        if not 0 <= position < self._count:
            raise IndexError(index)
        body = self._spill.get(self._kind, self._key, position)
        if body is None:
            raise IndexError(index)
        return self._parse(body)

    def __iter__(self) -> Iterator[T]:
        return map(self._parse, self._spill.scan(self._kind, self._key, 0, self._count))

    def bodies(self) -> Iterator[bytes]:
        """Each item as it is stored, not parsed, in order."""
        return self._spill.scan(self._kind, self._key, 0, self._count)

    def __bool__(self) -> bool:
        return self._count > 0

    def __eq__(self, other: object) -> bool:
        """Equal to a list, or another spilled sequence, of equal items in the same order (as a
        list is): a model holding one compares as it would holding the list."""
        if not isinstance(other, list | SpilledSequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compared by value, as a list

    def __reduce__(self) -> tuple[type[list[T]], tuple[list[T]]]:
        """Pickled (and deep-copied) as the list of its items: the spill file is the process's."""
        return list, (list(self),)

    def __repr__(self) -> str:
        return f"<{self._count} spilled {self._kind} items>"
