"""What every command shares: the exit codes, and the console it prints on.

Exit codes: 0 every case passed, 1 a case failed or a configured metric was not evaluated,
2 a usage or input error (bad file, unknown metric, missing trace file), 3 an internal error.

:mod:`assay.cli.main` imports this module whatever the command, even for ``assay --help``, so
rich is imported only when a console is made.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


def make_console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): as wide as the terminal, else $COLUMNS (default 140)."""
    from rich.console import Console

    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "140"))
    return Console(stderr=stderr, width=width, highlight=False)
