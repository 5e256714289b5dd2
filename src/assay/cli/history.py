"""``assay runs``, ``assay show`` and ``assay import``, and how ``assay eval`` records its runs.

``assay eval`` records every run in the history (:mod:`assay.history.store`) unless
``--no-history``: a :class:`Recording` writes each case result as it finishes and the run's
headers at the end. ``--resume RUN`` checks that the eval sets, config, inputs and judge are the
ones the run was recorded with (their hash), and gives the evaluation the case results that run
already has, so those cases are neither run through the agent nor judged again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from assay.history.adk_import import import_files
from assay.history.sources import results_for
from assay.history.store import (
    CaseKey,
    HistoryError,
    HistoryStore,
    RunInfo,
    config_hash,
    default_history_path,
    git_commit,
)
from assay.report.console import print_results
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.runner.evaluate import EvalSetJob, summarize

_HISTORY_FILE_HELP = "The run history (default: $ASSAY_HISTORY, else .assay/history.sqlite)."


def _console(stderr: bool = False) -> Console:
    from assay.cli.main import _console as console

    return console(stderr)


def _file_sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def run_config(
    jobs: Sequence[EvalSetJob],
    *,
    traces: Sequence[str] = (),
    agent: str | None = None,
    num_runs: int = 1,
    mock_tools: bool = False,
    judge_model: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What decides a run's results, as recorded in the history and hashed for ``--resume``:
    each eval set (path, id, content hash, criteria), the traces (content hashes) or the agent,
    and the judge model override."""
    source = os.environ if env is None else env
    sets = [
        {
            "path": str(job.loaded.path),
            "eval_set_id": job.loaded.eval_set.eval_set_id,
            "sha256": hashlib.sha256(
                job.loaded.eval_set.model_dump_json().encode("utf-8")
            ).hexdigest(),
            "config_source": job.config_source,
            "criteria": {k: v.model_dump(mode="json") for k, v in job.config.criteria.items()},
        }
        for job in jobs
    ]
    inputs: dict[str, Any] = (
        {"agent": agent, "num_runs": num_runs, "mock_tools": mock_tools}
        if agent
        else {"traces": [{"path": p, "sha256": _file_sha256(p)} for p in traces]}
    )
    return {
        "sets": sets,
        "inputs": inputs,
        "judge_model": judge_model or source.get("ASSAY_JUDGE_MODEL") or None,
    }


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two run configs, in words."""
    found: list[str] = []
    old_sets = {s.get("path"): s for s in old.get("sets", [])}
    new_sets = {s.get("path"): s for s in new.get("sets", [])}
    if list(old_sets) != list(new_sets):
        found.append(f"eval sets {list(old_sets)} then, {list(new_sets)} now")
    for path, now in new_sets.items():
        then = old_sets.get(path)
        if then is None:
            continue
        if then.get("sha256") != now.get("sha256"):
            found.append(f"{path}: the eval set changed")
        if then.get("criteria") != now.get("criteria"):
            found.append(f"{path}: the criteria changed")
    if old.get("inputs") != new.get("inputs"):
        found.append("the traces or agent options changed")
    if old.get("judge_model") != new.get("judge_model"):
        found.append(f"judge model {old.get('judge_model')} then, {new.get('judge_model')} now")
    return found or ["the run config changed"]


@dataclass
class Recording:
    """One ``assay eval`` run being written to the history (with no store: not recorded).

    Each case result is committed in its own transaction when the runner reports it. (A writer
    thread was measured and rejected: serialising the result holds the GIL, so on a CPU-bound
    run the thread made recording cost more, not less; see ``benchmarks/bench_history.py``.)
    """

    store: HistoryStore | None = None
    run: str = ""
    done: dict[CaseKey, EvalCaseResult] = field(default_factory=dict)
    broken: str | None = None

    @property
    def recorded(self) -> bool:
        """Whether the run is (still) being recorded."""
        return self.store is not None and self.broken is None

    def on_case(self, _job: EvalSetJob, result: EvalCaseResult) -> None:
        """Write a finished case; a failed write is reported once and stops the recording,
        never the run."""
        if self.store is None or self.broken is not None:
            return
        try:
            self.store.record_case(self.run, result)
        except HistoryError as exc:
            self.broken = str(exc)
            _console(stderr=True).print(f"[yellow]warning:[/] {escape(str(exc))}")

    def finish(self, results: Sequence[EvalSetResult]) -> None:
        """Store the run's headers and mark it finished."""
        if self.store is not None and self.broken is None:
            try:
                self.store.finish_run(self.run, results)
            except HistoryError as exc:
                self.broken = str(exc)

    def interrupted(self) -> None:
        """Mark the run interrupted (it can be resumed)."""
        if self.store is not None and self.broken is None:
            with contextlib.suppress(HistoryError):
                self.store.mark(self.run, "interrupted")

    def close(self) -> None:
        """Close the history file."""
        if self.store is not None:
            self.store.close()


