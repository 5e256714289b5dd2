"""Where a finished run's results come from: a results file, or a run id in the history.

``assay report``, ``assay show`` and ``assay compare`` take either (``latest`` is the newest run); :func:`results_for` reads
both. A results file is what ``assay eval --output`` writes (one ``EvalSetResult`` object, or a
list for several eval sets) or ADK's ``.evalset_result.json`` (including the legacy
double-encoded form).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from assay._internal.collector import collections_paused
from assay._internal.json_stream import (
    EXACT_LIMIT,
    JsonError,
    NotStreamable,
    should_stream,
    syntax_problem,
)
from assay.errors import InputError, Problem, problems_from_validation
from assay.results.model import EvalSetResult
from assay.results.results_stream import read_results_streamed

_RESULTS = TypeAdapter(list[EvalSetResult])


def read_results_file(path: Path) -> list[EvalSetResult]:
    """The eval-set results in a results file; an :class:`~assay.errors.InputError` naming the
    file and JSON path when it is not one. A file larger than ``ASSAY_STREAM_MB`` is read a case
    at a time (:mod:`assay.results.results_stream`)."""
    if should_stream(path):
        try:
            return read_results_streamed(path)
        except (NotStreamable, OSError):
            pass  # a shape only the eager reader reads (or it says why the file cannot be read)
        except JsonError as exc:
            if path.stat().st_size > EXACT_LIMIT:
                raise InputError([syntax_problem(path, exc)]) from None
            # else read whole, for the very error a small file gives
    try:
        with (
            collections_paused()
        ):  # millions of objects and no garbage: see assay._internal.collector
            data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError([Problem(str(path), "", exc.strerror or str(exc))]) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise InputError([Problem(str(path), "", f"not JSON ({where}): {exc.msg}")]) from None
    if isinstance(data, str):  # ADK's legacy writer double-encodes
        with contextlib.suppress(json.JSONDecodeError):
            data = json.loads(data)
    listed = data if isinstance(data, list) else [data]
    try:
        with collections_paused():
            return _RESULTS.validate_python(listed)
    except ValidationError as exc:
        problems = problems_from_validation(exc, str(path), listed, [])
        raise InputError(problems) from None


def results_for(source: str, history: Path | None = None) -> list[EvalSetResult]:
    """The results ``source`` names: an existing file, else a run in the history (an id, an
    id's unique beginning, or ``latest``) at ``history`` (default: ``$ASSAY_HISTORY``, else
    ``.assay/history.sqlite`` beside the response cache)."""
    from assay.history.records import HistoryError, default_history_path
    from assay.history.store import HistoryStore

    path = Path(source)
    if path.is_file():
        return read_results_file(path)
    if path.suffix.lower() == ".json" or path.parent != Path("."):
        raise InputError([Problem(source, "", "no such results file")])
    store_path = history or default_history_path()
    if not store_path.is_file():
        raise InputError(
            [Problem(source, "", f"no such results file, and no run history at {store_path}")]
        )
    try:
        with (
            HistoryStore(store_path) as store,
            collections_paused(),
        ):  # see assay._internal.collector
            return store.results(source)
    except HistoryError as exc:
        raise InputError([Problem(source, "", f"no such results file; {exc}")]) from None
