"""``assay traces``: OpenTelemetry span files made into ADK traces or a draft eval set."""

from __future__ import annotations

import os
from pathlib import Path

import click

from assay.cli.output import make_console


@click.group("traces")
def traces_command() -> None:
    """Read OpenTelemetry span files (OTLP JSON or protobuf, Jaeger JSON; gzipped or not) into
    sessions: write them as ADK traces (convert) or as a draft eval set (to-evalset)."""


_SPANS = click.argument(
    "spans", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path)
)
_KEY = click.option(
    "--trace-case-key",
    "case_key",
    default=None,
    metavar="ATTR",
    help="The root-span attribute that names a session's case (default: gen_ai.conversation.id; "
    "else the session id).",
)


def _report(sessions: list[tuple[str, str | None, list[str]]]) -> None:
    from rich.markup import escape

    console = make_console(stderr=True)
    for key, problem, notes in sessions:
        if problem is not None:
            console.print(f"[yellow]warning:[/] session {escape(key)}: {escape(problem)}")
        for note in dict.fromkeys(notes):
            console.print(f"[dim]note:[/] session {escape(key)}: {escape(note)}")


@traces_command.command("convert")
@_SPANS
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Traces file."
)
@_KEY
def convert_command(spans: tuple[Path, ...], out: Path, case_key: str | None) -> None:
    """Write the sessions of SPANS as ADK invocations ({session: [Invocation, ...]}), the
    traces file ``assay eval --traces`` reads."""
    from assay.traces import load_sessions
    from assay.traces.parallel import built_sessions, write_built

    workers = min(os.cpu_count() or 1, 8)
    stream = load_sessions(spans, strict=True, workers=workers)
    count, said = write_built(built_sessions(stream, case_key, workers), out)
    _report([(key, problem, notes) for key, _, problem, notes in said])
    make_console().print(f"wrote {count} session(s) to {out}")


@traces_command.command("to-evalset")
@_SPANS
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draft eval set file (.json, .yaml or .jsonl).",
)
@click.option("--eval-set-id", default=None, help="The eval set id (default: the file's name).")
@_KEY
def to_evalset_command(
    spans: tuple[Path, ...], out: Path, eval_set_id: str | None, case_key: str | None
) -> None:
    """Turn the sessions of SPANS into a draft eval set whose expected turns are what
    happened, for a person to review and keep as regression tests."""
    from assay.errors import Problem, TracesError
    from assay.evalset.io import write_eval_set
    from assay.traces import draft_evalset, load_sessions, session_key

    sessions = list(load_sessions(spans, strict=True))
    _report([(session_key(s, case_key), s.problem, s.notes) for s in sessions])
    set_id = eval_set_id or out.name.split(".", 1)[0] or "draft"
    eval_set = draft_evalset(sessions, set_id, case_key)
    if not eval_set.eval_cases:
        files = ", ".join(str(p) for p in spans)
        why = "no session could be drafted" + (
            ": every one has a problem or no message content (see the warnings and notes)"
            if sessions
            else ": no spans of agents"
        )
        raise TracesError([Problem(files, "", why)])
    write_eval_set(eval_set, out)
    skipped = len(sessions) - len(eval_set.eval_cases)
    extra = f" ({skipped} session(s) left out: see the warnings and notes)" if skipped else ""
    make_console().print(f"wrote {len(eval_set.eval_cases)} case(s) to {out}{extra}")
