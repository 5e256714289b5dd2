"""Benchmark judge throughput: assay's judge path and google-adk 2.13.0's against one stub server.

    .venv/bin/python benchmarks/bench_judge_throughput.py [--invocations 200] [--samples 5]
        [--latency-ms 100] [--concurrency 8] [--seed 0] [--no-adk]

Scores ``final_response_match_v2`` on ``--invocations`` generated invocation pairs (one case),
``--samples`` judge calls each, against ``JudgeServer`` (tests/_judge_server.py): a real
OpenAI-compatible HTTP server on 127.0.0.1 that answers every completion after ``--latency-ms``
with a verdict in ADK's JSON format. How many of an invocation's samples say "valid" is drawn from
``--seed``, so the majority vote is exercised and both sides must reach the same scores.

assay runs its full path: ``FinalResponseMatchV2Metric`` -> ``Judge`` -> ``LlmClient`` (cache
off, so every call reaches the server; ``--concurrency`` calls in flight at most) ->
``OpenAICompatBackend``. The ideal wall time is calls x latency / concurrency; the goal is at most
1.25 times that.

ADK runs ``FinalResponseMatchV2Evaluator`` with the judge model ``openai/stub``, which ADK 2.13's
``LLMRegistry`` resolves to its ``LiteLlm`` class; ADK builds the judge with the model name alone,
so the stub's URL reaches LiteLLM through ``OPENAI_BASE_URL`` (set only while ADK runs).
``parallelism_limit`` bounds ADK's concurrent judge calls over one ``evaluate_invocations`` call; it
is set to ``--concurrency``, so both sides may have the same number of calls in flight.
``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set before LiteLLM is imported, so it reads its bundled
price map instead of fetching one. Each side is warmed up on two other invocations first (imports,
connections); only the scoring of the case is timed.

Every per-invocation score and the overall score must agree between the two sides and each side
must make exactly invocations x samples calls; the script exits 1 when one does not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.config import JudgeModelOptions, LlmAsAJudgeCriterion
from assay.evalset import EvalCase, Invocation
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.client import LlmClient
from assay.llm.judge import Judge
from assay.metrics.final_response_match import FinalResponseMatchV2Metric

# the stub server is a test helper, not part of the package
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _judge_server import JudgeServer

Json = Any

METRIC = "final_response_match_v2"
THRESHOLD = 0.5
GOAL = 1.25  # assay's wall time over the ideal
STUB_MODEL = "stub"
_CODE = re.compile(r"\bK(\d{5})\b")

# --------------------------------------------------------------------------- data

_QUESTIONS = [
    "Where is my order?",
    "When will my parcel arrive?",
    "Has my refund been processed?",
    "Which gate does my flight leave from?",
    "Is the blue jacket in stock in size M?",
    "What time does the pharmacy on Main Street close today?",
    "How much is a return ticket to Lyon?",
    "Can I still change my hotel booking?",
]
_REFERENCES = [
    "It shipped on Monday and arrives on Thursday.",
    "Yes, the refund of 39.99 EUR was issued yesterday.",
    "Gate B44, boarding at 16:25.",
    "Yes, two are left in size M.",
    "It closes at 21:00 today.",
    "A return ticket costs 58 EUR.",
    "Yes, free of charge until 48 hours before arrival.",
]
_ANSWERS = [
    "It shipped on Monday and should arrive on Thursday.",
    "The refund of 39.99 EUR went out yesterday.",
    "Your flight boards at gate B44 from 16:25.",
    "Size M is in stock, with two left.",
    "It closes at 9 pm tonight.",
    "A return to Lyon is 58 EUR.",
    "You can change it for free until two days before you arrive.",
]


@dataclass(frozen=True)
class Pair:
    """One invocation pair as JSON, the code its answer carries, and how many of its samples the
    stub answers "valid"."""

    code: int
    actual: Json
    expected: Json
    valid_samples: int


def generate(n: int, samples: int, seed: int, first_code: int = 0) -> list[Pair]:
    """``n`` invocation pairs; each answer carries a code ``K<5 digits>`` the stub keys on."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for i in range(first_code, first_code + n):
        question = rng.choice(_QUESTIONS)
        user = {"role": "user", "parts": [{"text": question}]}
        answer = f"{rng.choice(_ANSWERS)} (ref K{i:05d})"
        reference = rng.choice(_REFERENCES)
        expected = {
            "invocation_id": f"e{i}",
            "user_content": user,
            "final_response": {"role": "model", "parts": [{"text": reference}]},
        }
        actual = {
            "invocation_id": f"a{i}",
            "user_content": user,
            "final_response": {"role": "model", "parts": [{"text": answer}]},
        }
        pairs.append(Pair(i, actual, expected, rng.randint(0, samples)))
    return pairs


