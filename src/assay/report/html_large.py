"""The HTML report of a large run (more than :data:`LARGE_RUN` cases): what a person can read.

Listing every case of a run of 100,000 makes a page no browser opens in reasonable time, and
nobody reads the passing ones one by one. So the page keeps the small report's summaries (per
eval set and over the run: counts, each metric's pass and fail counts, mean score and score
histogram) and lists only the cases that did not pass (FAILED, NOT_EVALUATED):

* the first :data:`FULL_CASES` of them in full, as the small report shows a case (its header,
  and its body built from JSON when it is opened), :data:`PAGE_SIZE` a page; the page's script
  shows one page at a time, with a pager and a filter over every listed case (without
  JavaScript, every page is shown one after another);
* the rest by name (eval set, case id, run, status and the metrics that failed), in one list
  closed by default, so that every case that did not pass can be found by name;
* passing cases counted, not listed.

The cases are read once, one at a time: what is listed goes to temporary files as it is rendered
and is copied into the page after the summaries, which only the whole pass can give; nothing is
held but the counts, each metric's :class:`~assay.report.html_summary.ScoreBins` and a case at a
time.
"""

from __future__ import annotations

import re
import secrets
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO

from markupsafe import Markup, escape

from assay.metrics.base import EvalStatus
from assay.report.case_json import case_body, json_for_script
from assay.report.html_cases import case_view
from assay.report.html_summary import SummaryBuilder, status_class
from assay.report.page import environment
from assay.results.model import EvalCaseResult, EvalSetResult

LARGE_RUN = 2_000
"""Cases above which the report uses this layout."""
FULL_CASES = 5_000
"""Cases that did not pass shown in full; the rest are listed by name."""
PAGE_SIZE = 200
"""Cases a page of the full list."""

_CHUNK = 1 << 20


class _Listing:
    """The cases that did not pass, rendered into temporary files as they come."""

    def __init__(self, pages: IO[str], bodies: IO[str], more: IO[str]) -> None:
        self.pages, self.bodies, self.more = pages, bodies, more
        self.full = 0
        self.named = 0
        self.header = environment().get_template("case.html.j2").module.case  # type: ignore[attr-defined]

    def add(self, case: EvalCaseResult) -> None:
        if self.full < FULL_CASES:
            self._add_full(case)
        else:
            self._add_name(case)

    def _add_full(self, case: EvalCaseResult) -> None:
        if self.full % PAGE_SIZE == 0:
            if self.full:
                self.pages.write("</div>\n")
            number = self.full // PAGE_SIZE + 1
            self.pages.write(f'<div class="page" id="page-{number}" data-page="{number}">\n')
        shown = case_view(f"c{self.full}", case)
        self.pages.write(str(self.header(shown, case.assay.run > 1)))
        if self.full:
            self.bodies.write("\n")
        self.bodies.write(json_for_script(case_body(shown)))
        self.full += 1

    def _add_name(self, case: EvalCaseResult) -> None:
        status = status_class(case.final_eval_status)
        failed = [
            row.metric_name
            for row in case.overall_eval_metric_results
            if row.eval_status in (EvalStatus.FAILED, EvalStatus.NOT_EVALUATED)
            and row.metric_name not in case.assay.not_applicable
        ]
        search = f"{case.eval_set_id} {case.eval_id} {status}".lower()
        run = f' <span class="muted">run {case.assay.run}</span>' if case.assay.run > 1 else ""
        chips = "".join(f' <span class="chip">{escape(name)}</span>' for name in failed)
        reason = case.assay.reason
        why = f' <span class="reason">{escape(reason)}</span>' if reason else ""
        self.more.write(
            f'<li id="m{self.named}" data-status="{status}" data-q="{escape(search)}">'
            f'<span class="badge {status}">{status.replace("-", " ")}</span> '
            f'<span class="case-id">{escape(case.eval_id)}</span>{run} '
            f'<span class="muted">{escape(case.eval_set_id)}</span>{chips}{why}</li>\n'
        )
        self.named += 1

    def finish(self) -> None:
        if self.full:
            self.pages.write("</div>\n")
        for handle in (self.pages, self.bodies, self.more):
            handle.seek(0)


def _copy(handle: IO[str]) -> Iterator[str]:
    while chunk := handle.read(_CHUNK):
        yield chunk


def render_large(
    results: Sequence[EvalSetResult], *, title: str, version: str, generated: str
) -> Iterator[str]:
    """The page, in pieces, from one pass over the cases."""
    alone = len(results) == 1  # the set's block is the run's: it shows the run's cost cap
    sets = [SummaryBuilder(result.eval_set_id, [result], cap=alone) for result in results]
    overall = SummaryBuilder("All eval sets", results) if len(results) > 1 else None
    # where the listed cases go in the page: marks no text in it can hold (random each time)
    marks = [f"assay-{name}-{secrets.token_hex(16)}" for name in ("pages", "more", "data")]
    with _scratch() as pages, _scratch() as bodies, _scratch() as more:
        listing = _Listing(pages, bodies, more)
        for result, built in zip(results, sets, strict=True):
            for case in result.eval_case_results:
                built.add(case)
                if overall is not None:
                    overall.add(case)
                if case.final_eval_status is not EvalStatus.PASSED:
                    listing.add(case)
        listing.finish()
        summaries = [built.build() for built in sets]
        total = sum(s.total for s in summaries)
        page = (
            environment()
            .get_template("large.html.j2")
            .render(
                title=title,
                version=version,
                generated=generated,
                sets=summaries,
                overall=overall.build() if overall is not None else None,
                total=total,
                listed=listing.full + listing.named,
                passed=sum(s.passed for s in summaries),
                full=listing.full,
                named=listing.named,
                page_size=PAGE_SIZE,
                pages=Markup(marks[0]),
                more=Markup(marks[1]),
                case_data=Markup(marks[2]),
            )
        )
        handles = dict(zip(marks, (pages, more, bodies), strict=True))
        for piece in re.split(f"({'|'.join(marks)})", page):
            handle = handles.get(piece)
            if handle is None:
                yield piece
            else:
                yield from _copy(handle)


def _scratch() -> IO[str]:
    """A temporary text file, gone when closed."""
    return tempfile.TemporaryFile("w+", encoding="utf-8")
