"""Benchmark judge throughput: assay's judge path and google-adk 2.13.0's against one stub server.

    .venv/bin/python benchmarks/bench_judge_throughput.py [--invocations 200] [--samples 5]
        [--latency-ms 100] [--concurrency 8] [--server-limit N] [--seed 0] [--no-adk]
        [--no-adaptive] [--stub-process]

Scores ``final_response_match_v2`` on ``--invocations`` generated invocation pairs (one case),
``--samples`` judge calls each, against ``JudgeServer`` (tests/_judge_server.py): a real
OpenAI-compatible HTTP server on 127.0.0.1 that answers every completion after ``--latency-ms``
with a verdict in ADK's JSON format. How many of an invocation's samples say "valid" is drawn from
``--seed``, so the majority vote is exercised and both sides must reach the same scores.

assay runs its full path: ``FinalResponseMatchV2Metric`` -> ``Judge`` -> ``LlmClient`` (cache
off, so every call reaches the server; ``--concurrency`` calls in flight at most) ->
``OpenAICompatBackend``. The ideal wall time is calls x latency / min(concurrency, server limit);
the goal is at most 1.25 times that with a server limit, 1.1 without.

``--server-limit N`` makes the stub a provider that serves at most N completions at once and
refuses the rest at once with 429 and ``Retry-After: 1``: assay's client starts at
``--concurrency`` (its ceiling) and adapts (:mod:`assay.llm.adaptive`). The report adds the share
of requests refused (goal: under 5%) and the invocations left NOT_EVALUATED (goal: none). The
warm-up runs without the server limit, so the timed run starts at the ceiling.
``--no-adaptive`` times assay at a fixed limit instead, for comparison; ``--stub-process`` serves
the stub from a child process, so its threads take no time from the client's interpreter.

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
import multiprocessing
import os
import random
import re
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
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
GOAL = 1.1  # assay's wall time over the ideal, without a server limit
GOAL_LIMITED = 1.25  # ... and with one
REFUSED_GOAL = 0.05  # the share of requests refused with 429, at most
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
def _stub(pairs: Sequence[Pair], latency_s: float) -> Iterator[JudgeServer | StubProcess]:
    """The stub, without a server limit until the caller sets ``max_concurrent`` (after the
    warm-up); in a process of its own with ``--stub-process``."""
    valid = {p.code: p.valid_samples for p in pairs}
    if STUB_IN_PROCESS[0]:
        with JudgeServer(Verdicts(valid), latency_s=latency_s, model=STUB_MODEL) as server:
            yield server
        return
    with StubProcess(valid, latency_s) as remote:
        yield remote


STUB_IN_PROCESS = [True]
"""Whether the stub serves from threads of this process (the default: what the tests use) or
from a child process (``--stub-process``: it then takes no time from the client's interpreter,
as a real provider does not)."""


def _serve(conn: Connection, valid: dict[int, int], latency_s: float) -> None:
    """The child's side of :class:`StubProcess`: serve until told to close."""
    with JudgeServer(Verdicts(valid), latency_s=latency_s, model=STUB_MODEL) as server:
        conn.send(server.base_url)
        while True:
            command, value = conn.recv()
            if command == "limit":
                server.max_concurrent = value
                conn.send(None)
            elif command == "stats":
                conn.send((server.count(), server.refused, server.max_in_flight))
            else:
                break
    conn.close()


class StubProcess:
    """The stub in a child process, with the parts of :class:`JudgeServer` the timing reads."""

    def __init__(self, valid: dict[int, int], latency_s: float) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, valid, latency_s))
        self._process.start()
        child.close()
        self.base_url: str = self._conn.recv()

    def __enter__(self) -> StubProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send(("close", None))
        self._process.join(10)
        self._conn.close()
        self._process.close()

    def _stats(self) -> tuple[int, int, int]:
        self._conn.send(("stats", None))
        found: tuple[int, int, int] = self._conn.recv()
        return found

    @property
    def max_concurrent(self) -> int | None:
        raise AttributeError("write-only here")

    @max_concurrent.setter
    def max_concurrent(self, value: int | None) -> None:
        self._conn.send(("limit", value))
        self._conn.recv()

    def count(self) -> int:
        return self._stats()[0]

    @property
    def refused(self) -> int:
        return self._stats()[1]

    @property
    def max_in_flight(self) -> int:
        return self._stats()[2]


