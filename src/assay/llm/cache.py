"""A response cache on disk, so a rerun asks the judge only what it has not asked before.

One SQLite file (WAL mode, so several runs can share it) maps a key (the sha256 the client
computes from the backend, the model, the request and the sample index) to the response: its
text, the model that answered, the usage it cost then, and the raw body. Only successful responses
are stored.

The cache never stops a run. A file that cannot be created, opened or read (a read-only folder, a
file that is not a database) is reported once as a warning, and the cache then behaves as if it
were disabled: every ``get`` misses and every ``put`` is dropped.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from pydantic import TypeAdapter, ValidationError

from assay.llm.base import Choice, LlmResponse, TokenUsage

logger = logging.getLogger(__name__)

CACHE_FILE = "cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    response_model TEXT NOT NULL,
    text TEXT NOT NULL,
    usage TEXT NOT NULL,
    raw TEXT,
    created REAL NOT NULL,
    choices TEXT
)
"""
_CHOICES = TypeAdapter(list[Choice])
_CHOICES_COLUMN = "ALTER TABLE responses ADD COLUMN choices TEXT"
"""Files made before responses kept their choices' probabilities gain the column; their rows
read back without choices."""


class ResponseCache:
    """LLM responses by key, in a SQLite file created (with its folder) on first use.

    Safe to call from the event loop and from several threads: each operation is one small
    statement under a lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._disabled = False

    @staticmethod
    def default_path(env: Mapping[str, str] | None = None) -> Path:
        """``$ASSAY_CACHE_DIR/cache.sqlite``, else ``.assay/cache.sqlite`` in the current folder."""
        source = os.environ if env is None else env
        folder = source.get("ASSAY_CACHE_DIR")
        base = Path(folder) if folder else Path.cwd() / ".assay"
        return base / CACHE_FILE

    @property
    def disabled(self) -> bool:
        """True once the file proved unusable; the cache then neither finds nor stores anything."""
        return self._disabled

    def get(self, key: str) -> LlmResponse | None:
        """The stored response for ``key``, or None (not stored, unreadable, or cache disabled)."""
        with self._lock:
            db = self._connection()
            if db is None:
                return None
            try:
                row = db.execute(
                    "SELECT response_model, text, usage, raw, choices FROM responses WHERE key = ?",
                    (key,),
                ).fetchone()
            except sqlite3.Error as exc:
                self._disable(exc)
                return None
        return None if row is None else _response_from_row(row)

    def put(self, key: str, response: LlmResponse, *, backend: str, model: str) -> None:
        """Store ``response`` under ``key``, replacing what was there; ``backend`` and ``model``
        are kept alongside for whoever inspects the file."""
        values = (
            key,
            backend,
            model,
            response.model,
            response.text,
            response.usage.model_dump_json(),
            None
            if response.raw is None
            else json.dumps(response.raw, ensure_ascii=False, default=str),
            time.time(),
            json.dumps([c.model_dump() for c in response.choices]) if response.choices else None,
        )
        with self._lock:
            db = self._connection()
            if db is None:
                return
            try:
                db.execute(
                    "INSERT OR REPLACE INTO responses"
                    " (key, backend, model, response_model, text, usage, raw, created, choices)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
            except sqlite3.Error as exc:
                self._disable(exc)

    def close(self) -> None:
        """Close the file. A later ``get`` or ``put`` opens it again."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection | None:
        """The open connection, opening it on first use; None when the cache is disabled."""
        if self._disabled:
            return None
        if self._db is None:
            try:
                self._db = _open(self.path)
            except (OSError, sqlite3.Error) as exc:
                self._disable(exc)
        return self._db

    def _disable(self, error: Exception) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if not self._disabled:
            self._disabled = True
            logger.warning(
                "response cache %s cannot be used (%s); going on without a cache",
                self.path,
                error,
            )


def _open(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=10.0, check_same_thread=False, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(responses)")}
        if "choices" not in columns:
            db.execute(_CHOICES_COLUMN)
    except sqlite3.Error:
        db.close()
        raise
    return db


def _response_from_row(
    row: tuple[str, str, str, str | None, str | None],
) -> LlmResponse | None:
    """A stored row as a response; None if the row cannot be read back (treated as a miss)."""
    response_model, text, usage, raw, choices = row
    try:
        return LlmResponse(
            text=text,
            model=response_model,
            usage=TokenUsage.model_validate_json(usage),
            raw=None if raw is None else json.loads(raw),
            choices=tuple(_CHOICES.validate_json(choices)) if choices else (),
        )
    except (ValueError, ValidationError):
        return None
