"""Writing results files (``assay eval --output``) a case at a time.

The file is ADK's ``EvalSetResult`` JSON (a list of them for several eval sets), indented by two
spaces as before, but it is never held whole in memory: each set's own fields are dumped once,
and its case results one by one (pydantic's serializer, then indented to their depth), so writing
the results of a 50,000-case run costs the memory of one case. What is written parses to exactly
what ``model_dump(mode="json", exclude_none=True)`` gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from assay.results.collected import texts
from assay.results.model import EvalSetResult

CASES = "eval_case_results"
INDENT = "  "


def _indented(text: str, depth: int) -> str:
    """``text`` (indented JSON starting at column 0) shifted right by ``depth`` levels; JSON
    strings hold no raw newline, so every line break is the serializer's."""
    return text.replace("\n", "\n" + INDENT * depth)


def _set_chunks(result: EvalSetResult, depth: int) -> Iterator[str]:
    """One eval set result as JSON text, in pieces, its fields in the model's order."""
    head = result.model_dump(mode="json", exclude_none=True, exclude={CASES})
    pad = INDENT * (depth + 1)
    fields = [name for name in type(result).model_fields if name in head or name == CASES]
    yield "{"
    for index, name in enumerate(fields):
        yield "\n" if index == 0 else ",\n"
        yield f"{pad}{json.dumps(name)}: "
        if name != CASES:
            value = json.dumps(head[name], indent=2, ensure_ascii=False)
            yield _indented(value, depth + 1)
            continue
        if not result.eval_case_results:
            yield "[]"
            continue
        yield "["
        for number, text in enumerate(texts(result.eval_case_results)):
            yield "\n" if number == 0 else ",\n"
            yield pad + INDENT + _indented(text, depth + 2)
        yield f"\n{pad}]"
    yield f"\n{INDENT * depth}}}"


def result_chunks(results: Sequence[EvalSetResult]) -> Iterator[str]:
    """The results file's text in pieces: one set's object, or a list of them for several."""
    if len(results) == 1:
        yield from _set_chunks(results[0], 0)
        yield "\n"
        return
    yield "["
    for index, result in enumerate(results):
        yield "\n" + INDENT if index == 0 else ",\n" + INDENT
        yield from _set_chunks(result, 1)
    yield "\n]\n" if results else "]\n"