# --------------------------------------------------------------------------- timing


@dataclass
class Side:
    """One side's figures: wall seconds of the timed scoring, calls the server saw, the most it
    saw at once, and the scores (per invocation, then overall)."""

    name: str
    wall_s: float = 0.0
    calls: int = 0
    max_in_flight: int = 0
    refused: int = 0
    limit: str = ""
    scores: list[float | None] = field(default_factory=list)
    overall: float | None = None
    skipped: str | None = None

    def ratio(self, ideal_s: float) -> float:
        """Wall time over the ideal."""
        return self.wall_s / ideal_s if ideal_s else float("inf")

    @property
    def refused_share(self) -> float:
        """Of the requests the server received, the share it refused with 429."""
        sent = self.calls + self.refused
        return self.refused / sent if sent else 0.0

    @property
    def not_evaluated(self) -> int:
        """Invocations without a score (a judge call finally failed)."""
        return sum(score is None for score in self.scores)


@dataclass
class Report:
    """The run's settings, both sides' figures, and every disagreement found."""

    invocations: int
    samples: int
    latency_s: float
    concurrency: int
    server_limit: int | None
    assay: Side
    adk: Side
    mismatches: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        """Judge calls one side must make."""
        return self.invocations * self.samples

    @property
    def ideal_s(self) -> float:
        """calls x latency / min(concurrency, server limit)."""
        usable = min(self.concurrency, self.server_limit or self.concurrency)
        return self.calls * self.latency_s / usable

    @property
    def ok(self) -> bool:
        """No disagreement and no miscounted call."""
        return not self.mismatches


def _ours(pairs: Sequence[Pair]) -> tuple[list[Invocation], list[Invocation], EvalCase]:
    actual = [Invocation.model_validate(p.actual) for p in pairs]
    expected = [Invocation.model_validate(p.expected) for p in pairs]
    return actual, expected, EvalCase(eval_id="throughput", conversation=expected)


async def _assay_scores(
    server: JudgeServer | StubProcess,
    runs: list[list[Pair]],
    samples: int,
    concurrency: int,
    server_limit: int | None,
    side: Side,
    adaptive: bool = True,
) -> None:
    backend = OpenAICompatBackend(f"openai:{STUB_MODEL}", base_url=server.base_url, api_key=None)
    client = LlmClient(backend, concurrency=concurrency, cache=None, adaptive=adaptive)
    async with client:
        judge = Judge(client, METRIC, source="benchmark")
        options = JudgeModelOptions(judge_model=f"openai:{STUB_MODEL}", num_samples=samples)
        metric = FinalResponseMatchV2Metric(
            LlmAsAJudgeCriterion(threshold=THRESHOLD, judge_model_options=options), judge
        )
        for index, pairs in enumerate(runs):
            timed = index == len(runs) - 1  # the earlier runs are the warm-up
            if timed:
                server.max_concurrent = server_limit
            actual, expected, case = _ours(pairs)
            start = time.perf_counter()
            result = await metric.evaluate(actual, expected, case)
            elapsed = time.perf_counter() - start
            if timed:
                side.wall_s = elapsed
                side.scores = [r.score for r in result.per_invocation]
                side.overall = result.score
        if client.adaptive is not None:
            stats = client.adaptive.stats
            side.limit = (
                f"adapted limit: ended at {client.adaptive.limit}, lowest {stats.lowest}; "
                f"{stats.measured_cuts} cuts by one, {stats.halvings} halvings, "
                f"{stats.paused_s:.2f} s paused"
            )


