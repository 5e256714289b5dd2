"""``assay receive``: a live OTLP/HTTP receiver that scores sessions as they end (docs/receive.md)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import click

from assay.cli.output import make_console


@click.command("receive")
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=4318, show_default=True, type=int, help="Port (0: any free).")
@click.option("--key", default=None, envvar="ASSAY_RECEIVE_KEY", help="Key requests must carry "
              "(Authorization: Bearer KEY or x-api-key); needed off loopback. Env: ASSAY_RECEIVE_KEY.")  # fmt: skip
@click.option("--idle-timeout", default=300.0, show_default=True, type=float,
              help="Seconds without a span after which an open session is closed.")  # fmt: skip
@click.option("--settle", default=2.0, show_default=True, type=float,
              help="Quiet seconds before a session with a session id, all its traces ended, closes.")  # fmt: skip
@click.option("--history", "history_file", default=None, type=click.Path(dir_okay=False),
              help="The run history file (default: $ASSAY_HISTORY, else beside the cache).")  # fmt: skip
@click.option("--export-verdicts", default=None, metavar="URL",
              help="Send each verdict as a gen_ai.evaluation.result event to URL/v1/logs.")  # fmt: skip
@click.option("--judge-model", default=None, help="Judge model for every criterion.")
def receive_command(
    config_path: str,
    host: str,
    port: int,
    key: str | None,
    idle_timeout: float,
    settle: float,
    history_file: str | None,
    export_verdicts: str | None,
    judge_model: str | None,
) -> None:
    """Receive OpenTelemetry spans (OTLP/HTTP, POST /v1/traces), score each session when it
    ends with the config's criteria, and record it in one long-lived run of the history."""
    from assay.errors import ConfigError
    from assay.history.records import default_history_path
    from assay.receive.buffer import Limits, SpanBuffer
    from assay.receive.scoring import LiveRun
    from assay.receive.server import Receiver, is_loopback
    from assay.runner.jobs import given_config

    console = make_console(stderr=True)
    if not key and not is_loopback(host):
        console.print(f"error: binding {host} (not loopback) needs --key or ASSAY_RECEIVE_KEY")
        sys.exit(2)
    try:
        config, _source = given_config(config_path)
    except ConfigError as exc:
        console.print(f"error: {exc}")
        sys.exit(2)
    history = Path(history_file) if history_file else default_history_path()
    history.parent.mkdir(parents=True, exist_ok=True)
    limits = Limits(idle_timeout_s=idle_timeout, settle_s=settle)
    buffer = SpanBuffer(history.with_name(history.name + ".receive"), limits)
    run = LiveRun(history, config, os.fspath(config_path), judge_model, export_verdicts,
                  warn=lambda m: console.print(f"warning: {m}", markup=False))  # fmt: skip
    receiver = Receiver(buffer, run, host, port, key or None,
                        say=lambda m: console.print(m, markup=False))  # fmt: skip
    try:
        receiver.start()
    except OSError as exc:
        console.print(f"error: cannot listen on {host}:{port}: {exc}", markup=False)
        sys.exit(2)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    console.print(f"receiving on http://{host}:{receiver.port}/v1/traces; run {run.run_id} "
                  f"in {history}", markup=False)  # fmt: skip
    stop.wait()
    receiver.stop()
    console.print(f"stopped: {run.cases} session(s) scored this time", markup=False)
