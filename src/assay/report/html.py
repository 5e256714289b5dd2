"""The HTML report: one self-contained file (inline CSS, inline SVG, a little vanilla JS).

The page opens with the cases that did not pass, by name, and a case x metric grid
(:mod:`assay.report.html_grid`); then a summary per eval set and over the run (pass rate, mean
score per metric, score histograms drawn as SVG where there are enough scores to draw, the
informational metrics as values with units), a case list filterable by text and status, failed
cases first, and per case, opened on
click, the conversation, the actual and expected tool calls side by side with mismatches marked,
every judge sample with its verdict and raw answer, rubric tables, hallucination sentence labels
and token usage.

The summary and each case's one-line header are HTML, through jinja2's autoescaping. The cases'
bodies (everything shown once a case is opened) are JSON, one line per case, in a single inert
``<script type="application/json">`` block, with ``<``, ``>`` and ``&`` written as ``\\u`` escapes
so that no text can end the block; the page's script builds a body the first time its case is
opened, with ``createElement`` and ``textContent`` only (never ``innerHTML``): the text of agents,
users and judges never becomes markup. Table headings and markup live once in the script instead
of once per case, and Chromium reads the block as one text node instead of building every case's
DOM: a page of 10,000 cases is about half the bytes and loads several times faster.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from assay._internal.files import write_atomically
from assay._version import __version__
from assay.report import html_large
from assay.report.case_json import case_body, json_for_script
from assay.report.html_cases import case_view, trajectory
from assay.report.html_grid import by_status, grid
from assay.report.html_summary import histogram, summary
from assay.report.page import default_title, environment
from assay.report.rows import Case
from assay.results.model import EvalCaseResult, EvalSetResult


class _Bodies:
    """The cases' bodies, one JSON line each, gathered while the case list renders and written
    out (jinja2 calls ``__html__``) in the data block after it: no case is held longer than its
    own line takes to render."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __html__(self) -> str:
        return "\n".join(self.lines)


def _cases(keyed: Sequence[tuple[str, EvalCaseResult]], bodies: _Bodies) -> Iterator[Case]:
    for key, result in keyed:
        case = case_view(key, result)
        bodies.lines.append(json_for_script(case_body(case)))
        yield case


def _keyed(results: Sequence[EvalSetResult]) -> list[tuple[str, EvalCaseResult]]:
    """Every case with its key (``c<n>``, its line in the page's data block), in listing
    order: failed, then not evaluated, then passed (:func:`~assay.report.html_grid.by_status`)."""
    every = [case for result in results for case in result.eval_case_results]
    return [(f"c{n}", every[i]) for n, i in enumerate(by_status(every))]


def _listed(results: Sequence[EvalSetResult]) -> list[EvalSetResult]:
    """The results with their cases in lists, for a run small enough to hold (a lazy sequence
    of cases is read once, not once per summary)."""
    return [
        result
        if isinstance(result.eval_case_results, list)
        else result.model_copy(update={"eval_case_results": list(result.eval_case_results)})
        for result in results
    ]


def html_text(results: Sequence[EvalSetResult], *, title: str | None = None) -> Iterator[str]:
    """The report page for ``results``, in pieces: every case listed for a run of at most
    :data:`~assay.report.html_large.LARGE_RUN` cases, else the large run's layout
    (:mod:`assay.report.html_large`)."""
    page_title = title or default_title(results)
    generated = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    if sum(len(result.eval_case_results) for result in results) > html_large.LARGE_RUN:
        yield from html_large.render_large(
            results, title=page_title, version=__version__, generated=generated
        )
        return
    results = _listed(results)
    alone = len(results) == 1  # the set's block is the run's: it shows the run's cost cap
    sets = [summary(result.eval_set_id, [result], cap=alone) for result in results]
    overall = summary("All eval sets", results) if len(results) > 1 else None
    bodies = _Bodies()
    keyed = _keyed(results)
    template = environment().get_template("report.html.j2")
    yield template.render(
        title=page_title,
        version=__version__,
        generated=generated,
        sets=sets,
        overall=overall,
        grid=grid(keyed),
        cases=_cases(keyed, bodies),
        case_data=bodies,
        total=sum(len(result.eval_case_results) for result in results),
        runs=any(case.assay.run > 1 for r in results for case in r.eval_case_results),
    )


def render_html(results: Sequence[EvalSetResult], *, title: str | None = None) -> str:
    """The report page for ``results`` as one self-contained HTML document."""
    return "".join(html_text(results, title=title))


def write_html(path: Path, results: Sequence[EvalSetResult], *, title: str | None = None) -> None:
    """Write the report page to ``path`` (through a temporary file beside it), a piece at a
    time."""
    write_atomically(path, html_text(results, title=title))


__all__ = ["histogram", "render_html", "trajectory", "write_html"]
