"""How a run records itself in the history, and resumes one.

``assay eval`` records every run (:mod:`assay.history.store`) unless ``--no-history``;
:func:`~assay.runner.evaluate.evaluate`, :func:`~assay.testing.evaluate_agent` and the pytest
plugin record theirs when asked (``history=``). A
:class:`Recording` encodes each case result as it finishes (:mod:`assay.history.compact`) and
hands it to the history's writer thread (:mod:`assay.history.writer`), which also keeps the
run's input files and, at the end, the run's headers. Resuming a run (``--resume RUN``) checks that the eval
sets, config, inputs and judge are the ones the run was recorded with (their hash), and gives the
evaluation the case results that run already has, so those cases are neither run through the
agent nor judged again.

Nothing here prints: what the user should hear (a run that cannot be recorded, a resumed run's
kept cases) is handed to the ``warn`` and ``note`` functions the caller gives (by default a
:class:`RecordingWarning`, and nothing).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.config import check_config
from assay.errors import ConfigError, Problem, format_path
from assay.history.compact import CaseEncoder, Inputs
from assay.history.inputs import InputFile, digests, input_files, pack, read_inputs
from assay.history.records import (
    HistoryError,
    case_row,
    config_hash,
    default_history_path,
    git_commit,
)
from assay.history.store import CaseKey, HistoryStore
from assay.history.stored import KeptCases
from assay.history.writer import HistoryWriter
from assay.results.captured import Captures
from assay.results.model import EvalCaseResult, EvalSetResult
from assay.results.traces import Traces
from assay.runner.sets import EvalSetJob

Notice = Callable[[str], None]
"""Where a message for the user goes (the CLI prints it; the Python API warns)."""


class RecordingWarning(UserWarning):
    """The run history could not be written: the run goes on, not (or no longer) recorded."""


def warn_of(message: str) -> None:
    """The default ``warn``: a :class:`RecordingWarning`."""
    warnings.warn(message, RecordingWarning, stacklevel=3)


def _ignore(_message: str) -> None:
    """The default ``note``: nothing said."""


@dataclass(frozen=True)
class RunSpec:
    """What a run reads and how it is configured, as the history records it.

    ``settings(digests)`` is the run's config (:func:`run_config`) given its input files'
    sha256 by path (None while they are not hashed yet).
    """

    eval_sets: Sequence[str]
    files: Sequence[InputFile]
    inputs: Inputs
    settings: Callable[[Mapping[str, str] | None], dict[str, Any]]


def run_spec(
    jobs: Sequence[EvalSetJob],
    traces: Traces | None,
    *,
    traces_paths: Sequence[str] = (),
    agent: str | None = None,
    num_runs: int = 1,
    mock_tools: bool = False,
    judge_model: str | None = None,
) -> RunSpec:
    """The :class:`RunSpec` of a run (``agent`` is the agent's spec, or what names it)."""
    files = input_files(
        [(str(job.loaded.path), job.loaded.format) for job in jobs],
        () if agent else traces_paths,
    )

    def settings(found: Mapping[str, str] | None) -> dict[str, Any]:
        return run_config(
            jobs,
            traces=traces_paths,
            agent=agent,
            num_runs=num_runs,
            mock_tools=mock_tools,
            judge_model=judge_model,
            digests=found,
        )

    inputs = Inputs([job.loaded.eval_set for job in jobs], None if agent else traces)
    return RunSpec([str(job.loaded.path) for job in jobs], files, inputs, settings)


_UNRECORDABLE = "run with --no-history to evaluate it without recording"


def unrecordable(jobs: Sequence[EvalSetJob]) -> list[Problem]:
    """Why a run of ``jobs`` cannot be recorded: the history keys a run's cases by eval set id,
    eval id and run number, so two cases that share the first two would be stored as one (and
    a resumed run would give the second the first's result)."""
    problems: list[Problem] = []
    sets: dict[str, str] = {}
    for job in jobs:
        eval_set, file = job.loaded.eval_set, str(job.loaded.path)
        other = sets.get(eval_set.eval_set_id)
        if other is None:
            sets[eval_set.eval_set_id] = file
        else:  # another eval set, or the same file given twice
            problems.append(
                Problem(
                    file,
                    "eval_set_id" if job.loaded.format == "evalset" else "",
                    f"eval set id '{eval_set.eval_set_id}' is also that of {other}: the run "
                    "history keys cases by eval set id and eval id, so their cases would be "
                    f"stored as one; give each eval set its own id, or {_UNRECORDABLE}",
                )
            )
        for path, eval_id, seen in _repeated_ids(job):
            problems.append(
                Problem(
                    file,
                    path,
                    f"eval_id '{eval_id}' repeats eval_cases[{seen}]: the run history "
                    "keys cases by eval id, so the two would be stored as one; give each "
                    f"case its own eval_id, or {_UNRECORDABLE}",
                )
            )
    return problems


_DUPLICATE = re.compile(
    r"^duplicate eval_id '(?P<id>.*)' \(first at eval_cases\[(?P<at>[0-9]+)\]\)"
)


def _repeated_ids(job: EvalSetJob) -> list[tuple[str, str, int]]:
    """Each case whose eval_id an earlier case has: its JSON path, the id and where it was
    first. A streamed eval set's were found as it was read (its duplicate warnings): going over
    its cases again would parse every one."""
    if job.loaded.streamed:
        return [
            (warning.path, found["id"], int(found["at"]))
            for warning in job.loaded.warnings
            if (found := _DUPLICATE.match(warning.message))
        ]
    repeated = []
    first: dict[str, int] = {}
    for index, case in enumerate(job.loaded.eval_set.eval_cases):
        seen = first.setdefault(case.eval_id, index)
        if seen != index:
            repeated.append((format_path(["eval_cases", index, "eval_id"]), case.eval_id, seen))
    return repeated


def run_config(
    jobs: Sequence[EvalSetJob],
    *,
    traces: Sequence[str] = (),
    agent: str | None = None,
    num_runs: int = 1,
    mock_tools: bool = False,
    judge_model: str | None = None,
    env: Mapping[str, str] | None = None,
    digests: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What decides a run's results, as recorded in the history and hashed for ``--resume``:
    each eval set (path, id, the sha256 of its file, criteria), the traces (sha256 each) or the
    agent, and the judge model override. ``digests`` gives the files' sha256 by path."""
    source = os.environ if env is None else env
    found = digests or {}
    sets = [
        {
            "path": str(job.loaded.path),
            "eval_set_id": job.loaded.eval_set.eval_set_id,
            "sha256": found.get(str(job.loaded.path)),
            "config_source": job.config_source,
            "criteria": job.config.criteria_as_written(),
        }
        for job in jobs
    ]
    inputs: dict[str, Any] = (
        {"agent": agent, "num_runs": num_runs, "mock_tools": mock_tools}
        if agent
        else {"traces": [{"path": p, "sha256": found.get(p)} for p in traces]}
    )
    return {
        "sets": sets,
        "inputs": inputs,
        "judge_model": judge_model or source.get("ASSAY_JUDGE_MODEL") or None,
    }


def _expanded_criteria(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with each criterion written in full, as runs recorded before bare thresholds
    were kept as numbers wrote them (so those runs can still be resumed)."""
    sets = []
    for entry in config.get("sets", []):
        try:
            parsed = check_config({"criteria": entry.get("criteria", {})})
        except ConfigError:
            return dict(config)
        criteria = {k: v.model_dump(mode="json") for k, v in parsed.criteria.items()}
        sets.append({**entry, "criteria": criteria})
    return {**config, "sets": sets}


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
    """One run being written to the history (with no writer: not recorded)."""

    writer: HistoryWriter | None = None
    encoder: CaseEncoder = field(default_factory=CaseEncoder)
    done: Mapping[CaseKey, EvalCaseResult] = field(default_factory=dict)
    broken: str | None = None
    captures: Captures | None = None
    """Where scoring leaves each case's rows for the encoder (None when not recording)."""
    warn: Notice = warn_of
    """Told once when the history stops taking the run's cases."""

    def __post_init__(self) -> None:
        if self.writer is not None and self.captures is None:
            self.captures = {}

    @property
    def run(self) -> str:
        """The run's id ('' when not recorded)."""
        return self.writer.run_id if self.writer is not None else ""

    @property
    def recorded(self) -> bool:
        """Whether the run is (still) being recorded."""
        return self.writer is not None and self.broken is None and self.writer.error is None

    def kept(self) -> Sequence[EvalCaseResult]:
        """The case results the resumed run kept, in the order they were stored: read from the
        history as they are reached (only ``--save-traces`` goes over them again)."""
        if isinstance(self.done, KeptCases):
            return self.done.stored()
        return list(self.done.values())

    def on_case(self, _job: EvalSetJob | None, result: EvalCaseResult) -> None:
        """Hand a finished case to the writer; a failed write is reported once and stops the
        recording, never the run."""
        if self.writer is None or self.broken is not None:
            return
        if self.writer.error is not None:
            self._break(self.writer.error)
            return
        captured = self.captures.pop(id(result), None) if self.captures is not None else None
        encoded = self.encoder.encode(result, captured)
        stored = captured.stored if captured is not None else None
        output = stored.output if stored is not None else None
        self.writer.write(case_row(result, encoded.text, encoded.new_header, output))

    def finish(self, results: Sequence[EvalSetResult]) -> None:
        """Store the run's headers, mark it finished, and wait for everything to be written."""
        if self.writer is not None:
            run = self.run
            self.writer.do(lambda store: store.finish_run(run, results))
            self._close_writer()

    def interrupted(self) -> None:
        """Mark the run interrupted (it can be resumed), once what finished is written."""
        if self.writer is not None:
            run = self.run
            self.writer.do(lambda store: store.mark(run, "interrupted"))
            self._close_writer()

    def close(self) -> None:
        """Wait for the writer and close the history file."""
        if self.writer is not None:
            self._close_writer()
            self.writer.store.close()

    def _close_writer(self) -> None:
        assert self.writer is not None
        self.writer.close()
        if self.writer.error is not None:
            self._break(self.writer.error)

    def _break(self, reason: str) -> None:
        if self.broken is None:
            self.broken = reason
            self.warn(f"{reason}; the rest of this run is not recorded")


def start_recording(
    spec: RunSpec,
    *,
    history_file: str | None = None,
    resume: str | None = None,
    judges: Sequence[str] = (),
    warn: Notice = warn_of,
    note: Notice = _ignore,
) -> Recording:
    """Start recording a run (or reopen the run ``resume`` names, with its finished cases).

    A history that cannot be written to is a warning for a new run (the run goes on unrecorded)
    and an error for ``--resume``. ``warn`` and ``note`` are told what the user should know.
    """
    store = HistoryStore(Path(history_file) if history_file else default_history_path())
    try:
        if resume is not None:
            return _resume(store, resume, spec, warn, note)
        run = store.start_run(
            spec.eval_sets, spec.settings(None), judges=judges, commit=git_commit()
        )
    except HistoryError as exc:
        store.close()
        if resume is not None:
            raise
        warn(f"{exc}; this run is not recorded")
        return Recording(warn=warn)
    except BaseException:
        store.close()
        raise

    def prepare() -> Callable[[HistoryStore], None]:
        """Hash and compress the input files a chunk at a time, into a temporary folder (on a
        thread: all of it lets go of the GIL), and say how to store them."""
        hashed = read_inputs(spec.files)
        folder = tempfile.TemporaryDirectory(prefix="assay-inputs-")  # removed at exit at last
        try:
            known = store.known_blobs([item.sha256 for item in hashed])
            packed = pack(hashed, Path(folder.name), known)
        except BaseException:
            folder.cleanup()
            raise
        config = spec.settings(digests(hashed))

        def store_them(history: HistoryStore) -> None:
            try:
                history.store_inputs(run, packed, config)
            finally:
                folder.cleanup()

        return store_them

    writer = HistoryWriter(store, run, prepare=prepare)
    return Recording(writer, CaseEncoder(spec.inputs), warn=warn)


def _resume(store: HistoryStore, ref: str, spec: RunSpec, warn: Notice, note: Notice) -> Recording:
    info = store.get(ref)
    if info.source != "assay":
        raise HistoryError(f"run {info.id} was imported from {info.source}; it cannot be resumed")
    if info.status == "running":
        raise HistoryError(f"run {info.id} is still running; it cannot be resumed now")
    try:
        config = spec.settings(digests(read_inputs(spec.files)))
    except OSError as exc:
        raise HistoryError(f"cannot read the run's inputs: {exc}") from None
    if info.config_hash not in (config_hash(config), config_hash(_expanded_criteria(config))):
        if info.config_hash == config_hash(spec.settings(None)):
            raise HistoryError(
                f"run {info.id} was stopped before its input files were recorded; start a new run"
            )
        why = "; ".join(_differences(info.config, config))
        raise HistoryError(
            f"run {info.id} cannot be resumed with these inputs ({why}); give the eval sets "
            "and options it was started with, or start a new run"
        )
    done = store.kept_cases(info.id, spec.inputs)  # keys indexed; texts read as needed
    headers = store.run_headers(info.id)
    if sorted(headers) != list(range(len(headers))):
        raise HistoryError(f"run {info.id}: its metric headers are incomplete; start a new run")
    store.reopen(info.id)
    note(f"resuming run {info.id}: {len(done)} case result(s) kept")
    encoder = CaseEncoder(spec.inputs, [headers[n] for n in range(len(headers))])
    return Recording(HistoryWriter(store, info.id), encoder, done, warn=warn)


@contextlib.contextmanager
def recorded(
    spec: RunSpec,
    *,
    enabled: bool,
    history_file: str | os.PathLike[str] | None = None,
    resume: str | None = None,
    warn: Notice = warn_of,
    note: Notice = _ignore,
) -> Iterator[Recording]:
    """The recording of one run (one that records nothing when not ``enabled``, or when the
    history cannot be written): marked interrupted when the run stops early, closed after it.
    A ValueError for ``resume`` without ``enabled``."""
    if resume is not None and not enabled:
        raise ValueError("a run can only be resumed from the run history")
    recording = (
        start_recording(
            spec,
            history_file=str(history_file) if history_file is not None else None,
            resume=resume,
            warn=warn,
            note=note,
        )
        if enabled
        else Recording(warn=warn)
    )
    try:
        yield recording
    except BaseException:
        recording.interrupted()
        raise
    finally:
        recording.close()
