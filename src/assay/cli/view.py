"""``assay view``: the run history served as pages on this machine, with labelling (docs/view.md)."""

from __future__ import annotations

import getpass
import signal
import sys
import threading
from pathlib import Path

import click

from assay.cli.output import make_console


@click.command("view")
@click.option("--history", "history_file", default=None, type=click.Path(dir_okay=False),
              help="The run history file (default: $ASSAY_HISTORY, else beside the cache).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0: any free).")  # fmt: skip
@click.option("--key", default=None, envvar="ASSAY_VIEW_KEY", help="Key every request must carry "
              "(the printed URL sets it as a cookie); needed off loopback. Env: ASSAY_VIEW_KEY.")  # fmt: skip
@click.option("--read-only", is_flag=True, help="Serve the pages without labelling.")
@click.option("--labeller", default=None, metavar="NAME",
              help="Who labels from this view, kept with each label [default: the OS user].")  # fmt: skip
def view_command(
    history_file: str | None,
    host: str,
    port: int,
    key: str | None,
    read_only: bool,
    labeller: str | None,
) -> None:
    """Serve the run history as pages on this machine: runs, cases, comparisons, judge cards,
    and labelling of judged verdicts; a run in progress appears as its cases finish."""
    from assay.history.records import default_history_path
    from assay.view import ViewServer, ViewSettings, bind_problem

    err = make_console(stderr=True)
    problem = bind_problem(host, key)
    if problem:
        err.print(f"error: {problem}", markup=False)
        sys.exit(2)
    history = Path(history_file) if history_file else default_history_path()
    settings = ViewSettings(history, key or None, read_only, labeller or _user())
    try:
        server = ViewServer(settings, host, port).start()
    except OSError as exc:
        err.print(f"error: cannot listen on {host}:{port}: {exc}", markup=False)
        sys.exit(2)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    make_console().print(f"assay view of {history}: {server.url}", markup=False, soft_wrap=True)
    stop.wait()
    server.stop()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "someone"
