"""The console report: tables of scores, thresholds and statuses; user text shown literally."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console

from assay.evalset.invocation import Invocation
from assay.metrics.base import EvalStatus
from assay.report.console import (
    detail_table,
    format_score,
    metrics_table,
    print_results,
    results_table,
    status_text,
    summary_line,
)
from assay.results.model import (
    CaseNotes,
    EvalCaseResult,
    EvalMetricResult,
    EvalMetricResultPerInvocation,
    EvalSetResult,
    RunSummary,
    SetNotes,
)

MARKUP = "[bold]x[/]"


def render(*renderables: Any) -> str:
    console = Console(file=io.StringIO(), width=240, color_system=None, highlight=False)
    for renderable in renderables:
        console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


def flat(text: str) -> str:
    """``text`` without the table's rules and with every run of whitespace one space."""
    return " ".join(re.sub(r"[│┃]", " ", text).split())


def has_row(output: str, *cells: str) -> bool:
    """Whether a table line holds ``cells`` in adjacent columns."""
    pattern = r"│\s*" + r"\s*│\s*".join(re.escape(cell) for cell in cells) + r"\s*│"
    return re.search(pattern, output) is not None


def invocation(prompt: str, answer: str, tools: list[dict[str, Any]] | None = None) -> Invocation:
    return Invocation.model_validate(
        {
            "user_content": {"role": "user", "parts": [{"text": prompt}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]},
            "intermediate_data": {"tool_uses": tools or []},
        }
    )


def metric(
    name: str, score: float | None, threshold: float, status: EvalStatus
) -> EvalMetricResult:
    return EvalMetricResult(metric_name=name, score=score, threshold=threshold, eval_status=status)


def set_result(
    *cases: EvalCaseResult, path: str | None = "sets/travel.evalset.json"
) -> EvalSetResult:
    return EvalSetResult(
        eval_set_result_id="r1",
        eval_set_id="travel",
        eval_case_results=list(cases),
        assay=SetNotes(version="0", eval_set_path=path),
    )


PASSING = EvalCaseResult(
    eval_set_id="travel",
    eval_id="forecast",
    final_eval_status=EvalStatus.PASSED,
    overall_eval_metric_results=[
        metric("tool_trajectory_avg_score", 1.0, 1.0, EvalStatus.PASSED),
        metric("response_match_score", 0.93921, 0.8, EvalStatus.PASSED),
    ],
)
FAILING = EvalCaseResult(
    eval_set_id="travel",
    eval_id="booking",
    final_eval_status=EvalStatus.FAILED,
    overall_eval_metric_results=[
        metric("tool_trajectory_avg_score", 0.5, 1.0, EvalStatus.FAILED),
        metric("final_response_match_v2", None, 0.7, EvalStatus.NOT_EVALUATED),
    ],
    assay=CaseNotes(metric_reasons={"final_response_match_v2": "not implemented yet"}),
)


def test_the_table_shows_each_cases_metrics_with_score_threshold_and_status() -> None:
    output = render(results_table(set_result(PASSING, FAILING), width=240))

    assert has_row(output, "forecast", "", "", "PASSED", "")
    assert has_row(output, "tool_trajectory_avg_score", "1.00", "1.00", "PASSED")
    assert has_row(output, "response_match_score", "0.94", "0.80", "PASSED")
    assert has_row(output, "booking", "", "", "FAILED", "")
    assert has_row(output, "tool_trajectory_avg_score", "0.50", "1.00", "FAILED")
    assert has_row(
        output, "final_response_match_v2", "-", "0.70", "NOT_EVALUATED", "not implemented yet"
    )
    for header in ("Case / metric", "Score", "Threshold", "Status", "Why"):
        assert header in output
    assert "travel  (sets/travel.evalset.json)" in output


def test_each_cases_status_is_on_its_own_row_beside_its_id() -> None:
    output = render(results_table(set_result(PASSING, FAILING), width=240))

    assert re.search(r"│ forecast\s+│\s+│\s+│ PASSED\s+│", output)
    assert re.search(r"│ booking\s+│\s+│\s+│ FAILED\s+│", output)


