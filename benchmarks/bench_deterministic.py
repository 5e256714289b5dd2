"""Benchmark assay's deterministic metrics against google-adk 2.13.0's, on the same data.

    .venv/bin/python benchmarks/bench_deterministic.py [--n 10000] [--seed 0] [--repeat 1]

Generates ``--n`` realistic invocation pairs (0-6 tool calls with small nested args; responses of
5-60 words, mostly English with some accented and CJK text; references sharing words with the
responses), grouped into cases of 1-5 invocations. Every case is built from the same JSON into
assay's models and ADK's before any timing starts; only the scoring is timed:
``ToolTrajectoryMetric`` / ``ResponseMatchMetric`` ``evaluate`` against ADK's
``TrajectoryEvaluator`` / ``RougeEvaluator`` ``evaluate_invocations``. assay's token and stemmer
caches are cleared first, so its figures are for a cold start.

Every per-invocation score and status (and every overall one) must agree; the script exits 1
when one does not. It prints seconds per criterion and the ratio assay/ADK.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import BaseCriterion as AdkBaseCriterion
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import (
    ToolTrajectoryCriterion as AdkToolTrajectoryCriterion,
)
from google.adk.evaluation.evaluator import EvaluationResult as AdkEvaluationResult
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from assay.config import BaseCriterion, MatchType, ToolTrajectoryCriterion
from assay.evalset import EvalCase, Invocation
from assay.metrics import MetricResult, ResponseMatchMetric, ToolTrajectoryMetric
from assay.metrics import rouge as assay_rouge

Json = Any

TRAJECTORY = "tool_trajectory_avg_score"
RESPONSE = "response_match_score"
MATCH_TYPES = ("EXACT", "IN_ORDER", "ANY_ORDER")
TRAJECTORY_THRESHOLD = 1.0
RESPONSE_THRESHOLD = 0.8

# --------------------------------------------------------------------------- data

_ENGLISH_TEXT = """
the a an of to in and or for with on at from by about as is are was were be been being
have has had do does did will would can could should may might must this that these those
it its we you they he she i me my your our their weather forecast today tomorrow sunny
rain rainy cloudy temperature degrees celsius flight flights booking booked hotel hotels
room rooms price prices order orders shipped delivered tracking number account payment
refund request requested search searching results found available unavailable city cities
paris london tokyo berlin madrid ticket tickets departure arrival morning evening night
restaurant reservation table people person time date please thank thanks help helping
checked checking running updated updating information details summary report customer
support question answer answers recommend recommended option options best cheapest fastest
"""
_ENGLISH = _ENGLISH_TEXT.split()
_ACCENTED_TEXT = "café résumé naïve déjà señor mañana über straße größe crème brûlée façade"
_ACCENTED = _ACCENTED_TEXT.split()
_CJK = ["天气很好", "东京", "今日は晴れです", "ありがとう", "예약", "확인했습니다", "北京", "酒店"]
_PUNCT = [".", ",", "!", "?", ":", ";"]

_TOOLS = {
    "get_weather": lambda r: {"city": r.choice(["Paris", "Tokyo", "Berlin"]), "units": "metric"},
    "search_flights": lambda r: {
        "from": r.choice(["CDG", "LHR", "HND"]),
        "to": r.choice(["JFK", "SFO"]),
        "passengers": {"adults": r.randint(1, 3), "children": r.randint(0, 2)},
    },
    "book_hotel": lambda r: {
        "city": r.choice(["Paris", "Madrid"]),
        "nights": r.randint(1, 5),
        "filters": {"max_price": r.choice([100, 150.0, 200]), "tags": ["wifi", "breakfast"]},
    },
    "lookup_order": lambda r: {"order_id": f"A{r.randint(1000, 9999)}"},
    "send_email": lambda r: {"to": ["a@example.com"], "subject": "Your booking", "urgent": False},
    "get_stock_price": lambda r: {"symbol": r.choice(["GOOG", "AAPL"])},
    "convert_currency": lambda r: {"amount": r.choice([10, 12.5, 100]), "to": "EUR"},
    "transfer_to_agent": lambda r: {"agent_name": r.choice(["booking_agent", "support_agent"])},
}


def _calls(rng: random.Random) -> list[dict[str, Json]]:
    names = rng.choices(list(_TOOLS), k=rng.randint(0, 6))
    return [{"name": name, "args": _TOOLS[name](rng)} for name in names]


def _actual_calls(rng: random.Random, expected: list[dict[str, Json]]) -> list[dict[str, Json]]:
    calls = json.loads(json.dumps(expected))
    roll = rng.random()
    if roll < 0.08 and calls:
        calls[rng.randrange(len(calls))]["args"]["extra"] = 1
    elif roll < 0.16 and calls:
        del calls[rng.randrange(len(calls))]
    elif roll < 0.24:
        name = rng.choice(list(_TOOLS))
        calls.insert(rng.randint(0, len(calls)), {"name": name, "args": _TOOLS[name](rng)})
    elif roll < 0.32:
        rng.shuffle(calls)
    return calls


def _words(rng: random.Random, count: int) -> list[str]:
    out: list[str] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.07:
            out.append(rng.choice(_ACCENTED))
        elif roll < 0.10:
            out.append(rng.choice(_CJK))
        else:
            word = rng.choice(_ENGLISH)
            out.append(word.capitalize() if rng.random() < 0.1 else word)
        if rng.random() < 0.12:
            out[-1] += rng.choice(_PUNCT)
    return out


def _response_pair(rng: random.Random) -> tuple[str, str]:
    response = _words(rng, rng.randint(5, 60))
    reference = [w if rng.random() < 0.7 else rng.choice(_ENGLISH) for w in response]
    if rng.random() < 0.5:
        reference = reference[: rng.randint(3, len(reference))] + _words(rng, rng.randint(0, 10))
    return " ".join(response), " ".join(reference)


def _events(rng: random.Random, calls: list[dict[str, Json]], text: str) -> Json:
    events: list[Json] = []
    for call in calls:
        events.append(
            {
                "author": "root_agent",
                "content": {"role": "model", "parts": [{"function_call": call}]},
            }
        )
        result = {"name": call["name"], "response": {"result": "ok"}}
        events.append(
            {
                "author": "root_agent",
                "content": {"role": "user", "parts": [{"function_response": result}]},
            }
        )
    events.append({"author": "root_agent", "content": {"role": "model", "parts": [{"text": text}]}})
    return {"invocation_events": events}


def generate(n: int, seed: int) -> list[tuple[list[Json], list[Json]]]:
    """Cases of 1-5 (actual, expected) invocation pairs, ``n`` pairs in all, as JSON."""
    rng = random.Random(seed)
    cases: list[tuple[list[Json], list[Json]]] = []
    left = n
    while left > 0:
        size = min(left, rng.randint(1, 5))
        left -= size
        actual: list[Json] = []
        expected: list[Json] = []
        for i in range(size):
            wanted = _calls(rng)
            made = _actual_calls(rng, wanted)
            response, reference = _response_pair(rng)
            user = {"role": "user", "parts": [{"text": " ".join(_words(rng, 8))}]}
            expected.append(
                {
                    "invocation_id": f"e{i}",
                    "user_content": user,
                    "final_response": {"role": "model", "parts": [{"text": reference}]},
                    "intermediate_data": {"tool_uses": wanted},
                }
            )
            actual.append(
                {
                    "invocation_id": f"a{i}",
                    "user_content": user,
                    "final_response": {"role": "model", "parts": [{"text": response}]},
                    "intermediate_data": _events(rng, made, response),
                }
            )
        cases.append((actual, expected))
    return cases


# --------------------------------------------------------------------------- scoring


@dataclass
class Row:
    criterion: str
    assay_s: float
    adk_s: float

    @property
    def ratio(self) -> float:
        return self.assay_s / self.adk_s if self.adk_s else float("inf")


@dataclass
class Report:
    invocations: int
    cases: int
    rows: list[Row] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    compared: int = 0

    @property
    def agree(self) -> bool:
        return not self.mismatches and self.compared > 0

    @property
    def combined(self) -> Row:
        return Row(
            "combined",
            sum(r.assay_s for r in self.rows),
            sum(r.adk_s for r in self.rows),
        )


@dataclass
class _Built:
    ours: list[tuple[list[Invocation], list[Invocation], EvalCase]]
    adk: list[tuple[list[AdkInvocation], list[AdkInvocation]]]


def _build(cases: list[tuple[list[Json], list[Json]]]) -> _Built:
    text = json.dumps(cases)
    ours, adk = json.loads(text), json.loads(text)
    built = _Built([], [])
    for actual, expected in ours:
        exp = [Invocation.model_validate(x) for x in expected]
        act = [Invocation.model_validate(x) for x in actual]
        built.ours.append((act, exp, EvalCase(eval_id="c", conversation=exp)))
    for actual, expected in adk:
        built.adk.append(
            (
                [AdkInvocation.model_validate(x) for x in actual],
                [AdkInvocation.model_validate(x) for x in expected],
            )
        )
    return built


_OUR_TRAJECTORY = [
    ToolTrajectoryMetric(
        ToolTrajectoryCriterion(threshold=TRAJECTORY_THRESHOLD, match_type=MatchType[m])
    )
    for m in MATCH_TYPES
]
_OUR_RESPONSE = ResponseMatchMetric(BaseCriterion(threshold=RESPONSE_THRESHOLD))


def _adk_evaluators() -> tuple[list[TrajectoryEvaluator], RougeEvaluator]:
    trajectory = [
        TrajectoryEvaluator(
            eval_metric=AdkEvalMetric(
                metric_name=TRAJECTORY,
                threshold=TRAJECTORY_THRESHOLD,
                criterion=AdkToolTrajectoryCriterion(threshold=TRAJECTORY_THRESHOLD, match_type=m),
            )
        )
        for m in MATCH_TYPES
    ]
    rouge = RougeEvaluator(
        AdkEvalMetric(
            metric_name=RESPONSE,
            threshold=RESPONSE_THRESHOLD,
            criterion=AdkBaseCriterion(threshold=RESPONSE_THRESHOLD),
        )
    )
    return trajectory, rouge


async def _score_ours(criterion: str, built: _Built, results: list[MetricResult]) -> None:
    # The results go into a list, not out as the coroutine's value: asyncio.run (3.11) builds
    # the repr of its main task, result included, when it restores the SIGINT handler.
    if criterion == TRAJECTORY:
        for index, (act, exp, case) in enumerate(built.ours):
            results.append(await _OUR_TRAJECTORY[index % len(MATCH_TYPES)].evaluate(act, exp, case))
    else:
        metric = _OUR_RESPONSE
        for act, exp, case in built.ours:
            results.append(await metric.evaluate(act, exp, case))


def _score_adk(criterion: str, built: _Built) -> list[AdkEvaluationResult]:
    trajectory, rouge = _adk_evaluators()
    results: list[Any] = []
    if criterion == TRAJECTORY:
        for index, (act, exp) in enumerate(built.adk):
            evaluator = trajectory[index % len(MATCH_TYPES)]
            results.append(evaluator.evaluate_invocations(act, exp))
    else:
        for act, exp in built.adk:
            results.append(rouge.evaluate_invocations(act, exp))
    return results


def _compare(
    criterion: str,
    ours: Sequence[MetricResult],
    adk: Sequence[AdkEvaluationResult],
    report: Report,
) -> None:
    for index, (mine, theirs) in enumerate(zip(ours, adk, strict=True)):
        where = f"{criterion} case {index}"
        if (
            mine.score != theirs.overall_score
            or int(mine.status) != theirs.overall_eval_status.value
        ):
            report.mismatches.append(
                f"{where}: overall {mine.score!r}/{mine.status.name} != "
                f"ADK {theirs.overall_score!r}/{theirs.overall_eval_status.name}"
            )
        if len(mine.per_invocation) != len(theirs.per_invocation_results):
            report.mismatches.append(f"{where}: a different number of per-invocation results")
            continue
        pairs = zip(mine.per_invocation, theirs.per_invocation_results, strict=True)
        for i, (a, b) in enumerate(pairs):
            report.compared += 1
            if a.score != b.score or int(a.status) != b.eval_status.value:
                report.mismatches.append(
                    f"{where} invocation {i}: {a.score!r}/{a.status.name} != "
                    f"ADK {b.score!r}/{b.eval_status.name}"
                )


def _time_ours(criterion: str, built: _Built) -> tuple[float, list[MetricResult]]:
    assay_rouge.clear_caches()
    start = time.perf_counter()
    results: list[MetricResult] = []
    asyncio.run(_score_ours(criterion, built, results))
    return time.perf_counter() - start, results


def _time_adk(criterion: str, built: _Built) -> tuple[float, list[AdkEvaluationResult]]:
    start = time.perf_counter()
    results = _score_adk(criterion, built)
    return time.perf_counter() - start, results


def _first(timed: tuple[float, Any]) -> float:
    return timed[0]


def run(n: int = 10_000, seed: int = 0, repeat: int = 1) -> Report:
    """Generate, build, time (best of ``repeat``) and compare; the figures and any disagreement."""
    # warm both up (lazy pydantic schemas, imports, first calls) on different data
    warm = _build(generate(50, seed + 1))
    for criterion in (TRAJECTORY, RESPONSE):
        _time_ours(criterion, warm)
        _time_adk(criterion, warm)

    cases = generate(n, seed)
    built = _build(cases)
    report = Report(invocations=n, cases=len(cases))
    for criterion in (TRAJECTORY, RESPONSE):
        assay_s, ours = min((_time_ours(criterion, built) for _ in range(repeat)), key=_first)
        adk_s, adk = min((_time_adk(criterion, built) for _ in range(repeat)), key=_first)
        report.rows.append(Row(criterion, assay_s, adk_s))
        _compare(criterion, ours, adk, report)
    return report


def _print(report: Report, seed: int) -> None:
    print(f"{report.invocations} invocation pairs in {report.cases} cases (seed {seed})")
    print(f"{'criterion':<28}{'assay s':>10}{'ADK s':>10}{'ratio':>8}")
    for row in [*report.rows, report.combined]:
        print(f"{row.criterion:<28}{row.assay_s:>10.3f}{row.adk_s:>10.3f}{row.ratio:>8.3f}")
    if report.agree:
        print(f"agreement: all {report.compared} per-invocation scores and statuses agree with ADK")
    else:
        print(f"DISAGREEMENT: {len(report.mismatches)} results differ from ADK")
        for line in report.mismatches[:10]:
            print(f"  {line}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=10_000, help="invocation pairs (default 10000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat", type=int, default=1, help="time each side N times, keep the best"
    )
    args = parser.parse_args(argv)
    report = run(args.n, args.seed, max(args.repeat, 1))
    _print(report, args.seed)
    return 0 if report.agree else 1


if __name__ == "__main__":
    sys.exit(main())
