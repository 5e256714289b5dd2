"""What every command shares: the exit codes, and the console it prints on.

Exit codes: 0 every case passed, 1 a case failed or a configured metric was not evaluated,
2 a usage or input error (bad file, unknown metric, missing trace file), 3 an internal error.

:mod:`assay.cli.main` imports this module whatever the command, even for ``assay --help``, so
rich is imported only when a console is made.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

UNSEEN_WIDTH = 140
"""Columns for output that no terminal shows (a CI log, a file) when $COLUMNS is not set."""

_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)(?=\n)")


class _Trimmed:
    """A text stream that writes every line without the spaces rich pads it with (a table's
    title padded to the table's width, a wrapped line's last space), for output that no
    terminal shows: a file or a pipe gets the text, not a screen's worth of blanks."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(_TRAILING.sub(r"\1", text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"


def terminal_width() -> int | None:
    """The width of the terminal this process runs in, when stdout is redirected but the
    terminal is still there (``assay eval ... | tee run.log``): stderr's or stdin's; None when
    there is none."""
    for stream in (sys.stderr, sys.stdin):
        try:
            if stream is not None and stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            continue
    return None


def output_width() -> int:
    """Columns for output that is not a terminal: $COLUMNS, else the terminal's still around
    (:func:`terminal_width`), else :data:`UNSEEN_WIDTH`."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return terminal_width() or UNSEEN_WIDTH


def make_console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): a terminal is laid out at its own width; other output
    (a pipe, a file, a CI log) at :func:`output_width`, its lines not padded with spaces."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, highlight=False)
    return Console(file=_Trimmed(stream), width=output_width(), highlight=False)  # type: ignore[arg-type]