def test_a_case_without_metric_results_shows_its_reason() -> None:
    case = EvalCaseResult(
        eval_id="lonely",
        final_eval_status=EvalStatus.NOT_EVALUATED,
        assay=CaseNotes(reason="no trace for this case in t.json"),
    )

    output = render(results_table(set_result(case), width=240))

    assert has_row(output, "lonely", "", "", "NOT_EVALUATED", "no trace for this case in t.json")


def test_a_case_not_evaluated_for_one_reason_says_it_once_on_one_row() -> None:
    """Not on each of its metrics' rows, as a case with no trace once did on 12."""
    reason = "no trace for this case in t.json"
    names = ["tool_trajectory_avg_score", "response_match_score", "safety_v1"]
    case = EvalCaseResult(
        eval_id="untraced",
        final_eval_status=EvalStatus.NOT_EVALUATED,
        overall_eval_metric_results=[
            metric(name, None, 0.5, EvalStatus.NOT_EVALUATED) for name in names
        ],
        assay=CaseNotes(reason=reason, metric_reasons=dict.fromkeys(names, reason)),
    )

    for width in (80, 120, 200):
        output = render(results_table(set_result(case), width=width))
        assert flat(output).count(reason) == 1, width
        assert not any(name in output for name in names)


def test_a_case_level_reason_no_metric_explains_is_shown_under_the_case() -> None:
    case = EvalCaseResult(
        eval_id="short",
        final_eval_status=EvalStatus.NOT_EVALUATED,
        overall_eval_metric_results=[metric("reference_free", 1.0, 0.5, EvalStatus.PASSED)],
        assay=CaseNotes(reason="expected 2 invocations, got 1"),
    )
    explained = case.model_copy(
        update={
            "assay": CaseNotes(
                reason="expected 2 invocations, got 1",
                metric_reasons={"reference_free": "expected 2 invocations, got 1"},
            )
        }
    )

    output = render(results_table(set_result(case)))
    once = render(results_table(set_result(explained)))

    assert re.search(r"│ expected 2 invocations, got 1\s+│", output)
    assert once.count("expected 2 invocations, got 1") == 1  # on the case's row only


def test_agent_text_with_rich_markup_is_shown_literally_in_the_detail_table() -> None:
    actual = invocation(
        f"prompt {MARKUP}", f"answer {MARKUP}", [{"name": "t", "args": {"q": MARKUP}}]
    )
    expected = invocation("p", f"expected {MARKUP}", [{"name": "t", "args": {"q": "[/]"}}])
    case = EvalCaseResult(
        eval_set_id="travel",
        eval_id="markup",
        final_eval_status=EvalStatus.PASSED,
        overall_eval_metric_results=[metric("response_match_score", 1.0, 0.5, EvalStatus.PASSED)],
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(
                actual_invocation=actual,
                expected_invocation=expected,
                eval_metric_results=[metric("response_match_score", 1.0, 0.5, EvalStatus.PASSED)],
            )
        ],
    )

    output = render(detail_table(case))

    assert f"prompt {MARKUP}" in output
    assert f"answer {MARKUP}" in output
    assert f"expected {MARKUP}" in output
    assert 't({"q": "[bold]x[/]"})' in output
    assert 't({"q": "[/]"})' in output


def test_ids_names_and_reasons_with_rich_markup_are_shown_literally() -> None:
    case = EvalCaseResult(
        eval_set_id="set[/]",
        eval_id=f"case {MARKUP}",
        final_eval_status=EvalStatus.NOT_EVALUATED,
        overall_eval_metric_results=[metric(f"m {MARKUP}", None, 0.5, EvalStatus.NOT_EVALUATED)],
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(
                actual_invocation=invocation("q", "a"),
                eval_metric_results=[metric(f"m {MARKUP}", None, 0.5, EvalStatus.NOT_EVALUATED)],
            )
        ],
        assay=CaseNotes(metric_reasons={f"m {MARKUP}": f"raised {MARKUP}"}),
    )
    result = EvalSetResult(
        eval_set_result_id="r",
        eval_set_id="set[/]",
        eval_case_results=[case],
        assay=SetNotes(version="0", eval_set_path="[red]p.json"),
    )

    output = render(results_table(result), detail_table(case))

    assert "set[/]  ([red]p.json)" in output
    assert "set[/] / case [bold]x[/]" in output
    assert has_row(output, f"m {MARKUP}", "-", "0.50", "NOT_EVALUATED")
    assert f"raised {MARKUP}" in output
    assert "m [bold]x[/]: NOT_EVALUATED -" in output  # the detail table's verdict line


