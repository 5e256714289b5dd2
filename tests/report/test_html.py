"""The HTML report's rendering: escaping, trajectory mismatches, summary numbers, histograms.

Case bodies are JSON read here as the page's script reads them; ``test_html_browser.py`` checks
what Chromium builds from them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

from compare._results import case as scored_case
from compare._results import eval_set, priced, scored

from assay.report.case_json import json_for_script
from assay.report.html import histogram, render_html, trajectory, write_html
from assay.report.html_summary import SummaryBuilder, summary
from assay.results.model import EvalSetResult
from report._html_cases import ALIGNED_RULE, HOSTILE, IMG, SCRIPT, aligned_case, case, results

PASSED, FAILED, NOT_EVALUATED = 1, 2, 3
DATA = re.compile(r'<script type="application/json" id="case-data">(.*?)</script>', re.S)


def _bodies(page: str) -> list[dict[str, Any]]:
    """The case bodies embedded in ``page``, parsed as the page's script parses them: one JSON
    value a line."""
    block = DATA.search(page)
    assert block is not None
    return [json.loads(line) for line in block.group(1).split("\n") if line]


def _calls(page: str) -> list[list[Any]]:
    return [call for body in _bodies(page) for t in body["turns"] for call in t["calls"]]


def _hostile_page() -> str:
    hostile = case(HOSTILE, FAILED, user=HOSTILE, agent=HOSTILE, rationale=HOSTILE, score=0.0)
    return render_html([results(hostile)])


def test_agent_user_judge_and_id_text_is_escaped_everywhere() -> None:
    page = _hostile_page()
    assert SCRIPT not in page
    assert IMG not in page
    assert "<img" not in page
    assert page.count("<script") == 2  # the report's own script and the JSON data block
    assert page.count("</script>") == page.count("<script")  # no text closes a data block
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page  # the case's header line
    assert "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;" in page
    (body,) = _bodies(page)
    assert body["turns"][0]["user"] == HOSTILE  # read back intact, to be shown as text


def test_json_for_script_escapes_what_could_end_the_block() -> None:
    value = {"a": "</script><!-- & -->", "b": "\u2028 é"}
    text = str(json_for_script(value))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == value


def test_hostile_eval_id_is_escaped_in_attributes() -> None:
    page = _hostile_page()
    quoted = re.findall(r'data-q="([^"]*)"', page)
    assert quoted and all("<" not in value for value in quoted)


def test_title_is_escaped(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_html(out, [results(case("a", PASSED))], title=SCRIPT)
    text = out.read_text(encoding="utf-8")
    assert f"<title>{SCRIPT}" not in text
    assert "<title>&lt;script&gt;" in text


def test_mismatched_tool_calls_are_highlighted_beside_the_expected_ones() -> None:
    wrong = case(
        "wrong_city",
        FAILED,
        score=0.0,
        actual_calls=[{"name": "search_flights", "args": {"to": "OPO"}}],
        expected_calls=[{"name": "search_flights", "args": {"to": "LIS"}}],
    )
    page = render_html([results(wrong)])
    assert _calls(page) == [['search_flights({"to": "OPO"})', 0, 'search_flights({"to": "LIS"})']]


def test_matching_tool_calls_are_not_highlighted_nor_repeated() -> None:
    page = render_html([results(case("fine", PASSED))])
    assert _calls(page) == [['search_flights({"to": "LIS"})', 1]]  # expected = actual


def test_missing_and_extra_calls_are_mismatches() -> None:
    res = results(
        case(
            "extra",
            FAILED,
            actual_calls=[{"name": "a", "args": {}}, {"name": "b", "args": {}}],
            expected_calls=[{"name": "a", "args": {}}],
        )
    )
    row = res.eval_case_results[0].eval_metric_result_per_invocation[0]
    rows = trajectory(row.actual_invocation, row.expected_invocation)
    assert [r.match for r in rows] == [True, False]
    assert rows[1].expected is None and rows[1].actual == "b({})"


def test_summary_shows_pass_rate_counts_and_mean_score() -> None:
    page = render_html(
        [results(case("a", PASSED, score=1.0), case("b", FAILED, score=0.0))],
    )
    assert "50.0%" in page
    name = "tool_<wbr>trajectory_<wbr>avg_<wbr>score"
    assert re.search(rf"{name}</td><td class=\"num\">0\.50</td>", page)


def test_overall_summary_appears_for_several_eval_sets() -> None:
    first = results(case("a", PASSED), eval_set_id="one")
    second = results(case("b", NOT_EVALUATED), eval_set_id="two")
    page = render_html([first, second])
    assert "All eval sets" in page
    assert page.count('class="summary set"') == 2


def test_score_distribution_is_an_inline_svg_histogram_once_there_are_enough_scores() -> None:
    many = [case(f"c{i}", PASSED if i % 2 else FAILED, score=i % 2) for i in range(20)]
    page = render_html([results(*many)])
    svg = re.search(r'<svg class="hist".*?</svg>', page, re.S)
    assert svg is not None
    assert svg.group(0).count("<rect") == 10


def test_a_handful_of_scores_gets_no_histogram_and_no_distribution_column() -> None:
    page = render_html([results(case("a", PASSED, score=1.0), case("b", FAILED, score=0.0))])
    assert '<svg class="hist"' not in page and "Distribution" not in page


def test_histogram_bins_scores_over_zero_to_one() -> None:
    chart = histogram([0.0, 0.05, 1.0])
    assert chart is not None
    counts = [bar.count for bar in chart.bars]
    assert counts == [2, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert chart.bars[0].height > chart.bars[-1].height > 0
    assert histogram([]) is None


def test_histogram_of_values_outside_zero_to_one_uses_their_range() -> None:
    chart = histogram([100.0, 300.0])
    assert chart is not None
    assert (chart.low, chart.high) == ("100", "300")


def test_case_shows_judge_samples_rubrics_sentence_labels_and_usage() -> None:
    page = render_html([results(case("a", PASSED, rationale="grounded in the tool output"))])
    (body,) = _bodies(page)
    rubric, labels = body["judged"]
    assert rubric["judge"] == "openai:stub (from ASSAY_JUDGE_MODEL)"
    (inv,) = rubric["inv"]
    sample = inv["samples"][0]
    assert sample[2] == "answers: yes"  # the sample's verdict
    assert "grounded in the tool output" in sample[3]  # the judge's raw answer
    rationale = "grounded in the tool output"
    assert inv["rubrics"] == [
        ["answers", "It answers.", "yes", "1.0", "yes 1, no 0, none 0", rationale]
    ]
    assert labels["inv"][0]["sentences"] == [["final", "Booked.", "contradictory", rationale, ""]]
    assert ["rubric_based_final_response_quality_v1", "1", "120", "7", "0"] in body["usage"]


def test_page_is_self_contained() -> None:
    page = render_html([results(case("a", PASSED))])
    assert "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<style>" in page and "<script>" in page


def test_empty_results_render() -> None:
    empty = EvalSetResult(eval_set_result_id="r", eval_set_id="empty")
    page = render_html([empty])
    assert "0 of 0 cases" in page


def test_every_template_ships_inside_the_built_wheel(tmp_path: Path) -> None:
    """The wheel built from this tree (by the project's build backend, offline) holds every file
    of each page's ``templates`` (the report's, with the shell every page extends, the
    comparison's, the judge agreement's and the view's) and the view's scripts: the editable
    install reads them from the source tree, so only the wheel shows what users get."""
    root = Path(__file__).resolve().parents[2]
    build = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    built = subprocess.run(
        [sys.executable, "-c", build, str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    wheel = tmp_path / built.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    wanted: dict[str, set[str]] = {}
    places = [(p, "templates") for p in ("assay.report", "assay.compare", "assay.agreement")]
    for package, kind in [*places, ("assay.view", "templates"), ("assay.view", "static")]:
        source = resources.files(package) / kind
        folder = f"{package.replace('.', '/')}/{kind}/"
        wanted[folder] = {entry.name for entry in source.iterdir() if entry.is_file()}
        shipped = {name.removeprefix(folder) for name in names if name.startswith(folder)}
        assert shipped == wanted[folder], folder
    assert {"page.html.j2", "report.html.j2", "report.js", "report.css"} <= wanted[
        "assay/report/templates/"
    ]
    assert wanted["assay/compare/templates/"] == {"compare.html.j2"}
    assert {"agree.html.j2", "agree_sections.html.j2"} <= wanted["assay/agreement/templates/"]
    assert {"view.html.j2", "label_macros.html.j2"} <= wanted["assay/view/templates/"]
    assert {"view.js", "label.js", "live.js"} <= wanted["assay/view/static/"]


def test_each_case_body_is_on_the_line_of_its_case_number() -> None:
    first = results(case("a", PASSED, agent="first answer"), eval_set_id="one")
    second = results(case("b", PASSED, agent="second answer"), eval_set_id="two")
    page = render_html([first, second])
    assert re.findall(r'<details class="case" id="(c\d+)"', page) == ["c0", "c1"]
    agents = [body["turns"][0]["agent"] for body in _bodies(page)]
    assert agents == ["first answer", "second answer"]


def test_each_judged_metric_shows_its_agreement_with_people_and_any_smoke_test_warning() -> None:
    from assay.results.model import JudgeInfo

    result = results(case("book_lisbon", PASSED))
    assert result.assay is not None
    judge = {"model": "openai:gpt-4o-mini", "source": "--judge-model"}
    card = {
        "labels": 60,
        "judged": 58,
        "agreement": 0.5,
        "kappa": 0.05,
        "kappa_interval": (-0.1, 0.2),
        "prompt_version": "abcdef012345",
        "card_date": "2026-03-01T12:00:00Z",
        "labels_file": f"labels/{SCRIPT}.yaml",
    }
    result.assay.judges = {
        "safety_v1": JudgeInfo.model_validate({**judge, "agreement": card}),
        "hallucinations_v1": JudgeInfo.model_validate(judge),
    }
    page = " ".join(render_html([result]).split())

    assert "judge agrees with people on 50% (kappa 0.05 [-0.10, +0.20]; 60 labels, labels/" in page
    assert "at chance on this criterion: a smoke test, not a decision" in page
    assert "prompt abcdef012345, measured 2026-03-01T12:00:00Z on labels/" in page
    assert (
        "warning: the judge of safety_v1 is at chance on this criterion (kappa 0.05 on 60 "
        "labels): a smoke test, not a decision" in page
    )
    assert "<b>hallucinations_v1</b>: openai:gpt-4o-mini (from --judge-model)<br>" in page
    assert "judge agreement not measured" in page
    assert SCRIPT not in page


def test_a_sample_shows_the_judges_own_answer_and_probability_beside_the_aligned_decision() -> None:
    page = render_html([results(aligned_case())])
    (body,) = _bodies(page)

    sample = body["judged"][0]["inv"][0]["samples"][0]

    assert sample[2] == "answers: yes"  # the judge's own verdict
    assert json.loads(sample[3])["verdicts"][0]["verdict"] == "yes"  # its own text
    assert sample[6] == "P(yes) 0.94"
    said = f'judge said "yes" (P(yes) 0.94); aligned to "no": {ALIGNED_RULE} (counted score 0'
    assert sample[7].startswith(said)
    plain = body["judged"][1]["inv"][0]["samples"]
    assert all(s[7] == "" for s in plain)  # a verdict no profile touched says nothing more


def _priced_sets() -> list[EvalSetResult]:
    one = priced(eval_set("one", scored_case("a", {"m": scored(1.0)})), {"judge_a": 0.6}, 1.0)
    two = priced(eval_set("two", scored_case("b", {"m": scored(1.0)})), {"judge_b": 0.0042}, 1.0)
    return [one, two]


def test_the_summary_shows_each_metrics_judge_cost_the_total_and_the_cap() -> None:
    page = render_html(_priced_sets())
    overall = page[page.index('class="summary overall"') : page.index('class="summary set"')]
    assert re.search(
        r"judge_<wbr>a</td>(<td class=\"num\">[^<]*</td>){4}<td class=\"num\">\$0\.60", overall
    )
    assert '<td class="num">$0.0042</td>' in overall
    assert "Judge cost: <b>$0.60</b>" in overall
    assert '<span class="cost-cap">--max-cost 1.00 not reached</span>' in overall
    first_set = page[page.index('class="summary set"') :]
    assert "Judge cost: <b>$0.60</b></p>" in first_set  # a set's block: the cap is the run's


def test_a_cap_spent_up_to_reads_reached_and_an_unpriced_judge_unknown() -> None:
    [result, _] = _priced_sets()
    page = render_html([priced(result, {"judge_a": 1.0, "judge_c": None}, cap=1.0)])
    assert '<span class="cost-cap reached">--max-cost 1.00 reached</span>' in page
    assert "Judge cost: <b>$1.00 + unknown</b>" in page
    assert '<td class="num">unknown</td>' in page and "$0</td>" not in page


def test_judges_that_cost_nothing_show_no_cost_in_the_report() -> None:
    free = [
        priced(result, dict.fromkeys(result.assay.cost_usd, 0.0))
        for result in _priced_sets()
        if result.assay
    ]
    page = render_html(free)
    assert "Judge cost" not in page and '<th class="num">Cost</th>' not in page
    assert "judge_<wbr>a" in page  # the usage table is still there


def test_a_large_runs_summary_shows_the_cost_as_a_small_ones() -> None:
    results = _priced_sets()
    whole = SummaryBuilder("all", results).build().cost
    assert whole is not None and whole == summary("all", results).cost
    assert whole.words() == "$0.60 (judge_a $0.60, judge_b $0.0042); --max-cost 1.00 not reached"
    one = SummaryBuilder("one", results[:1], cap=False).build().cost
    assert (
        one is not None and one.cap is None and one == summary("one", results[:1], cap=False).cost
    )