def time_assay(
    warm: list[Pair],
    pairs: list[Pair],
    samples: int,
    latency_s: float,
    concurrency: int,
    server_limit: int | None = None,
    adaptive: bool = True,
) -> Side:
    """Score the warm-up pairs, then time scoring ``pairs``, through assay's full judge path."""
    side = Side("assay" if adaptive else "fixed")
    with _stub([*warm, *pairs], latency_s) as server:
        runs = [warm, pairs]
        asyncio.run(_assay_scores(server, runs, samples, concurrency, server_limit, side, adaptive))
        side.refused = server.refused
        side.calls = server.count() - len(warm) * samples - side.refused
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


async def _adk_scores(
    evaluator: Any,
    runs: list[list[Pair]],
    side: Side,
    server: JudgeServer | StubProcess,
    server_limit: int | None,
) -> None:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation

    for index, pairs in enumerate(runs):
        timed = index == len(runs) - 1
        if timed:
            server.max_concurrent = server_limit
        actual = [AdkInvocation.model_validate(p.actual) for p in pairs]
        expected = [AdkInvocation.model_validate(p.expected) for p in pairs]
        start = time.perf_counter()
        result = await evaluator.evaluate_invocations(actual, expected)
        elapsed = time.perf_counter() - start
        if timed:
            side.wall_s = elapsed
            side.scores = [r.score for r in result.per_invocation_results]
            side.overall = result.overall_score


def time_adk(
    warm: list[Pair],
    pairs: list[Pair],
    samples: int,
    latency_s: float,
    concurrency: int,
    server_limit: int | None = None,
) -> Side:
    """The same through ADK's evaluator and LiteLLM; ``skipped`` says why if ADK cannot run."""
    side = Side("ADK")
    with _stub([*warm, *pairs], latency_s) as server, _litellm_env(server.base_url):
        try:
            evaluator = _adk_evaluator(samples, concurrency)
        except (ImportError, ValueError, RuntimeError) as exc:
            side.skipped = f"ADK's judge cannot be pointed at the stub: {exc}"
            return side
        asyncio.run(_adk_scores(evaluator, [warm, pairs], side, server, server_limit))
        side.refused = server.refused
        side.calls = server.count() - len(warm) * samples - side.refused
        side.max_in_flight = server.max_in_flight
    return side


def _compare(report: Report) -> None:
    """Every call made once on each side, and the same scores where both sides scored (an
    invocation a side left NOT_EVALUATED is counted in its own column, not here)."""
    for side in (report.assay, report.adk):
        if side.skipped is None and side.calls != report.calls and not side.not_evaluated:
            report.mismatches.append(f"{side.name} made {side.calls} calls, not {report.calls}")
    if report.adk.skipped is not None:
        return
    ours, theirs = report.assay.scores, report.adk.scores
    if len(ours) != len(theirs):
        report.mismatches.append(f"{len(ours)} per-invocation scores, ADK {len(theirs)}")
        return
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if a is not None and b is not None and a != b:
            report.mismatches.append(f"invocation {i}: {a!r} != ADK {b!r}")
    complete = not report.assay.not_evaluated and not report.adk.not_evaluated
    if complete and report.assay.overall != report.adk.overall:
        report.mismatches.append(f"overall: {report.assay.overall!r} != ADK {report.adk.overall!r}")


def run(
    invocations: int = 200,
    samples: int = 5,
    latency_ms: float = 100.0,
    concurrency: int = 8,
    seed: int = 0,
    adk: bool = True,
    server_limit: int | None = None,
    adaptive: bool = True,
) -> Report:
    """Generate, time both sides (warmed up), compare; the figures and any disagreement."""
    latency_s = latency_ms / 1000.0
    pairs = generate(invocations, samples, seed)
    # the warm-up pairs carry codes after the timed ones, so the stub tells them apart
    warm = generate(2, samples, seed + 1, first_code=invocations)
    assay = time_assay(warm, pairs, samples, latency_s, concurrency, server_limit, adaptive)
    if adk:
        theirs = time_adk(warm, pairs, samples, latency_s, concurrency, server_limit)
    else:
        theirs = Side("ADK", skipped="--no-adk")
    report = Report(invocations, samples, latency_s, concurrency, server_limit, assay, theirs)
    _compare(report)
    return report


