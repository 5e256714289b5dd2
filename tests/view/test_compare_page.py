"""The compare page over real HTTP, on the travel example recorded twice (its traces, then its
regressed traces): the flipped cases linked to both case pages, every metric's row as
``assay compare`` gives it with its interval drawn around 0, the form preset to the two latest
runs of the same eval sets, and what cannot be compared said on the page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from _judge_server import JudgeServer
from markupsafe import escape

from assay.compare.diff import Comparison, MetricChange, compare_runs
from assay.compare.render import row_cells
from assay.compare.stats import Interval
from assay.history.store import HistoryStore
from assay.view.context import ViewSettings
from assay.view.pages.case import case_url
from assay.view.pages.compare import WIDTH, default_pair, picture
from assay.view.server import ViewServer
from view._case_runs import Recorded, record_all


@pytest.fixture(scope="module")
def recorded(approving_judge: JudgeServer, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record_all(tmp_path_factory.mktemp("compare-page"), approving_judge)


@pytest.fixture(scope="module")
def client(recorded: Recorded) -> Iterator[httpx.Client]:
    server = ViewServer(ViewSettings(history=recorded.history)).start()
    try:
        with httpx.Client(base_url=server.url.rstrip("/"), timeout=60) as http:
            yield http
    finally:
        server.stop()


@pytest.fixture(scope="module")
def compared(client: httpx.Client, recorded: Recorded) -> str:
    response = client.get("/compare", params={"a": recorded.base, "b": recorded.candidate})
    assert response.status_code == 200, response.text[-2000:]
    return response.text


def _expected(recorded: Recorded) -> Comparison:
    with HistoryStore(recorded.history) as store:
        return compare_runs(
            store.results(recorded.base),
            store.results(recorded.candidate),
            base_label=recorded.base,
            candidate_label=recorded.candidate,
        )


def test_flipped_cases_link_to_their_page_in_both_runs(compared: str, recorded: Recorded) -> None:
    comparison = _expected(recorded)
    assert comparison.verdict.to_fail  # the regressed traces fail cases that passed
    flips = compared.split('id="to-fail"')[1].split("</ul>")[0]
    for key in comparison.verdict.to_fail:
        assert str(escape(key.label)) in flips
        assert f'href="{case_url(recorded.base, key)}"' in flips
        assert f'href="{case_url(recorded.candidate, key)}"' in flips
    assert f"fail → pass ({len(comparison.verdict.to_pass)})" in compared


def test_each_metric_row_has_the_cells_assay_compare_gives_and_a_picture(
    compared: str, recorded: Recorded
) -> None:
    comparison = _expected(recorded)
    table = compared.split('id="metric-changes"')[1].split("</table>")[0]
    rows = table.split("<tr")[2:]  # after the heading row
    assert len(rows) == len(comparison.rows)
    pictured = 0
    for row, change in zip(rows, comparison.rows, strict=True):
        for cell in row_cells(change, comparison.alpha)[1:]:
            assert str(escape(cell)) in row
        if change.interval is not None:
            pictured += 1
            assert '<svg class="ci' in row and 'class="dot"' in row and 'class="zero"' in row
    assert pictured >= 2


def test_a_regressed_score_is_drawn_left_of_zero(compared: str) -> None:
    row = next(r for r in compared.split("<tr") if "tool_<wbr>trajectory" in r)
    zero = re.search(r'class="zero" x1="([\d.]+)"', row)
    dot = re.search(r'class="dot" cx="([\d.]+)"', row)
    assert zero is not None and dot is not None
    assert float(dot.group(1)) < float(zero.group(1))


def test_the_picture_clamps_to_its_scale_and_centres_zero() -> None:
    change = MetricChange("m", interval=Interval(estimate=0.2, low=-0.1, high=0.9, level=0.95))
    drawn = picture(change, 0.5)
    assert drawn is not None
    assert drawn.zero == WIDTH / 2
    assert drawn.low < drawn.zero < drawn.dot < drawn.high <= WIDTH
    assert picture(MetricChange("m"), 0.5) is None


def test_without_runs_the_form_offers_the_two_latest_runs_of_one_eval_set(
    client: httpx.Client, recorded: Recorded
) -> None:
    response = client.get("/compare")
    assert response.status_code == 200
    a = response.text.split('name="a"')[1].split("</select>")[0]
    b = response.text.split('name="b"')[1].split("</select>")[0]
    assert f'value="{recorded.base}" selected' in a
    assert f'value="{recorded.candidate}" selected' in b
    assert 'id="metric-changes"' not in response.text
    with HistoryStore(recorded.history) as store:
        pair = default_pair(store.runs())
    assert pair is not None and (pair[0].id, pair[1].id) == (recorded.base, recorded.candidate)


def test_an_unknown_run_is_a_404_page_that_names_it(client: httpx.Client) -> None:
    response = client.get("/compare", params={"a": "no-such-run", "b": "latest"})
    assert response.status_code == 404
    assert "no run &#39;no-such-run&#39;" in response.text
    assert "Traceback" not in response.text and 'name="a"' in response.text
