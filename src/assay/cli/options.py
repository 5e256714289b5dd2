"""Options more than one command declares.

Only click is imported here: a command's module declares its options when it is imported, which
``assay COMMAND --help`` does, so what they need must be light (see :mod:`assay.cli.lazy`).
"""

from __future__ import annotations

import click

MAX_CASES = 50
"""Cases the CLI lists per eval set before it lists only those that did not pass."""
MAX_CASES_HELP = (
    "Cases listed per eval set; a larger set gets a table per metric and only its cases that "
    "did not pass, up to this many (0: list every case)."
)

max_cases_option = click.option(
    "--max-cases",
    default=MAX_CASES,
    show_default=True,
    type=click.IntRange(min=0),
    help=MAX_CASES_HELP,
)
"""``--max-cases``, as ``eval`` and ``show`` take it."""