def _print(report: Report) -> None:
    limit = report.server_limit
    print(
        f"{report.invocations} invocations x {report.samples} samples = {report.calls} judge "
        f"calls per side; stub latency {report.latency_s * 1000:g} ms; concurrency "
        f"{report.concurrency} (assay: LlmClient ceiling; ADK: parallelism_limit); server limit "
        + (f"{limit} at once (429, Retry-After: 1 beyond)" if limit else "none")
    )
    print(f"ideal: {report.ideal_s:.3f} s (calls x latency / min(concurrency, server limit))")
    print(
        f"{'side':<8}{'wall s':>10}{'x ideal':>10}{'calls':>8}{'max in flight':>15}"
        f"{'refused':>10}{'refused %':>11}{'not eval.':>11}"
    )
    for side in (report.assay, report.adk):
        if side.skipped is not None:
            print(f"{side.name:<8}  not timed: {side.skipped}")
            continue
        print(
            f"{side.name:<8}{side.wall_s:>10.3f}{side.ratio(report.ideal_s):>10.3f}"
            f"{side.calls:>8}{side.max_in_flight:>15}{side.refused:>10}"
            f"{side.refused_share * 100:>10.1f}%{side.not_evaluated:>11}"
        )
    if report.assay.limit:
        print(f"assay {report.assay.limit}")
    _print_goals(report)
    if report.adk.skipped is None and report.adk.wall_s:
        print(f"assay/ADK: {report.assay.wall_s / report.adk.wall_s:.3f}")
    if report.ok and report.adk.skipped is None:
        unscored = report.assay.not_evaluated + report.adk.not_evaluated
        if unscored:
            print("agreement: every invocation both sides scored has the same score")
        else:
            print(f"agreement: all {report.invocations} per-invocation scores agree with ADK")
    elif not report.ok:
        print(f"DISAGREEMENT: {len(report.mismatches)} problems")
        for line in report.mismatches[:10]:
            print(f"  {line}")


def _print_goals(report: Report) -> None:
    side = report.assay
    ratio = side.ratio(report.ideal_s)
    goal = GOAL_LIMITED if report.server_limit else GOAL
    verdict = "met" if ratio <= goal else "NOT met"
    print(f"goal: assay within {goal:g} x ideal: {verdict} ({ratio:.3f})")
    if report.server_limit:
        share = side.refused_share
        verdict = "met" if share < REFUSED_GOAL else "NOT met"
        print(f"goal: under {REFUSED_GOAL:.0%} of requests refused: {verdict} ({share:.1%})")
        verdict = "met" if not side.not_evaluated else "NOT met"
        print(f"goal: every invocation evaluated: {verdict} ({side.not_evaluated} NOT_EVALUATED)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--invocations", type=int, default=200, help="default 200")
    parser.add_argument("--samples", type=int, default=5, help="judge calls per invocation")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="stub latency per reply")
    parser.add_argument(
        "--concurrency",
        "--judge-concurrency",
        type=int,
        default=8,
        help="judge calls in flight at most (assay's ceiling)",
    )
    parser.add_argument(
        "--server-limit",
        type=int,
        default=None,
        help="the stub serves this many at once and refuses the rest with 429 (default: no limit)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-adk", action="store_true", help="time assay only")
    parser.add_argument(
        "--stub-process",
        action="store_true",
        help="serve the stub from a child process (it then takes no time from the client's)",
    )
    parser.add_argument(
        "--no-adaptive", action="store_true", help="assay at a fixed limit (for comparison)"
    )
    args = parser.parse_args(argv)
    if min(args.invocations, args.samples, args.concurrency) < 1 or args.latency_ms < 0:
        parser.error("--invocations, --samples and --concurrency must be >= 1, latency >= 0")
    if args.server_limit is not None and args.server_limit < 1:
        parser.error("--server-limit must be >= 1")
    STUB_IN_PROCESS[0] = not args.stub_process
    report = run(
        args.invocations,
        args.samples,
        args.latency_ms,
        args.concurrency,
        args.seed,
        adk=not args.no_adk,
        server_limit=args.server_limit,
        adaptive=not args.no_adaptive,
    )
    _print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
