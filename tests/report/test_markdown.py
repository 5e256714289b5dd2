"""The Markdown summary for pull-request comments: totals, a metric table, capped case lists."""

from __future__ import annotations

import re
from pathlib import Path

from _support import Example, RunCli
from compare._results import case, eval_set, priced, scored

from assay.history import read_results_file
from assay.metrics.base import EvalStatus
from assay.report.markdown import LISTED, escape_markdown, render_markdown, write_markdown
from report._html_cases import ALIGNED_RULE, aligned_case
from report._html_cases import results as aligned_results


def _cells(line: str) -> list[str]:
    """A table row split on its unescaped pipes."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_escape_keeps_text_literal_on_one_line() -> None:
    assert escape_markdown("a|b") == "a\\|b"
    assert escape_markdown("**bold** _it_ `code`") == "\\*\\*bold\\*\\* \\_it\\_ \\`code\\`"
    assert escape_markdown("[x](http://evil)") == "\\[x\\]\\(http\\://evil\\)"
    assert escape_markdown("<img src=x onerror=alert(1)> & @team") == (
        "&lt;img src=x onerror=alert\\(1\\)&gt; &amp; \\@team"
    )
    assert escape_markdown("line one\n\nline  two") == "line one line two"
    assert (
        escape_markdown("back\\slash $x$ ~~s~~ #1 !")
        == "back\\\\slash \\$x\\$ \\~\\~s\\~\\~ \\#1 \\!"
    )


def test_summary_has_totals_and_a_row_per_metric() -> None:
    results = [
        eval_set(
            "s",
            case("a", {"m": scored(1.0), "tokens": (100.0, EvalStatus.INFORMATIONAL)}),
            case("b", {"m": scored(0.5), "tokens": (300.0, EvalStatus.INFORMATIONAL)}),
            case("c", {}, status=EvalStatus.NOT_EVALUATED, reason="no trace"),
        )
    ]
    text = render_markdown(results)
    assert "**1 passed, 1 failed, 1 not evaluated** of 3 case(s)" in text
    rows = {
        _cells(line)[0].strip(): _cells(line) for line in text.splitlines() if line.startswith("| ")
    }
    assert [c.strip() for c in rows["m"]] == ["m", "50.0% (1/2)", "0.75"]
    assert [c.strip() for c in rows["tokens (informational)"]][1:] == ["–", "200"]
    assert "- **s / b**: m 0.50 < 0.80" in text
    assert "### Not evaluated (1)" in text and "- **s / c**: no trace" in text


def test_not_applicable_metrics_are_left_out_of_rates_and_failures() -> None:
    results = [
        eval_set("s", case("a", {"m": scored(1.0), "sim": scored(0.0)}, not_applicable=("sim",)))
    ]
    text = render_markdown(results)
    assert "sim" not in text
    assert "Failing cases" not in text


def test_failing_cases_are_capped(tmp_path: Path) -> None:
    cases = [case(f"case{i}", {"m": scored(0.1)}) for i in range(LISTED + 7)]
    path = tmp_path / "summary.md"
    write_markdown(path, [eval_set("s", *cases)])
    text = path.read_text(encoding="utf-8")
    assert f"### Failing cases ({LISTED + 7})" in text
    assert text.count("- **s / case") == LISTED
    assert "- …and 7 more" in text
    assert text.endswith("\n") and not text.endswith("\n\n")


def test_ids_with_markdown_characters_do_not_break_the_table_or_lists() -> None:
    evil = "a|b <script>alert(1)</script> [x](y) @here"
    results = [eval_set(f"set|{evil}", case(evil, {f"metric|{evil}": scored(0.0)}))]
    text = render_markdown(results)
    assert "<script>" not in text and "@here" not in text.replace("\\@here", "")
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert all(len(_cells(line)) == 3 for line in table)
    assert "a\\|b &lt;script&gt;alert\\(1\\)&lt;/script&gt; \\[x\\]\\(y\\) \\@here" in text


def test_runs_are_named_when_a_case_ran_more_than_once() -> None:
    results = [
        eval_set("s", case("a", {"m": scored(0.0)}, run=1), case("a", {"m": scored(0.0)}, run=2))
    ]
    text = render_markdown(results)
    assert "- **s / a (run 1)**" in text and "- **s / a (run 2)**" in text


def test_markdown_of_a_real_regressed_run(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    run_cli("eval", example.evalset, "--traces", example.regressed, "--output", out)
    text = render_markdown(read_results_file(out))
    assert "**1 passed, 2 failed, 2 not evaluated** of 5 case(s)" in text
    assert (
        "- **travel\\_assistant / convert\\_currency**: response\\_match\\_score 0.30 < 0.60"
        in text
    )
    assert "| tool\\_trajectory\\_avg\\_score | 66.7% (2/3) | 0.83 |" in text


def test_a_failing_case_a_profile_decided_says_what_the_judge_said_and_the_rule() -> None:
    text = render_markdown([aligned_results(aligned_case())])

    line = next(x for x in text.splitlines() if x.startswith("- **travel / greeting**"))
    said = f'turn 1: judge said "yes" (P(yes) 0.94); aligned to "no": {ALIGNED_RULE}'
    assert escape_markdown(said) in line


def test_the_judges_cost_is_one_line_under_the_metric_table() -> None:
    result = priced(
        eval_set("s", case("a", {"m": scored(1.0)})),
        {"judge_a": 0.0042, "judge_b": 0.5, "judge_c": None},
        cap=0.5,
    )
    text = render_markdown([result])
    line = (
        "**Judge cost:** \\$0.50 \\+ unknown \\(judge\\_a \\$0.0042, judge\\_b \\$0.50, "
        "judge\\_c unknown\\); --max-cost 0.50 reached"
    )
    assert line in text.splitlines()
    assert text.index("| m |") < text.index("**Judge cost:**")


def test_judges_that_cost_nothing_add_no_cost_line() -> None:
    free = priced(eval_set("s", case("a", {"m": scored(1.0)})), {"judge_a": 0.0})
    assert "Judge cost" not in render_markdown([free])
