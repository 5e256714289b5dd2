"""Console tables laid out for a width without breaking a word or cutting an id.

rich squeezes a table that is too wide by narrowing its widest columns, whatever they hold, and
then folds words (a metric's name, a run id) across lines. Here each column says whether it may
wrap between words (free text, figures with spaces in them) or must stay on one line (an id, a
name); :func:`fit` gives each column a width no narrower than its longest word (its longest
line, for a column that does not wrap), narrowing the widest wrapping columns first, or says
that the table cannot fit, so that the caller can lay it out another way (fewer columns, or
figures stacked in one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.table import Table

Justify = Literal["left", "right", "center"]


@dataclass(frozen=True)
class Column:
    """A column to lay out: its heading and its cells as plain text (the text shown, without
    markup), whether they may wrap between words, and how they are aligned."""

    header: str
    cells: Sequence[str]
    wrap: bool = True
    justify: Justify = "left"

    def widest(self) -> int:
        """The longest line of the heading or a cell."""
        return max(cell_len(line) for text in (self.header, *self.cells) for line in _lines(text))

    def least(self) -> int:
        """The narrowest width that breaks no word (no line, when the column does not wrap)."""
        if not self.wrap:
            return self.widest()
        return max(
            (cell_len(word) for text in (self.header, *self.cells) for word in text.split()),
            default=1,
        )


def _lines(text: str) -> list[str]:
    return text.split("\n") or [""]


def frame(columns: int) -> int:
    """Characters a rich table with the default box and padding adds to its cells' widths."""
    return 3 * columns + 1


def fit(columns: Sequence[Column], width: int) -> list[int] | None:
    """Each column's width for a table at most ``width`` characters wide, or None when even the
    narrowest widths that break no word are too wide."""
    room = width - frame(len(columns))
    least = [column.least() for column in columns]
    if sum(least) > room:
        return None
    widths = [max(column.widest(), 1) for column in columns]
    excess = sum(widths) - room
    while excess > 0:
        index = max(
            (i for i in range(len(widths)) if widths[i] > least[i]), key=lambda i: widths[i]
        )
        widths[index] -= 1
        excess -= 1
    return widths


def fitted_table(
    columns: Sequence[Column], widths: Sequence[int], *, title: str | None = None
) -> Table:
    """An empty rich table with ``columns`` at ``widths`` (from :func:`fit`): rows are added by
    the caller, with the markup the plain cells were measured without."""
    table = Table(title=title, title_justify="left")
    for column, width in zip(columns, widths, strict=True):
        table.add_column(
            column.header,
            justify=column.justify,
            width=width,
            no_wrap=not column.wrap,
            overflow="fold",
        )
    return table