def start_recording(
    config: Mapping[str, Any],
    eval_sets: Sequence[str],
    *,
    history_file: str | None = None,
    resume: str | None = None,
    judges: Sequence[str] = (),
) -> Recording:
    """Start recording a run (or reopen the run ``resume`` names, with its finished cases).

    A history that cannot be written to is a warning for a new run (the run goes on unrecorded)
    and an error for ``--resume``.
    """
    store = HistoryStore(Path(history_file) if history_file else default_history_path())
    try:
        if resume is None:
            run = store.start_run(eval_sets, config, judges=judges, commit=git_commit())
            return Recording(store, run)
        return _resume(store, resume, config)
    except HistoryError as exc:
        store.close()
        if resume is not None:
            raise
        _console(stderr=True).print(
            f"[yellow]warning:[/] {escape(str(exc))}; this run is not recorded"
        )
        return Recording()
    except BaseException:
        store.close()
        raise


def _resume(store: HistoryStore, ref: str, config: Mapping[str, Any]) -> Recording:
    info = store.get(ref)
    if info.source != "assay":
        raise HistoryError(f"run {info.id} was imported from {info.source}; it cannot be resumed")
    if info.status == "running":
        raise HistoryError(f"run {info.id} is still running; it cannot be resumed now")
    if info.config_hash != config_hash(config):
        why = "; ".join(_differences(info.config, config))
        raise HistoryError(
            f"run {info.id} cannot be resumed with these inputs ({why}); give the eval sets "
            "and options it was started with, or start a new run"
        )
    done = store.case_results(info.id)
    store.reopen(info.id)
    _console().print(f"resuming run {info.id}: {len(done)} case result(s) kept")
    return Recording(store, info.id, done)


# -- commands -------------------------------------------------------------------------------


def _when(stamp: float | None) -> str:
    return "" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _runs_table(runs: Sequence[RunInfo]) -> Table:
    table = Table(title="runs", title_justify="left")
    for name in ("run", "started", "status", "eval sets", "cases", "pass rate", "judge", "tokens"):
        justify = "right" if name in {"cases", "pass rate", "tokens"} else "left"
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for run in runs:
        rate = "" if run.pass_rate is None else f"{run.pass_rate:.0%}"
        sets = ", ".join(Path(s).name for s in run.eval_sets)
        table.add_row(
            escape(run.id),
            _when(run.started),
            run.status if run.source == "assay" else f"{run.status} ({run.source})",
            escape(sets),
            str(run.cases),
            rate,
            escape(", ".join(run.judges)),
            f"{run.tokens:,}" if run.tokens else "",
        )
    return table


@click.command("runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def runs_command(limit: int, history_file: str | None) -> None:
    """List recorded runs, newest first."""
    console = _console()
    path = Path(history_file) if history_file else default_history_path()
    if not path.is_file():
        console.print(f"no runs recorded in {escape(str(path))}")
        return
    with HistoryStore(path) as store:
        runs = store.runs(limit)
    if not runs:
        console.print(f"no runs recorded in {escape(str(path))}")
        return
    console.print(_runs_table(runs))


@click.command("show")
@click.argument("run", metavar="RUN")
@click.option("--print-detailed-results", "detailed", is_flag=True, help="Per-invocation tables.")
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def show_command(run: str, detailed: bool, history_file: str | None) -> None:
    """Print a run (an id, the beginning of one, or ``latest``; or a results file) as
    ``assay eval`` printed it."""
    console = _console()
    path = Path(history_file) if history_file else default_history_path()
    results = results_for(run, path)
    if not Path(run).is_file():
        _print_run_header(console, path, run)
    cases = [case for result in results for case in result.eval_case_results]
    print_results(console, results, summarize(cases), detailed=detailed)


def _print_run_header(console: Console, path: Path, ref: str) -> None:
    with HistoryStore(path) as store:
        info = store.get(ref)
    commit = f", commit {info.git_commit[:10]}" if info.git_commit else ""
    console.print(
        f"[bold]run {escape(info.id)}[/] ({info.status}{escape(commit)}), started "
        f"{_when(info.started)}, assay {escape(info.assay_version)}, config "
        f"{info.config_hash[:12]}"
    )


@click.command("import")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--history-file", type=click.Path(dir_okay=False), help=_HISTORY_FILE_HELP)
def import_command(paths: tuple[str, ...], history_file: str | None) -> None:
    """Import ADK results (.evalset_result.json files, or folders such as .adk/eval_history)
    into the run history, one run per file."""
    console = _console()
    path = Path(history_file) if history_file else default_history_path()
    with HistoryStore(path) as store:
        for done in import_files(store, paths):
            what = "already imported as" if done.already else "imported as"
            console.print(
                f"{escape(str(done.path))}: {what} run {done.run_id} ({done.cases} case(s))"
            )


__all__ = [
    "Recording",
    "import_command",
    "recorded",
    "run_config",
    "runs_command",
    "show_command",
    "start_recording",
]


@contextlib.contextmanager
def recorded(
    config: Mapping[str, Any],
    eval_sets: Sequence[str],
    *,
    enabled: bool,
    history_file: str | None = None,
    resume: str | None = None,
) -> Iterator[Recording]:
    """The recording of one ``assay eval`` run (one that records nothing with
    ``--no-history``, or when the history cannot be written): marked interrupted when the run
    stops early, closed after it."""
    if resume is not None and not enabled:
        raise click.BadParameter("cannot be used with --no-history", param_hint="'--resume'")
    recording = (
        start_recording(config, eval_sets, history_file=history_file, resume=resume)
        if enabled
        else Recording()
    )
    try:
        yield recording
    except BaseException:
        recording.interrupted()
        raise
    finally:
        recording.close()
