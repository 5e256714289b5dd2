"""ADK's own results in the history: ``.adk/eval_history/*.evalset_result.json`` become runs.

Each file becomes one finished run (source ``adk``) started at the result's
``creation_timestamp``. The file's sha256 is its config hash, so importing the same file again
finds the run made the first time instead of adding another. A case listed again in one file is
its next run (ADK's ``num_runs``), as :mod:`assay.results.traces` reads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from assay.errors import InputError, Problem
from assay.history.sources import read_results_file
from assay.history.store import HistoryStore
from assay.results.model import EvalCaseResult, EvalSetResult

RESULT_SUFFIX = ".evalset_result.json"


@dataclass(frozen=True)
class Imported:
    """What importing one file did: the run it is, and whether that run was already there."""

    path: Path
    run_id: str
    cases: int
    already: bool = False


def result_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files to import: each file given, and every ``*.evalset_result.json`` in each folder
    given (``.adk/eval_history``), sorted by name."""
    files: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob(f"*{RESULT_SUFFIX}"))
            if not found:
                problems.append(Problem(str(path), "", f"no *{RESULT_SUFFIX} files in this folder"))
            files += found
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem(str(path), "", "no such file or folder"))
    if problems:
        raise InputError(problems)
    return files


def _numbered(result: EvalSetResult) -> list[EvalCaseResult]:
    """The cases with their eval set id and run number filled in."""
    seen: dict[str, int] = {}
    cases = []
    for case in result.eval_case_results:
        seen[case.eval_id] = seen.get(case.eval_id, 0) + 1
        notes = case.assay.model_copy(update={"run": seen[case.eval_id]})
        cases.append(
            case.model_copy(
                update={"eval_set_id": case.eval_set_id or result.eval_set_id, "assay": notes}
            )
        )
    return cases


def _judge_models(results: Iterable[EvalSetResult]) -> list[str]:
    """Judge models named in the metrics' criteria (``judge_model_options.judge_model``)."""
    models = set()
    for result in results:
        for case in result.eval_case_results:
            for row in case.overall_eval_metric_results:
                options = (row.criterion or {}).get("judge_model_options") or {}
                model = options.get("judge_model") if isinstance(options, dict) else None
                if isinstance(model, str) and model:
                    models.add(model)
    return sorted(models)


def import_file(store: HistoryStore, path: Path) -> Imported:
    """Import one results file as a finished run (or find the run an earlier import made)."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError([Problem(str(path), "", exc.strerror or str(exc))]) from None
    results = read_results_file(path)
    earlier = store.find_import(digest)
    if earlier is not None:
        return Imported(path, earlier, sum(len(r.eval_case_results) for r in results), True)
    for result in results:
        result.eval_case_results = _numbered(result)
    started = min((r.creation_timestamp for r in results if r.creation_timestamp), default=None)
    run_id = store.start_run(
        [r.eval_set_id for r in results],
        {"imported_from": str(path), "sha256": digest},
        judges=_judge_models(results),
        source="adk",
        started=started,
        config_digest=digest,
    )
    for result in results:
        for case in result.eval_case_results:
            store.record_case(run_id, case)
    store.finish_run(run_id, results, finished=started)
    return Imported(path, run_id, sum(len(r.eval_case_results) for r in results))


def import_files(store: HistoryStore, paths: Iterable[str | Path]) -> list[Imported]:
    """Import every results file ``paths`` names (files, or folders of them)."""
    return [import_file(store, path) for path in result_files(paths)]