def test_print_results_prints_each_set_then_the_summary_and_details_only_when_asked() -> None:
    row = EvalMetricResultPerInvocation(
        actual_invocation=invocation("What's the weather?", "Rain"),
        eval_metric_results=[metric("response_match_score", 0.93921, 0.8, EvalStatus.PASSED)],
    )
    case = PASSING.model_copy(update={"eval_metric_result_per_invocation": [row]})
    results = [set_result(case), set_result(FAILING).model_copy(update={"eval_set_id": "other"})]
    summary = RunSummary(passed=1, failed=1)

    def printed(detailed: bool) -> str:
        console = Console(file=io.StringIO(), width=240, color_system=None, highlight=False)
        print_results(console, results, summary, detailed=detailed)
        text = console.file.getvalue()  # type: ignore[attr-defined]
        assert isinstance(text, str)
        return text

    plain, detailed = printed(False), printed(True)

    assert plain.rstrip().endswith("1 passed, 1 failed, 0 not evaluated; failed: booking")
    assert plain.index("travel  (") < plain.index("other  (")
    assert "travel / forecast" not in plain
    assert "travel / forecast" in detailed
    assert "What's the weather?" in detailed
    assert "travel / booking" not in detailed  # no invocations, no detail table


def test_scores_show_two_decimals_and_a_missing_score_a_dash() -> None:
    assert [format_score(s) for s in (None, 1, 0.93921, 0.0)] == ["-", "1.00", "0.94", "0.00"]


def test_a_score_below_its_threshold_never_reads_as_reaching_it() -> None:
    assert format_score(0.7996, 0.8) == "0.79"  # rounding would say 0.80
    assert format_score(0.8, 0.8) == "0.80"
    assert format_score(0.8696, 0.6) == "0.87"


def test_status_and_summary_markup_render_as_plain_words() -> None:
    assert render(status_text(EvalStatus.NOT_EVALUATED)).strip() == "NOT_EVALUATED"
    assert render(summary_line(RunSummary(passed=4, failed=0, not_evaluated=2))).strip() == (
        "4 passed, 0 failed, 2 not evaluated"
    )


def _many(passed: int, failed: int) -> EvalSetResult:
    """A set of ``passed`` passing then ``failed`` failing cases, named by number."""
    cases = [PASSING.model_copy(update={"eval_id": f"pass_{i}"}) for i in range(passed)] + [
        FAILING.model_copy(update={"eval_id": f"fail_{i}"}) for i in range(failed)
    ]
    return set_result(*cases)


def test_a_set_within_max_cases_lists_every_case() -> None:
    output = render(results_table(_many(3, 2), max_cases=5))

    assert all(f"pass_{i}" in output for i in range(3)) and "fail_1" in output
    assert "lists every case" not in output  # no caption: nothing left out


def test_a_larger_set_lists_only_its_cases_that_did_not_pass_up_to_max_cases() -> None:
    output = render(results_table(_many(8, 4), max_cases=3))

    assert "pass_" not in output
    assert "fail_0" in output and "fail_2" in output and "fail_3" not in output
    assert "3 of the 4 cases that did not pass, of 12 (--max-cases 0 lists every case)" in output


def test_max_cases_zero_lists_every_case_of_a_large_set() -> None:
    output = render(results_table(_many(60, 1), max_cases=0))

    assert "pass_0" in output and "pass_59" in output and "fail_0" in output


def test_the_table_per_metric_counts_statuses_and_averages_scores_over_every_case() -> None:
    na = PASSING.model_copy(
        update={"eval_id": "scenario", "assay": CaseNotes(not_applicable=["response_match_score"])}
    )
    output = render(metrics_table(set_result(PASSING, PASSING, FAILING, na)))

    assert "travel  (sets/travel.evalset.json): 4 cases" in output
    # trajectory: 1.0, 1.0, 0.5 and the scenario's 1.0
    assert has_row(output, "tool_trajectory_avg_score", "3", "1", "0", "0.88")
    # the scenario's row is not applicable: left out of the counts and the mean
    assert has_row(output, "response_match_score", "2", "0", "0", "0.94")
    assert has_row(output, "final_response_match_v2", "0", "0", "1", "-")