class Verdicts:
    """The stub's reply function: the k-th request about code i is "valid" iff k < valid[i].

    Which sample gets which verdict depends on arrival order, but how many of an invocation's
    samples say "valid" does not, so the majority vote (and the score) is the same on both sides.
    """

    def __init__(self, valid: dict[int, int]) -> None:
        self._valid = valid
        self._seen: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        match = _CODE.search(text)
        if match is None:
            raise ValueError("a judge request without an invocation code")
        code = int(match.group(1))
        with self._lock:
            k = self._seen.get(code, 0)
            self._seen[code] = k + 1
        label = "valid" if k < self._valid.get(code, 0) else "invalid"
        return json.dumps({"reasoning": "stub verdict", "is_the_agent_response_valid": label})


@contextlib.contextmanager
def _stub(pairs: Sequence[Pair], latency_s: float) -> Iterator[JudgeServer]:
    valid = {p.code: p.valid_samples for p in pairs}
    with JudgeServer(Verdicts(valid), latency_s=latency_s, model=STUB_MODEL) as server:
        yield server


# --------------------------------------------------------------------------- timing


@dataclass
class Side:
    """One side's figures: wall seconds of the timed scoring, calls the server saw, the most it
    saw at once, and the scores (per invocation, then overall)."""

    name: str
    wall_s: float = 0.0
    calls: int = 0
    max_in_flight: int = 0
    scores: list[float | None] = field(default_factory=list)
    overall: float | None = None
    skipped: str | None = None

    def ratio(self, ideal_s: float) -> float:
        """Wall time over the ideal."""
        return self.wall_s / ideal_s if ideal_s else float("inf")


@dataclass
class Report:
    """The run's settings, both sides' figures, and every disagreement found."""

    invocations: int
    samples: int
    latency_s: float
    concurrency: int
    assay: Side
    adk: Side
    mismatches: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Judge calls one side must make."""
        return self.invocations * self.samples

    @property
    def ideal_s(self) -> float:
        """calls x latency / concurrency."""
        return self.calls * self.latency_s / self.concurrency

    @property
    def ok(self) -> bool:
        """No disagreement and no miscounted call."""
        return not self.mismatches


def _ours(pairs: Sequence[Pair]) -> tuple[list[Invocation], list[Invocation], EvalCase]:
    actual = [Invocation.model_validate(p.actual) for p in pairs]
    expected = [Invocation.model_validate(p.expected) for p in pairs]
    return actual, expected, EvalCase(eval_id="throughput", conversation=expected)


async def _assay_scores(
    base_url: str, runs: list[list[Pair]], samples: int, concurrency: int, side: Side
) -> None:
    backend = OpenAICompatBackend(f"openai:{STUB_MODEL}", base_url=base_url, api_key=None)
    async with LlmClient(backend, concurrency=concurrency, cache=None) as client:
        judge = Judge(client, METRIC, source="benchmark")
        options = JudgeModelOptions(judge_model=f"openai:{STUB_MODEL}", num_samples=samples)
        metric = FinalResponseMatchV2Metric(
            LlmAsAJudgeCriterion(threshold=THRESHOLD, judge_model_options=options), judge
        )
        for index, pairs in enumerate(runs):
            actual, expected, case = _ours(pairs)
            start = time.perf_counter()
            result = await metric.evaluate(actual, expected, case)
            elapsed = time.perf_counter() - start
            if index == len(runs) - 1:  # the earlier runs are the warm-up
                side.wall_s = elapsed
                side.scores = [r.score for r in result.per_invocation]
                side.overall = result.score


def time_assay(
    warm: list[Pair], pairs: list[Pair], samples: int, latency_s: float, concurrency: int
) -> Side:
    """Score the warm-up pairs, then time scoring ``pairs``, through assay's full judge path."""
    side = Side("assay")
    with _stub([*warm, *pairs], latency_s) as server:
        asyncio.run(_assay_scores(server.base_url, [warm, pairs], samples, concurrency, side))
        side.calls = server.count() - len(warm) * samples
        side.max_in_flight = server.max_in_flight
    return side


