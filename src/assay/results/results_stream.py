"""Reading a large results file (``assay eval --output``, ADK's ``.evalset_result.json``) a case
at a time, for ``assay report``, ``show`` and ``compare``.

A 50,000-case results file is 1.4 GB of JSON, and read whole it was 16 GB of Python objects. A
file larger than ``ASSAY_STREAM_MB`` (:func:`~assay._internal.json_stream.should_stream`) is read in two
passes with ijson: the first checks the whole file's syntax and takes each set's fields but its
case results (counting those); the second checks each case result in turn, with the JSON path
the eager reader gives, and hands it to a :class:`~assay.results.collected.CaseResults`, which
spills past a few thousand. What is held is the sets' own fields and the results not yet spilled.

The shapes the eager reader alone reads (ADK's double-encoded string, a key given twice, both
spellings of ``eval_case_results``, case results that are no list) raise
:class:`~assay._internal.json_stream.NotStreamable`; the eager reader then reports them as it always did.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay._internal.json_stream import Fields, Member, NotStreamable, items, open_json, scan
from assay.errors import InputError, Problem, problems_from_validation
from assay.results.collected import CaseResults
from assay.results.model import EvalCaseResult, EvalSetResult

_CASES_KEYS = frozenset({"eval_case_results", "evalCaseResults"})


@dataclass
class _Set:
    """One set result as the first pass saw it: its fields but the cases, where it is in the
    file, how its cases are spelt and how many there are."""

    fields: dict[str, Any]
    base: list[str | int]
    cases_key: str
    count: int


def read_results_streamed(path: Path) -> list[EvalSetResult]:
    """The eval-set results in ``path``, their case results read one at a time; an
    :class:`~assay.errors.InputError` with every problem (each naming the file and JSON path),
    :class:`NotStreamable` for a shape the eager reader reads, or
    :data:`~assay._internal.json_stream.JsonError` for malformed JSON."""
    file = str(path)
    top = scan(path, note=lambda key: True, keep=_kept, elements=True)
    if top.kind == "start_map":
        sets = [_plan(top.members, [])]
    elif top.kind == "start_array" and top.elements:
        if not all(isinstance(found, Fields) for found in top.elements):
            raise NotStreamable("a list of more than set results")
        sets = [_plan(found.members, [n]) for n, found in enumerate(top.elements)]
    else:
        raise NotStreamable(top.kind)  # a double-encoded string, an empty list, a scalar
    spellings = {found.cases_key for found in sets}
    if len(spellings) > 1:
        raise NotStreamable("both spellings of eval_case_results")
    problems: list[Problem] = []
    heads: list[EvalSetResult | None] = []
    for found in sets:
        data = {**found.fields, found.cases_key: []}
        try:
            heads.append(EvalSetResult.model_validate(data))
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, file, data, found.base))
            heads.append(None)
    (spelt,) = spellings
    prefix = f"{spelt}.item" if top.kind == "start_map" else f"item.{spelt}.item"
    results: list[EvalSetResult] = []
    with open_json(path) as handle:
        cases = items(handle, prefix)
        for found, head in zip(sets, heads, strict=True):
            collected = CaseResults()
            for number in range(found.count):
                item = next(cases)
                try:
                    result = EvalCaseResult.model_validate(item)
                except ValidationError as exc:
                    where = [*found.base, found.cases_key, number]
                    problems.extend(problems_from_validation(exc, file, item, where))
                    continue
                if not problems:
                    collected.append(result)
            if head is not None and not problems:
                results.append(_with_cases(head, collected.close()))
    if problems:
        raise InputError(problems)
    return results


def _kept(key: str, kind: str) -> bool:
    """Build every field of a set but a list of case results (anything else is the eager
    reader's to report)."""
    return key not in _CASES_KEYS or kind != "start_array"


def _plan(members: list[Member], base: list[str | int]) -> _Set:
    keys = [member.key for member in members]
    listed = [member for member in members if member.key in _CASES_KEYS]
    if len(set(keys)) != len(keys) or len(listed) != 1 or listed[0].kind != "start_array":
        raise NotStreamable("a key given twice, or no list of case results")
    fields = {member.key: member.value for member in members if member is not listed[0]}
    return _Set(fields, base, listed[0].key, listed[0].items)


def _with_cases(head: EvalSetResult, cases: CaseResults) -> EvalSetResult:
    """``head`` (validated with no cases) with ``cases``: as a list when they are few, else as
    they are (read back on each pass; validating them would make them a list)."""
    if not cases.spilled:
        return head.model_copy(update={"eval_case_results": list(cases)})
    fields = {name: getattr(head, name) for name in type(head).model_fields}
    fields["eval_case_results"] = cases
    return EvalSetResult.model_construct(_fields_set=set(head.model_fields_set), **fields)