def test_print_results_shows_a_large_set_per_metric_then_its_cases_that_did_not_pass() -> None:
    results = [_many(60, 2)]
    console = Console(file=io.StringIO(), width=240, color_system=None, highlight=False)

    print_results(console, results, RunSummary(passed=60, failed=2), detailed=True, max_cases=50)

    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert text.index("62 cases") < text.index("fail_0")
    assert "pass_0" not in text
    assert text.rstrip().endswith("60 passed, 2 failed, 0 not evaluated; failed: fail_0, fail_1")


def test_a_large_set_whose_every_case_passed_lists_none_and_says_so() -> None:
    console = Console(file=io.StringIO(), width=240, color_system=None, highlight=False)

    print_results(console, [_many(60, 0)], RunSummary(passed=60), max_cases=50)

    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "60 cases" in text  # the table per metric
    assert "all 60 cases passed (--max-cases 0 lists every case)" in text
    assert "pass_0" not in text and "Threshold" not in text  # no empty case table


def test_an_informational_metric_with_no_value_is_shown_with_why() -> None:
    case = EvalCaseResult(
        eval_id="plain",
        final_eval_status=EvalStatus.PASSED,
        overall_eval_metric_results=[
            metric("token_usage_v1", None, 0.0, EvalStatus.INFORMATIONAL).model_copy(
                update={"threshold": None}
            )
        ],
    )
    output = render(results_table(set_result(case), width=240))
    assert has_row(output, "per turn", "", "", "", "tokens -")
    assert "INFORMATIONAL" not in output and "token_usage_v1" not in output
    assert "tokens -: the agent reports no token usage" in flat(output)


# --- the judge line ---------------------------------------------------------------------------


def _judged_set(judges: dict[str, Any]) -> EvalSetResult:
    from assay.results.model import JudgeInfo

    result = set_result(PASSING)
    assert result.assay is not None
    result.assay.judges = {name: JudgeInfo.model_validate(info) for name, info in judges.items()}
    return result


def test_the_judge_line_names_each_judge_in_words_with_why_it_was_chosen() -> None:
    from assay.report.console import judges_line

    embedded = (
        "embedded Qwen2.5-Coder-1.5B-Instruct Q4_K_M "
        "(no --judge-model, no ASSAY_JUDGE_MODEL, no Gemini credentials)"
    )
    info = {"model": "local:", "source": "embedded", "backend": "local", "description": embedded}
    line = judges_line(
        _judged_set(
            {
                "final_response_match_v2": info,
                "safety_v1": info,
                "user_simulator": {
                    "model": "openai:gpt-4o",
                    "source": "config",
                    "description": "openai:gpt-4o (from the config)",
                },
                "hallucinations_v1": {"unavailable": "no judge model: pass --judge-model"},
            }
        )
    )

    assert line is not None
    assert render(line).splitlines() == [
        f"judge {embedded}: final_response_match_v2, safety_v1",
        "judge openai:gpt-4o (from the config): user_simulator",
        "no judge: hallucinations_v1",
    ]


def test_the_judge_line_describes_the_judges_of_results_written_before_descriptions() -> None:
    from assay.report.console import judges_line

    line = judges_line(
        _judged_set({"safety_v1": {"model": "openai:gpt-4o-mini", "source": "--judge-model"}})
    )
    assert line is not None
    assert render(line).strip() == "judge openai:gpt-4o-mini (from --judge-model): safety_v1"


# --- how far each judge agrees with people ----------------------------------------------------


def _agreement(
    kappa: float | None, labels: int = 60, interval: tuple[float, float] | None = None
) -> dict[str, Any]:
    return {
        "labels": labels,
        "judged": labels,
        "agreement": 0.82,
        "kappa": kappa,
        "kappa_interval": interval,
        "prompt_version": "abcdef012345",
        "card_date": "2026-03-01T12:00:00Z",
        "labels_file": "team/labels.yaml",
    }


