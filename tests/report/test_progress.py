"""The run's progress: live on a terminal, one plain line per case elsewhere."""

from __future__ import annotations

import io
import re
import time

from rich.console import Console

from assay.llm.base import TokenUsage
from assay.llm.slots import ACTIVITY
from assay.metrics.base import EvalStatus
from assay.metrics.notes import MetricNotes
from assay.report.progress import CallCounter, RunProgress, RunUpdate, case_usage, elapsed_text
from assay.results.model import CaseNotes, EvalCaseResult


def _case(eval_id: str, calls: int, *, run: int = 1, simulated: int = 0) -> EvalCaseResult:
    notes = CaseNotes(
        run=run,
        metrics={
            "safety_v1": MetricNotes(
                judge_model="m",
                usage=TokenUsage(prompt_tokens=100 * calls, calls=calls, cache_hits=1),
            )
        },
        simulator_usage=TokenUsage(completion_tokens=5, calls=simulated) if simulated else None,
    )
    return EvalCaseResult(
        eval_set_id="travel",
        eval_id=eval_id,
        final_eval_status=EvalStatus.PASSED,
        assay=notes,
    )


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120, highlight=False), out


def test_a_case_s_usage_adds_its_judges_and_its_simulated_user() -> None:
    usage = case_usage(_case("a", 3, simulated=2))
    assert (usage.calls, usage.cache_hits, usage.total_tokens) == (5, 1, 305)


def test_without_a_terminal_each_finished_case_is_one_plain_line() -> None:
    console, out = _console(terminal=False)
    with RunProgress(console, 2) as progress:
        progress.case_done(None, _case("greeting", 2))
        progress.case_done(None, _case("<b>booking</b>", 1, run=2))
    lines = out.getvalue().splitlines()
    assert lines == [  # no call was made in this process: the calls are the cases' own
        "[1/2] travel / greeting PASSED · 2 LLM calls, 1 cached, 0 retries, 200 tokens · "
        "calls 2/~4",
        "[2/2] travel / <b>booking</b> (run 2) PASSED · 1 LLM call, 1 cached, 0 retries, "
        "100 tokens · calls 3/3",
    ]
    assert "\x1b[" not in out.getvalue()
    assert progress.done == 2 and progress.usage.calls == 3


def test_a_log_line_shows_markup_literally_and_is_never_wrapped() -> None:
    console, out = _console(terminal=False)  # 120 columns
    eval_id = "[bold]x[/]_" + "y" * 200
    with RunProgress(console, 1) as progress:
        progress.case_done(None, _case(eval_id, 1))

    [line] = out.getvalue().splitlines()
    assert line.startswith(f"[1/1] travel / {eval_id} PASSED")


def test_on_a_terminal_a_live_bar_counts_cases_and_leaves_no_log_lines() -> None:
    console, out = _console(terminal=True)
    with RunProgress(console, 3) as progress:
        assert progress.live
        progress.case_done(None, _case("a", 1))
        progress.case_done(None, _case("b", 2))
    shown = out.getvalue()
    assert "[1/3] travel / a" not in shown  # no per-case log lines on a terminal
    assert progress.done == 2 and progress.usage.calls == 3


def test_without_a_terminal_a_heartbeat_line_says_the_run_is_alive_while_nothing_finishes() -> None:
    console, out = _console(terminal=False)
    ACTIVITY.in_flight, ACTIVITY.waiting = 1, 23
    try:
        with RunProgress(console, 5, heartbeat_s=0.1) as progress:
            time.sleep(0.35)
            progress.case_done(None, _case("greeting", 1))
            silent = out.getvalue().count("running:")
            time.sleep(0.05)  # under one interval after a case line: no heartbeat yet
            assert out.getvalue().count("running:") == silent
    finally:
        ACTIVITY.in_flight, ACTIVITY.waiting = 0, 0
    lines = out.getvalue().splitlines()
    beats = [line for line in lines if "running:" in line]
    assert 2 <= len(beats) <= 4
    assert re.fullmatch(
        r"\[0/5\] running: 1 LLM call in flight, 23 waiting · calls 0/24 so far · 0s elapsed",
        beats[0],
    )
    assert lines[len(beats)].startswith("[1/5] travel / greeting PASSED")


