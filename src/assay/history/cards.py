"""The judge cards a run history keeps: one row each in ``judge_cards`` (``assay judge agree``
measures them, :mod:`assay.agreement.cards` makes and reads them), looked up by judge model,
criterion and prompt version, the newest first.

:class:`JudgeCards` holds the SQL; it reads and writes through the
:class:`~assay.history.store.HistoryStore` that made it (its connection, lock and errors), which
hands its card methods on to it. The table is in :mod:`assay.history.schema`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

CardKey = tuple[str, str, str]
"""What a judge card is looked up by: judge model, criterion, prompt version."""

Read = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
"""Runs a query on the history, giving its rows."""
Write = Callable[[str, Sequence[Any]], None]
"""Runs one statement on the history in a transaction of its own."""


class JudgeCards:
    """The history's judge cards, each kept as its JSON."""

    def __init__(self, read: Read, write: Write) -> None:
        self._read, self._write = read, write

    def add(self, key: CardKey, created: float, card: str) -> None:
        """Keep a judge card (its JSON), measured at ``created``, under its key."""
        self._write(
            "INSERT INTO judge_cards (created, judge_model, criterion, prompt_version, card) "
            "VALUES (?, ?, ?, ?, ?)",
            (created, *key, card),
        )

    def newest(self, limit: int | None = None) -> list[str]:
        """Every judge card's JSON (the first ``limit``), newest first."""
        rows = self._read(
            "SELECT card FROM judge_cards ORDER BY created DESC, id DESC LIMIT ?",
            (-1 if limit is None else limit,),
        )
        return [str(row[0]) for row in rows]

    def find(self, key: CardKey) -> str | None:
        """The JSON of the newest judge card of this judge model, criterion and prompt
        version; None when there is none."""
        rows = self._read(
            "SELECT card FROM judge_cards WHERE judge_model = ? AND criterion = ? "
            "AND prompt_version = ? ORDER BY created DESC, id DESC LIMIT 1",
            key,
        )
        return str(rows[0][0]) if rows else None