def test_each_judged_metric_says_how_far_its_judge_agrees_in_the_same_words_as_every_view() -> None:
    from assay.report.console import agreement_lines

    judge = {"model": "openai:gpt-4o-mini", "source": "--judge-model"}
    bundled = {**_agreement(0.06, 34, (0.0, 0.21)), "bundled": True}
    bundled["labels_file"] = "benchmarks/judge_agreement/labelled/test.labels.yaml"
    lines = agreement_lines(
        _judged_set(
            {
                "final_response_match_v2": {**judge, "agreement": _agreement(0.61, 120)},
                "safety_v1": {**judge, "agreement": bundled},
                "hallucinations_v1": {**judge, "agreement": _agreement(None, 8)},
                "rubric_based_tool_use_quality_v1": {
                    **judge,
                    "agreement": _agreement(-0.2, 60, (-0.4, -0.05)),
                },
                "rubric_based_final_response_quality_v1": judge,  # never measured
                "multi_turn_task_success_v1": {**judge, "other_prompt_version": "0123456789ab"},
                "user_simulator": judge,  # the simulated user is no judge
                "per_turn_user_simulator_quality_v1": {"unavailable": "no judge model"},
            }
        )
    )

    assert [render(line).strip() for line in lines] == [
        "final_response_match_v2: judge agrees with people on 82% (kappa 0.61; 120 labels, "
        "team/labels.yaml): good agreement",
        "safety_v1: judge agrees with people on 82% (kappa 0.06 [+0.00, +0.21]; 34 labels, "
        "benchmarks/judge_agreement test half): at chance on this criterion: a smoke test, not "
        "a decision",
        "hallucinations_v1: judge agreed with people on 7 of 8 labels (kappa undefined; "
        "team/labels.yaml): too few labels to tell (20 needed)",
        "rubric_based_tool_use_quality_v1: judge agrees with people on 82% (kappa -0.20 [-0.40, "
        "-0.05]; 60 labels, team/labels.yaml): worse than chance on this criterion: a smoke "
        "test, not a decision",
        "judge agreement measured for the default prompt, not this configuration: "
        "multi_turn_task_success_v1 (assay judge agree LABELS measures it)",
        "judge agreement not measured: rubric_based_final_response_quality_v1 (assay judge "
        "agree LABELS measures it)",
    ]


def test_a_set_whose_metrics_had_no_judge_has_no_agreement_lines() -> None:
    from assay.report.console import agreement_lines

    assert agreement_lines(set_result(PASSING)) == []
    assert agreement_lines(_judged_set({"safety_v1": {"unavailable": "no judge model"}})) == []


def test_a_scenario_no_criterion_applies_to_says_why_on_its_row() -> None:
    reason = "not applicable: needs expected invocations; this case is a scenario"
    names = ["tool_trajectory_avg_score", "response_match_score"]
    case = EvalCaseResult(
        eval_id="scenario",
        final_eval_status=EvalStatus.NOT_EVALUATED,
        overall_eval_metric_results=[
            metric(name, None, 0.5, EvalStatus.NOT_EVALUATED) for name in names
        ],
        assay=CaseNotes(not_applicable=names, metric_reasons=dict.fromkeys(names, reason)),
    )
    output = render(results_table(set_result(case), width=240))
    assert has_row(
        output,
        "scenario",
        "",
        "",
        "NOT_EVALUATED",
        "no configured criterion applies to this case (tool_trajectory_avg_score, "
        "response_match_score: needs expected invocations; this case is a scenario)",
    )


def test_judges_that_cost_nothing_print_no_cost_line_and_priced_ones_do() -> None:
    from compare._results import case, eval_set, scored

    from assay.llm.base import TokenUsage
    from assay.report.console import cost_line

    result = eval_set("s", case("a", {"m": scored(1.0)}))
    assert result.assay is not None
    result.assay.usage = {"m": TokenUsage(prompt_tokens=10, completion_tokens=2, calls=1)}
    result.assay.cost_usd = {"m": 0.0}  # the embedded judge
    assert cost_line([result]) is None
    result.assay.cost_usd = {"m": 0.5}
    assert cost_line([result]) == "judge cost: $0.50"
