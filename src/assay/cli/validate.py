"""``assay validate FILE...``: check eval sets, EvalConfig files and labels files without scoring
anything."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from assay.cli.output import make_console

if TYPE_CHECKING:  # imported where used: `assay validate --help` imports none of them
    from rich.console import Console


@click.command("validate")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def validate_command(files: tuple[str, ...]) -> None:
    """Check eval sets and EvalConfig files, reporting every problem found."""
    from rich.markup import escape

    from assay.config import read_config
    from assay.errors import InputError
    from assay.evalset.io import load_eval_set

    console = make_console()
    problems = []
    for file in files:
        path = Path(file)
        try:
            if _looks_like_labels(path):
                from assay.agreement.labels import load_labels  # its eval set, traces, metrics

                run = load_labels(path)
                criteria = sorted({label.criterion for label in run.labels})
                console.print(
                    f"[green]ok[/] {escape(file)}: {len(run.labels)} label(s) on "
                    f"{escape(str(run.loaded.path))} ({escape(', '.join(criteria))})"
                )
                for note in run.warnings:
                    console.print(f"  [yellow]warning:[/] {escape(note)}")
            elif _looks_like_session(path) or _looks_like_traces(path):
                _validate_other(console, path)
            elif _looks_like_config(path):
                config = read_config(path)
                console.print(
                    f"[green]ok[/] {escape(file)}: config with {len(config.criteria)} criteria ({escape(', '.join(config.criteria))})"
                )
                for warning in config.warnings:
                    console.print(f"  [yellow]warning:[/] {escape(str(warning))}")
            else:
                loaded = load_eval_set(path)
                cases = loaded.eval_set.eval_cases
                invocations = sum(len(c.conversation or []) for c in cases)
                console.print(
                    f"[green]ok[/] {escape(file)}: eval set '{escape(loaded.eval_set.eval_set_id)}' "
                    f"({loaded.format}), {len(cases)} case(s), {invocations} invocation(s)"
                )
                for warning in loaded.warnings:
                    console.print(f"  [yellow]warning:[/] {escape(str(warning))}")
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)


def _head(path: Path) -> str:
    """The start of a JSON or YAML file's text ("" for another kind, or one that cannot be read):
    enough to tell a config or a labels file from an eval set."""
    if path.suffix.lower() not in {".json", ".yaml", ".yml"}:
        return ""
    try:
        return path.read_text(encoding="utf-8")[:4096]
    except OSError:
        return ""


def _looks_like_labels(path: Path) -> bool:
    """A labels file (``assay judge agree``): top-level ``labels`` and ``traces`` keys."""
    head = _head(path)
    return all(f'"{key}"' in head or f"\n{key}:" in f"\n{head}" for key in ("labels", "traces"))


def _looks_like_session(path: Path) -> bool:
    """ADK's ``initial.session.json`` (by name, or an object with app_name, user_id and
    state)."""
    from assay.evalset.io import INITIAL_SESSION_FILE

    if path.name == INITIAL_SESSION_FILE:
        return True
    head = _head(path)
    keys = ('"app_name"', '"user_id"', '"state"')
    return all(key in head for key in keys) and '"eval_cases"' not in head


_TRACES_START = re.compile(r'\s*\{\s*"[^"]*"\s*:\s*\[\s*\{')
_INVOCATION_KEYS = ('"invocation_id"', '"invocationId"', '"user_content"', '"userContent"')


def _looks_like_traces(path: Path) -> bool:
    """What ``--traces`` reads: ``{eval_id: [Invocation, ...]}`` or an ADK eval set result."""
    head = _head(path).lstrip("\ufeff")
    if '"eval_case_results"' in head or '"evalCaseResults"' in head:
        return True
    return bool(_TRACES_START.match(head)) and any(key in head for key in _INVOCATION_KEYS)


def _validate_other(console: Console, path: Path) -> None:
    """An ``initial.session.json`` or a traces file, checked and said for what it is."""
    from rich.markup import escape

    from assay.evalset.io import read_initial_session

    file = escape(str(path))
    if _looks_like_session(path):
        session, warnings = read_initial_session(path)
        state = len(session.state) if session else 0
        console.print(
            f"[green]ok[/] {file}: ADK's initial session (app_name, user_id, {state} state "
            "key(s)), not an eval set: it is read automatically with the legacy .test.json "
            "files in its folder"
        )
        for warning in warnings:
            console.print(f"  [yellow]warning:[/] {escape(str(warning))}")
        return
    from assay.results.trace_coverage import recorded_keys
    from assay.results.traces import load_traces

    cases = len(recorded_keys(load_traces([path])))
    console.print(
        f"[green]ok[/] {file}: traces of {cases} case(s), not an eval set: pass it as "
        "--traces FILE with the eval set it records"
    )


def _looks_like_config(path: Path) -> bool:
    if path.name in {"test_config.json", "eval_config.json"} or path.name.endswith(".config.json"):
        return True
    head = _head(path)
    return '"criteria"' in head or head.lstrip().startswith("criteria:")