@contextlib.contextmanager
def _litellm_env(base_url: str) -> Iterator[None]:
    """Point LiteLLM's OpenAI provider at the stub while ADK runs; restore the environment."""
    wanted = {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "stub-key-not-a-secret",
    }
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _adk_evaluator(samples: int, concurrency: int) -> Any:
    # imported here: LiteLLM must not be imported before LITELLM_LOCAL_MODEL_COST_MAP is set
    from google.adk.evaluation.eval_metrics import EvalMetric, JudgeModelOptions
    from google.adk.evaluation.eval_metrics import (
        LlmAsAJudgeCriterion as AdkLlmAsAJudgeCriterion,
    )
    from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.models.registry import LLMRegistry

    judge_model = f"openai/{STUB_MODEL}"
    if LLMRegistry.resolve(judge_model) is not LiteLlm:
        raise RuntimeError(f"ADK does not resolve {judge_model} to LiteLlm")
    options = JudgeModelOptions(
        judge_model=judge_model, num_samples=samples, parallelism_limit=concurrency
    )
    criterion = AdkLlmAsAJudgeCriterion(threshold=THRESHOLD, judge_model_options=options)
    metric = EvalMetric(metric_name=METRIC, threshold=THRESHOLD, criterion=criterion)
    with warnings.catch_warnings():  # ADK marks its judge evaluators experimental
        warnings.filterwarnings("ignore", r"\[EXPERIMENTAL\]", UserWarning)
        return FinalResponseMatchV2Evaluator(metric)


async def _adk_scores(evaluator: Any, runs: list[list[Pair]], side: Side) -> None:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation

    for index, pairs in enumerate(runs):
        actual = [AdkInvocation.model_validate(p.actual) for p in pairs]
        expected = [AdkInvocation.model_validate(p.expected) for p in pairs]
        start = time.perf_counter()
        result = await evaluator.evaluate_invocations(actual, expected)
        elapsed = time.perf_counter() - start
        if index == len(runs) - 1:
            side.wall_s = elapsed
            side.scores = [r.score for r in result.per_invocation_results]
            side.overall = result.overall_score


def time_adk(
    warm: list[Pair], pairs: list[Pair], samples: int, latency_s: float, concurrency: int
) -> Side:
    """The same through ADK's evaluator and LiteLLM; ``skipped`` says why if ADK cannot run."""
    side = Side("ADK")
    with _stub([*warm, *pairs], latency_s) as server, _litellm_env(server.base_url):
        try:
            evaluator = _adk_evaluator(samples, concurrency)
        except (ImportError, ValueError, RuntimeError) as exc:
            side.skipped = f"ADK's judge cannot be pointed at the stub: {exc}"
            return side
        asyncio.run(_adk_scores(evaluator, [warm, pairs], side))
        side.calls = server.count() - len(warm) * samples
        side.max_in_flight = server.max_in_flight
    return side