def test_the_heartbeat_stops_with_the_run_and_zero_turns_it_off() -> None:
    console, out = _console(terminal=False)
    with RunProgress(console, 1, heartbeat_s=0.05):
        time.sleep(0.12)
    written = out.getvalue()
    time.sleep(0.15)
    assert out.getvalue() == written and "running:" in written  # nothing after the run ended

    console, out = _console(terminal=False)
    with RunProgress(console, 1, heartbeat_s=0):
        time.sleep(0.1)
    assert out.getvalue() == ""


def test_elapsed_time_reads_in_seconds_minutes_or_hours() -> None:
    assert [elapsed_text(s) for s in (0.4, 42, 185, 3725)] == ["0s", "42s", "3m 05s", "1h 02m"]


def test_calls_done_out_of_all_and_an_eta_from_the_mean_measured_call_time() -> None:
    saved = (ACTIVITY.done, ACTIVITY.busy_s, ACTIVITY.in_flight, ACTIVITY.waiting)
    try:
        counter = CallCounter(10)
        nothing = counter.update()
        assert nothing.calls_text() == "" and nothing.eta_s is None  # no call yet: nothing said
        ACTIVITY.done += 4
        ACTIVITY.busy_s += 8.0  # 2 s a call, one slot (no client is busy: one is assumed)
        ACTIVITY.in_flight, ACTIVITY.waiting = 1, 6
        before = counter.update()
        assert (before.calls_done, before.calls_total, before.calls_basis) == (4, 11, "so far")
        assert before.eta_s == 14.0
        assert before.calls_text() == "calls 4/11 so far · ETA at least 14s"

        counter.case_done(TokenUsage(calls=4, retries=1))  # 5 calls a case, 10 cases: ~50
        after = counter.update(_case("greeting", 4))
        assert (after.calls_total, after.calls_basis, after.cases_done) == (50, "estimated", 1)
        assert after.eta_s == 92.0 and after.case is not None
        assert after.calls_text() == "calls 4/~50 · ETA 1m 32s"
    finally:
        ACTIVITY.done, ACTIVITY.busy_s, ACTIVITY.in_flight, ACTIVITY.waiting = saved


def test_at_the_end_the_calls_total_is_exact_and_no_eta_is_shown() -> None:
    update = RunUpdate(5, 5, 42, 42, "final", 0.0, 12.0)
    assert update.calls_text() == "calls 42/42"


def test_judge_batches_are_a_log_line_per_change_of_state_and_on_the_terminal_bar() -> None:
    from assay.llm.batch import BatchProgress

    console, out = _console(terminal=False)
    with RunProgress(console, 5, heartbeat_s=0) as progress:
        progress.batches(BatchProgress(submitted=1, running=1, lines=40))
        progress.batches(BatchProgress(submitted=1, running=1, lines=40, retried=1))  # same state
        progress.batches(BatchProgress(submitted=1, done=1, lines=40, lines_done=40, retried=2))
    assert out.getvalue().splitlines() == [
        "[0/5] batches: 1 submitted, 1 running, 0 done · lines 0/40 done",
        "[0/5] batches: 1 submitted, 0 running, 1 done · lines 40/40 done, 2 sent one at a time",
    ]

    console, out = _console(terminal=True)
    with RunProgress(console, 5, heartbeat_s=0) as progress:
        progress.batches(BatchProgress(submitted=2, resumed=1, running=3, lines=90))
    assert "batches: 2 submitted, 3 running, 0 done (1 resumed)" in out.getvalue()  # on the bar
