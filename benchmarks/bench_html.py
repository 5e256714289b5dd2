"""Benchmark: the HTML report of 10,000 synthetic cases, rendered and opened in Chromium.

    .venv/bin/python benchmarks/bench_html.py [--cases 10000] [--seed 0] [--no-browser]

Builds ``--cases`` case results (1-4 invocations each, 1-3 tool calls per invocation with a
mismatch now and then, responses of 5-60 words, a judged rubric metric with one sample and
hallucination sentence labels per invocation, about 70% passed), renders the page with
``render_html`` and writes it, then opens the file in headless Chromium (Debian's, through
chromedriver) and times until the page has loaded and its script has run, then filters the list
by status and opens two cases (the first open also splits the page's block of case bodies).
Targets: render under 10 s, and the page opens.

Measured (2 shared cores with load average ~2 from other work, so figures vary by ~1.5x between
runs; Python 3.11, jinja2 3.1.6, Chromium 156, 10,000 cases, seed 0), before and after the case
bodies became JSON built on open:

    case bodies as HTML in <template>:  page 92.6 MB, render_html 4.1-5.4 s, Chromium load
        12.8-17.8 s, status filter 0.75 s, one case opened in 0.28 s
    case bodies as one JSON block:      page 49.7 MB, render_html 3.2-5.1 s, Chromium load
        3.0-5.4 s, status filter 0.48-0.87 s, first case opened in 0.45-0.51 s, another 0.25 s

Where the bytes went (1,000 cases, ~9.5 KB each): 47% markup, of which ``<div|span|td class>``
tags, per-table headings and ``&#34;`` entities were most; template whitespace was under 1%.
Markup now lives once in the page's script; what remains (~5 KB a case) is 82% the cases' own
text. Load time fell more than size: the old page made Chromium build every case body's DOM
(inside ``<template>``); one JSON text node costs about what the 10,000 case headers alone
cost (a page with one ``<script type="application/json">`` per case instead took 6-13 s).

The script exits 1 when rendering takes 10 s or more, or the page does not open.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.report.html import render_html
from assay.results.model import EvalSetResult

WORDS = [
    "the",
    "flight",
    "to",
    "lisbon",
    "leaves",
    "at",
    "seven",
    "and",
    "costs",
    "eighty",
    "nine",
    "euros",
    "with",
    "one",
    "bag",
]
TOOLS = ("search_flights", "book_flight", "get_forecast", "convert_currency")


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))


def _calls(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"name": rng.choice(TOOLS), "args": {"city": rng.choice(WORDS), "n": rng.randint(1, 3)}}
        for _ in range(rng.randint(1, 3))
    ]


def _invocation(rng: random.Random, i: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "invocation_id": f"i{i}",
        "user_content": {"role": "user", "parts": [{"text": _text(rng)}]},
        "final_response": {"role": "model", "parts": [{"text": _text(rng)}]},
        "intermediate_data": {"tool_uses": calls},
    }


def _case(rng: random.Random, n: int) -> dict[str, Any]:
    status = 1 if rng.random() < 0.7 else rng.choice((2, 3))
    rows = [
        {
            "metric_name": "tool_trajectory_avg_score",
            "threshold": 1.0,
            "eval_status": status,
            "score": 1.0 if status == 1 else rng.random(),
        },
        {
            "metric_name": "rubric_based_final_response_quality_v1",
            "threshold": 0.8,
            "eval_status": 1,
            "score": rng.random(),
        },
    ]
    per_invocation, notes = [], []
    for i in range(rng.randint(1, 4)):
        expected_calls = _calls(rng)
        actual_calls = expected_calls if rng.random() < 0.8 else _calls(rng)
        per_invocation.append(
            {
                "actual_invocation": _invocation(rng, i, actual_calls),
                "expected_invocation": _invocation(rng, i, expected_calls),
                "eval_metric_results": rows,
            }
        )
        rationale = _text(rng)
        notes.append(
            {
                "invocation_id": f"i{i}",
                "samples": [
                    {
                        "sample": 0,
                        "score": 1.0,
                        "verdict": "answers: yes",
                        "text": f'{{"rationale": "{rationale}"}}',
                    }
                ],
                "details": {
                    "rubrics": [
                        {
                            "rubric_id": "answers",
                            "property": "It answers.",
                            "score": 1.0,
                            "verdict": "yes",
                            "rationale": rationale,
                            "votes": {"yes": 1, "no": 0, "none": 0},
                        }
                    ],
                    "steps": [
                        {
                            "kind": "final",
                            "sentences": [
                                {
                                    "sentence": _text(rng),
                                    "label": "supported",
                                    "rationale": rationale,
                                }
                            ],
                        }
                    ],
                },
            }
        )
    return {
        "eval_set_id": "bench",
        "eval_id": f"case_{n:05d}",
        "final_eval_status": status,
        "overall_eval_metric_results": rows,
        "eval_metric_result_per_invocation": per_invocation,
        "assay": {
            "duration_s": rng.random(),
            "metrics": {
                "rubric_based_final_response_quality_v1": {
                    "judge_model": "openai:stub",
                    "usage": {"calls": 1, "prompt_tokens": 300},
                    "per_invocation": notes,
                }
            },
        },
    }


def synthetic(cases: int, seed: int) -> EvalSetResult:
    """An eval-set result of ``cases`` synthetic case results."""
    rng = random.Random(seed)
    return EvalSetResult.model_validate(
        {
            "eval_set_result_id": "bench",
            "eval_set_id": "bench",
            "eval_case_results": [_case(rng, n) for n in range(cases)],
            "assay": {"version": "bench"},
        }
    )


def _browser(page: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    with tempfile.TemporaryDirectory() as profile:
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
        try:
            driver.set_page_load_timeout(120)
            start = time.perf_counter()
            driver.get(page.as_uri())
            count = driver.find_element(By.ID, "shown-count").text
            loaded = time.perf_counter() - start
            start = time.perf_counter()
            Select(driver.find_element(By.ID, "filter-status")).select_by_value("failed")
            filtered = driver.find_element(By.ID, "shown-count").text
            filter_s = time.perf_counter() - start
            shown = driver.find_elements(By.CSS_SELECTOR, "details.case:not([hidden])")
            first_s, next_s = (_open_case(driver, case) for case in (shown[0], shown[-1]))
        finally:
            driver.quit()
    print(
        f"Chromium: loaded in {loaded:.1f} s ({count}); status filter {filter_s:.2f} s "
        f"({filtered}); first case opened in {first_s:.2f} s, another in {next_s:.2f} s"
    )


def _open_case(driver: Any, case: Any) -> float:
    """Seconds from a click on the case's header until its body is in the page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    start = time.perf_counter()
    case.find_element(By.TAG_NAME, "summary").click()
    WebDriverWait(driver, 30, poll_frequency=0.01).until(
        lambda _: case.find_element(By.CSS_SELECTOR, ".case-body")
    )
    return time.perf_counter() - start


def main() -> int:
    """Build, render, write and open the report; 1 when over the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    result = synthetic(args.cases, args.seed)
    invocations = sum(len(c.eval_metric_result_per_invocation) for c in result.eval_case_results)
    print(f"results built in {time.perf_counter() - start:.1f} s ({invocations:,} invocations)")
    start = time.perf_counter()
    page = render_html([result])
    render_s = time.perf_counter() - start
    print(f"render_html: {render_s:.1f} s, page {len(page.encode()) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        path.write_text(page, encoding="utf-8")
        if not args.no_browser:
            _browser(path)
    return 0 if render_s < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