def _compare(report: Report) -> None:
    for side in (report.assay, report.adk):
        if side.skipped is None and side.calls != report.calls:
            report.mismatches.append(f"{side.name} made {side.calls} calls, not {report.calls}")
    if report.adk.skipped is not None:
        return
    ours, theirs = report.assay.scores, report.adk.scores
    if len(ours) != len(theirs):
        report.mismatches.append(f"{len(ours)} per-invocation scores, ADK {len(theirs)}")
        return
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a != b:
            report.mismatches.append(f"invocation {i}: {a!r} != ADK {b!r}")
    if report.assay.overall != report.adk.overall:
        report.mismatches.append(f"overall: {report.assay.overall!r} != ADK {report.adk.overall!r}")


def run(
    invocations: int = 200,
    samples: int = 5,
    latency_ms: float = 100.0,
    concurrency: int = 8,
    seed: int = 0,
    adk: bool = True,
) -> Report:
    """Generate, time both sides (warmed up), compare; the figures and any disagreement."""
    latency_s = latency_ms / 1000.0
    pairs = generate(invocations, samples, seed)
    # the warm-up pairs carry codes after the timed ones, so the stub tells them apart
    warm = generate(2, samples, seed + 1, first_code=invocations)
    assay = time_assay(warm, pairs, samples, latency_s, concurrency)
    if adk:
        theirs = time_adk(warm, pairs, samples, latency_s, concurrency)
    else:
        theirs = Side("ADK", skipped="--no-adk")
    report = Report(invocations, samples, latency_s, concurrency, assay, theirs)
    _compare(report)
    return report


def _print(report: Report) -> None:
    print(
        f"{report.invocations} invocations x {report.samples} samples = {report.calls} judge "
        f"calls per side; stub latency {report.latency_s * 1000:g} ms; concurrency "
        f"{report.concurrency} (assay: LlmClient concurrency; ADK: parallelism_limit)"
    )
    print(f"ideal: {report.ideal_s:.3f} s (calls x latency / concurrency)")
    print(f"{'side':<8}{'wall s':>10}{'x ideal':>10}{'calls':>8}{'max in flight':>15}")
    for side in (report.assay, report.adk):
        if side.skipped is not None:
            print(f"{side.name:<8}  not timed: {side.skipped}")
            continue
        print(
            f"{side.name:<8}{side.wall_s:>10.3f}{side.ratio(report.ideal_s):>10.3f}"
            f"{side.calls:>8}{side.max_in_flight:>15}"
        )
    ratio = report.assay.ratio(report.ideal_s)
    verdict = "met" if ratio <= GOAL else "NOT met"
    print(f"goal: assay within {GOAL:g} x ideal: {verdict} ({ratio:.3f})")
    if report.adk.skipped is None and report.adk.wall_s:
        print(f"assay/ADK: {report.assay.wall_s / report.adk.wall_s:.3f}")
    if report.ok and report.adk.skipped is None:
        print(f"agreement: all {report.invocations} per-invocation scores agree with ADK")
    elif not report.ok:
        print(f"DISAGREEMENT: {len(report.mismatches)} problems")
        for line in report.mismatches[:10]:
            print(f"  {line}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--invocations", type=int, default=200, help="default 200")
    parser.add_argument("--samples", type=int, default=5, help="judge calls per invocation")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="stub latency per reply")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls in flight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-adk", action="store_true", help="time assay only")
    args = parser.parse_args(argv)
    if min(args.invocations, args.samples, args.concurrency) < 1 or args.latency_ms < 0:
        parser.error("--invocations, --samples and --concurrency must be >= 1, latency >= 0")
    report = run(
        args.invocations,
        args.samples,
        args.latency_ms,
        args.concurrency,
        args.seed,
        adk=not args.no_adk,
    )
    _print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
