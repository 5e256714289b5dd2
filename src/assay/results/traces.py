"""Recorded traces: the actual invocations of each case, from a file.

Two shapes are read:

* a JSON (or YAML) object mapping ``eval_id`` to the list of actual invocations (ADK Invocation
  JSON), which is what ``--save-traces`` writes;
* ADK's ``.evalset_result.json`` (also its legacy double-encoded form, and a list of them as
  ``assay eval --output`` writes): the actual invocations of each case are taken from
  ``eval_metric_result_per_invocation``. A case result without any (one that was not evaluated
  because it had no trace) gives no trace for that case, so reading results back reproduces them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from assay._files import load_data, parse_json, type_name
from assay.errors import Problem, TracesError, format_path, problems_from_validation, short_value
from assay.evalset.invocation import Invocation

_INVOCATIONS = TypeAdapter(list[Invocation])


RUN_KEY = re.compile(r"^(?P<eval_id>.+)#run(?P<run>[0-9]+)$")
"""``<eval_id>#run<N>``: the key ``--save-traces`` writes run N (N ≥ 2) of a case under."""

CaseKey = tuple[str | None, str]


@dataclass
class Traces:
    """Actual invocations per case, keyed by eval set id (None when the file does not say).

    ``by_case`` holds each case's first run; ``later_runs`` the runs after it, by run number
    (a traces file written with ``--num-runs``, or an ADK result listing a case more than once).
    """

    by_case: dict[CaseKey, list[Invocation]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    later_runs: dict[CaseKey, dict[int, list[Invocation]]] = field(default_factory=dict)

    def get(self, eval_set_id: str, eval_id: str) -> list[Invocation] | None:
        """The invocations recorded for a case, preferring an entry for the same eval set."""
        found = self.by_case.get((eval_set_id, eval_id))
        return found if found is not None else self.by_case.get((None, eval_id))

    def runs(self, eval_set_id: str, eval_id: str) -> list[tuple[int, list[Invocation]]]:
        """Every recorded run of a case as ``(run, invocations)``, first run first."""
        key: CaseKey = (eval_set_id, eval_id)
        if key not in self.by_case and key not in self.later_runs:
            key = (None, eval_id)
        found = [(1, self.by_case[key])] if key in self.by_case else []
        return found + sorted(self.later_runs.get(key, {}).items())

    def add(self, key: CaseKey, invocations: list[Invocation], run: int = 1) -> None:
        """Record one run of a case."""
        if run == 1:
            self.by_case[key] = invocations
        else:
            self.later_runs.setdefault(key, {})[run] = invocations

    def merge(self, other: Traces) -> None:
        """Add another file's traces; later files win on the same case."""
        self.by_case.update(other.by_case)
        for key, runs in other.later_runs.items():
            self.later_runs[key] = {**self.later_runs.get(key, {}), **runs}
        self.sources.extend(other.sources)


def load_traces(paths: Iterable[str | Path]) -> Traces:
    """Read one or more traces files, reporting every problem with file and JSON path."""
    traces = Traces()
    problems: list[Problem] = []
    for raw in paths:
        try:
            traces.merge(_load_one(Path(raw)))
        except TracesError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TracesError(problems)
    return traces


def _load_one(path: Path) -> Traces:
    file = str(path)
    data = load_data(path, TracesError)
    if isinstance(data, str):  # ADK's legacy writer double-encodes JSON
        with contextlib.suppress(TracesError):  # else a plain string, reported below
            data = parse_json(data, file, TracesError)
    if isinstance(data, dict) and ("eval_case_results" in data or "evalCaseResults" in data):
        return _from_set_results([data], file, prefix=())
    if isinstance(data, list) and data:
        not_objects = [
            Problem(
                file, format_path([i]), f"expected an eval set result object; got {short_value(d)}"
            )
            for i, d in enumerate(data)
            if not isinstance(d, dict)
        ]
        if not_objects:
            raise TracesError(not_objects)
        return _from_set_results(data, file, prefix=None)
    if isinstance(data, dict):
        return _from_mapping(data, file)
    got = "an empty list" if data == [] else type_name(data)
    raise TracesError(
        [
            Problem(
                file,
                "",
                "expected an object mapping eval_id to a list of invocations, or an ADK "
                f".evalset_result.json (or a list of them); got {got}",
            )
        ]
    )


def _invocations(data: Any, file: str, path: list[str | int]) -> list[Invocation]:
    try:
        return _INVOCATIONS.validate_python(data)
    except ValidationError as exc:
        raise TracesError(problems_from_validation(exc, file, data, path)) from None


def _from_mapping(data: dict[str, Any], file: str) -> Traces:
    traces = Traces(sources=[file])
    problems: list[Problem] = []
    for eval_id, invocations in data.items():
        if not isinstance(invocations, list):
            problems.append(
                Problem(
                    file,
                    format_path([eval_id]),
                    f"expected a list of invocations; got {type_name(invocations)}",
                )
            )
            continue
        numbered = RUN_KEY.match(eval_id)
        run = int(numbered["run"]) if numbered else 1
        case_id = numbered["eval_id"] if numbered and run >= 1 else eval_id
        try:
            traces.add((None, case_id), _invocations(invocations, file, [eval_id]), max(run, 1))
        except TracesError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TracesError(problems)
    return traces


def _key(data: dict[str, Any], snake: str) -> str:
    """The key ``data`` spells a field with: ``snake`` or its camelCase form (ADK reads both)."""
    head, *rest = snake.split("_")
    camel = head + "".join(word.capitalize() for word in rest)
    return camel if snake not in data and camel in data else snake


def _from_set_results(results: list[dict[str, Any]], file: str, prefix: tuple[()] | None) -> Traces:
    traces = Traces(sources=[file])
    problems: list[Problem] = []
    seen: dict[CaseKey, int] = {}  # a case listed again is its next run (ADK's num_runs)
    for s, result in enumerate(results):
        base: list[str | int] = [] if prefix is not None else [s]
        set_id = result.get(_key(result, "eval_set_id"))
        cases_key = _key(result, "eval_case_results")
        cases = result.get(cases_key)
        if not isinstance(cases, list):
            problems.append(
                Problem(
                    file,
                    format_path([*base, cases_key]),
                    f"expected a list of case results; got {type_name(cases)}",
                )
            )
            continue
        for c, case in enumerate(cases):
            where: list[str | int] = [*base, cases_key, c]
            eval_id = case.get(_key(case, "eval_id")) if isinstance(case, dict) else None
            if not isinstance(case, dict) or not isinstance(eval_id, str):
                problems.append(
                    Problem(file, format_path(where), "expected a case result with 'eval_id'")
                )
                continue
            rows_key = _key(case, "eval_metric_result_per_invocation")
            rows = case.get(rows_key)
            rows = [] if rows is None else rows
            if not isinstance(rows, list):
                problems.append(
                    Problem(
                        file,
                        format_path([*where, rows_key]),
                        f"expected a list; got {type_name(rows)}",
                    )
                )
                continue
            if not rows:  # not evaluated for want of a trace: still no trace
                continue
            invocations: list[Invocation] = []
            for r, row in enumerate(rows):
                actual_key = _key(row, "actual_invocation") if isinstance(row, dict) else ""
                row_path = [*where, rows_key, r, actual_key or "actual_invocation"]
                actual = row.get(actual_key) if isinstance(row, dict) else None
                try:
                    invocations += _invocations([actual], file, row_path[:-1])
                except TracesError as exc:
                    problems.extend(_unwrap(p, row_path) for p in exc.problems)
            key: CaseKey = (set_id if isinstance(set_id, str) else None, eval_id)
            seen[key] = seen.get(key, 0) + 1
            traces.add(key, invocations, seen[key])
    if problems:
        raise TracesError(problems)
    return traces


def _unwrap(problem: Problem, row_path: list[str | int]) -> Problem:
    """Rewrite ``...[r][0].x`` (the one-item list validated) as ``...[r].actual_invocation.x``."""
    wrapped = format_path([*row_path[:-1], 0])
    if problem.path.startswith(wrapped):
        rest = problem.path[len(wrapped) :]
        return Problem(problem.file, format_path(row_path) + rest, problem.message)
    return problem
