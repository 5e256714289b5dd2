"""``assay eval --view``: the run watched in ``assay view`` while it goes.

The view is started on 127.0.0.1 (``--view-port``, default any free port) in a thread before the
run begins. Once the run is recorded (the history has its row, written by this process), its
page's URL is printed, and opened in a browser where there is a display. After the run the view
goes on, when stdin is a terminal, until Ctrl-C (said so); otherwise it stops and the command
exits with the run's own exit code.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import click
from rich.console import Console

from assay.history.records import default_history_path
from assay.runner.run import RunHooks, Watch
from assay.runner.sets import CaseCallback

if TYPE_CHECKING:
    from assay.view.server import ViewServer


class EvalView:
    """The view one ``assay eval`` run is watched in (``server`` None: not asked for)."""

    def __init__(self, console: Console, history: Path, server: ViewServer | None) -> None:
        self.console = console
        self.history = history
        self.server = server
        self.run_id: str | None = None

    @property
    def base(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    def hooks(self, hooks: RunHooks) -> RunHooks:
        """``hooks`` whose ``watch`` (entered once the run is recorded, before its first case)
        says where to watch it."""
        if self.server is None:
            return hooks
        return replace(hooks, watch=self._watch(hooks.watch))

    def _watch(self, inner: Watch | None) -> Watch:
        @contextlib.contextmanager
        def watch(cases: int, on_case: CaseCallback | None) -> Iterator[CaseCallback | None]:
            self._announce(cases)
            if inner is None:
                yield on_case
                return
            with inner(cases, on_case) as shown:
                yield shown

        return watch

    def _announce(self, cases: int) -> None:
        """The run's page printed (and opened), its size told to the view."""
        from assay.view.pages.live import expect_cases

        assert self.server is not None
        found = _running_run(self.history)
        if found is None:
            url = f"{self.base}/"
            self.console.print(f"assay view (this run is not recorded): {url}", markup=False)
        else:
            self.run_id, recorded = found
            expect_cases(self.server.app, self.run_id, cases + recorded)
            url = f"{self.base}/runs/{quote(self.run_id, safe='')}"
            self.console.print(f"watch this run live: {url}", markup=False, soft_wrap=True)
        if _has_display():
            import webbrowser  # here: a run without --view does not pay for it

            with contextlib.suppress(Exception):  # a browser that cannot start is no error
                webbrowser.open(url)

    def serve_on(self) -> None:
        """After the run: go on serving until Ctrl-C when a person is at the terminal."""
        if self.server is None or not sys.stdin.isatty():
            return
        where = f"{self.base}/runs/{quote(self.run_id, safe='')}" if self.run_id else self.base
        self.console.print(
            f"the view goes on at {where}; press Ctrl-C to stop it", markup=False, soft_wrap=True
        )
        _ctrl_c_stops()
        with contextlib.suppress(KeyboardInterrupt):
            while self.server.thread.is_alive():
                time.sleep(0.2)

    def stop(self) -> None:
        if self.server is not None:
            from assay.view.pages.live import POLL_S, close_streams

            close_streams(self.server.app, grace_s=2 * POLL_S)  # watchers see the end
            self.server.stop()


def _ctrl_c_stops() -> None:
    """Ctrl-C stops the view, as said, even when this process was started with SIGINT ignored
    or blocked (as a background job, or by a tool): it raises KeyboardInterrupt here."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def viewing(params: dict[str, Any], console: Console) -> Iterator[EvalView]:
    """The view ``--view`` asks for around the run (a usage error with ``--no-history``, or
    without the ``view`` extra; exit 2 when it cannot listen); after it, kept serving as
    :meth:`EvalView.serve_on` says, then stopped. The run's exit stands."""
    history = Path(params["history_file"]) if params["history_file"] else default_history_path()
    if not params["view"]:
        yield EvalView(console, history, None)
        return
    if not params["history"]:
        raise click.BadParameter("cannot be used with --no-history", param_hint="'--view'")
    view = EvalView(console, history, _started(history, params["view_port"]))
    try:
        yield view
    except SystemExit:
        view.serve_on()
        raise
    finally:
        view.stop()


def _started(history: Path, port: int) -> ViewServer:
    try:
        from assay.view import ViewServer, ViewSettings
    except ImportError as exc:
        raise click.UsageError(
            f"--view needs the view's packages ({exc.name} is missing): pip install 'assay[view]'"
        ) from None
    settings = ViewSettings(history, labeller=_user())
    try:
        return ViewServer(settings, "127.0.0.1", port).start()
    except OSError as exc:
        raise click.UsageError(f"--view cannot listen on 127.0.0.1:{port}: {exc}") from None


def _running_run(history: Path) -> tuple[str, int] | None:
    """The run this process is recording (its id, and the cases it has already: a resumed
    run's), or None when it records none."""
    if not history.exists():
        return None
    try:
        with contextlib.closing(
            sqlite3.connect(f"file:{history}?mode=ro", uri=True, timeout=5)
        ) as db:
            found = db.execute(
                "SELECT r.id, (SELECT COUNT(*) FROM case_results c WHERE c.run_id = r.id) "
                "FROM runs r WHERE r.status = 'running' AND r.pid = ? AND r.host = ? "
                "ORDER BY r.started DESC LIMIT 1",
                (os.getpid(), socket.gethostname()),
            ).fetchone()
    except sqlite3.Error:
        return None
    return (str(found[0]), int(found[1])) if found else None


def _has_display() -> bool:
    """Whether a browser could be shown: a desktop session, or macOS or Windows."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "someone"
