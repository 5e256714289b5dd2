"""Benchmark inference: assay's agent runner against google-adk 2.13.0's, same agent, same data.

    .venv/bin/python benchmarks/bench_inference.py [--cases 60] [--turns 3] [--latency-ms 20]
        [--parallelism P] [--repeats 3] [--adk-driver service|generator] [--json]

The agent is an ADK ``LlmAgent`` ("travel_agent": two function tools, and a "booking_agent"
sub-agent reached by ``transfer_to_agent``) on ``LatencyLlm``, a scripted ``BaseLlm`` that awaits
``asyncio.sleep(--latency-ms)`` per call, standing in for a remote model; no network. Each of the
``--cases`` cases has ``--turns`` user messages: a weather or a currency question (a tool call,
two model calls), a thank-you (one model call) and, as the last turn of every other case, a hotel
booking (a transfer and the sub-agent's tool call, three model calls). The instructions read the
state each case's ``session_input`` sets. Both sides get the same cases, from the same JSON.

ADK (``--adk-driver service``, the default) runs ``LocalEvalService.perform_inference`` as
``adk eval`` drives it: the cases in an ``InMemoryEvalSetsManager``, one ``InferenceRequest`` with
``InferenceConfig(parallelism=P)``, P being ADK's default (4) unless ``--parallelism``; per case
that runs ``EvaluationGenerator._generate_inferences_from_root_agent`` with ADK's
``StaticUserSimulator``. ``--adk-driver generator`` calls that function itself, per case, the
way ``LocalEvalService`` does (``asyncio.Semaphore(P)``, ``asyncio.as_completed``, shared
in-memory session and artifact services), sparing the import of ``LocalEvalService`` (about 6 s:
its metric registry loads Vertex AI); the smoke test runs it.

assay runs ``assay.runner.inference.run_inference`` with ``assay.agents.adk.adk_agent_factory``
and ``StaticUserSimulator`` at its default concurrency (4) and, if P differs, at P too.

Each side is warmed up first (imports, ADK's first-use set-up). Then ``--repeats`` rounds time
every side once each, the order turning round each round, after a ``gc.collect()``; the table
gives medians: wall time, cases/s, wall and CPU (this process) milliseconds per turn, and
assay/ADK ratios. The rounds run again with no model latency, where the time per turn is the
frameworks' own overhead. ``ideal`` is model calls x latency / P, the wall time of a framework
that costs nothing. Every run must record cases x turns invocations and, case by case, the same
tool calls and final responses as ADK's, with as many model calls; the script exits 1 if not.

Latest figures, defaults (60 cases x 3 turns, 20 ms, P = 4, median of 3, ADK through
``LocalEvalService.perform_inference``), on the 2-core dev machine with nothing else busy; load
average 0.80/1.94/2.02 before, 0.91/1.85/1.99 after:

    latency  side          wall s  cases/s  ms/turn  cpu ms/turn  wall/ADK  cpu/ADK
    20 ms    ADK           2.552     23.5    14.18         9.21      1.00     1.00
    20 ms    assay (c=4)   2.594     23.1    14.41        11.39      1.02     1.24
    0 ms     ADK           1.363     44.0     7.57         7.57      1.00     1.00
    0 ms     assay (c=4)   1.404     42.7     7.80         7.80      1.03     1.03

Every run recorded 180 invocations, 160 tool calls and 340 model calls on both sides (at most 4
model calls in flight); ideal at 20 ms: 1.700 s. Two more runs just after gave assay/ADK wall
0.89 and 0.98 (20 ms), 1.07 and 1.00 (0 ms), CPU 0.84 and 0.94 (20 ms); a run on the machine
loaded by another process (load average 2.8) gave 0.97 and 1.02. Single runs vary by up to 20 %
here: the two sides are level within this machine's noise. Both spend most of the ~8 ms of CPU
per turn in ADK's ``Runner``; assay's own recording of a turn (events, app details, state)
measured about 0.6 ms of it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import re
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import PrivateAttr

from assay.agents.adk import adk_agent_factory
from assay.agents.base import Agent, CaseContext
from assay.evalset import EvalCase
from assay.runner.inference import InferenceSettings, run_inference
from assay.simulation.static import StaticUserSimulator

Json = Any

APP = "bench_app"
EVAL_SET = "bench_inference"
ASSAY_CONCURRENCY = InferenceSettings().concurrency
ADK_FUNCTIONS = {
    "service": "LocalEvalService.perform_inference",
    "generator": "EvaluationGenerator._generate_inferences_from_root_agent (per case)",
}

# --------------------------------------------------------------------------- the agent

_CITIES = ["Paris", "Rome", "Oslo", "Lisbon", "Kyoto", "Quito", "Accra", "Hanoi"]
_WEATHER = re.compile(r"weather in (\w+)")
_EUROS = re.compile(r"(\d+) euros")
_HOTEL = re.compile(r"hotel in (\w+) for (\d+) nights")


@dataclass
class Meter:
    """The model's calls (how many, the most in flight at once), and a run's times."""

    calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        """Count and time afresh what runs inside, the garbage of earlier runs collected first;
        CPU time is this process's."""
        gc.collect()
        self.calls = self.in_flight = self.max_in_flight = 0
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        self.wall_s, self.cpu_s = time.perf_counter() - wall, time.process_time() - cpu


def _call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def _texts(content: types.Content) -> str:
    return "\n".join(p.text for p in content.parts or [] if p.text)


def _after_tool(response: types.FunctionResponse) -> types.Part:
    """The answer once a tool has answered, built from what it said."""
    said = response.response or {}
    if response.name == "get_weather":
        return types.Part(text=f"It is {said.get('temperature')} degrees in {said.get('city')}.")
    if response.name == "convert_currency":
        return types.Part(text=f"That is {said.get('amount')} {said.get('currency')}.")
    return types.Part(
        text=f"Your hotel in {said.get('city')} is booked for {said.get('nights')} nights."
    )


def scripted_reply(request: LlmRequest) -> types.Part:
    """What the model says: keyed on the last message (and, after a transfer, the booking asked
    for earlier in the conversation)."""
    last = request.contents[-1] if request.contents else types.Content(parts=[])
    responses = [p.function_response for p in last.parts or [] if p.function_response]
    if responses:
        return _after_tool(responses[-1])
    text = _texts(last)
    if "transfer_to_agent" in text:  # the sub-agent, just handed the conversation
        asked = [m for c in request.contents if (m := _HOTEL.search(_texts(c)))]
        city, nights = asked[-1].groups() if asked else ("Paris", "1")
        return _call("book_hotel", city=city, nights=int(nights))
    if weather := _WEATHER.search(text):
        return _call("get_weather", city=weather.group(1))
    if euros := _EUROS.search(text):
        return _call("convert_currency", amount=int(euros.group(1)), to="USD")
    if _HOTEL.search(text):
        return _call("transfer_to_agent", agent_name="booking_agent")
    return types.Part(text="You are welcome.")


class LatencyLlm(BaseLlm):
    """A scripted model that takes ``latency_s`` per call, as a remote one would."""

    model: str = "bench-scripted"
    latency_s: float = 0.0
    _meter: Meter = PrivateAttr(default_factory=Meter)

    @property
    def meter(self) -> Meter:
        """Its call counts."""
        return self._meter

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Wait, then one response with the scripted part."""
        meter = self._meter
        meter.calls += 1
        meter.in_flight += 1
        meter.max_in_flight = max(meter.max_in_flight, meter.in_flight)
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
        finally:
            meter.in_flight -= 1
        content = types.Content(role="model", parts=[scripted_reply(llm_request)])
        tokens = 10 * len(llm_request.contents)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=tokens, candidates_token_count=5, total_token_count=tokens + 5
        )
        yield LlmResponse(content=content, usage_metadata=usage, model_version="bench-1")


def get_weather(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The weather in a city, in the user's units."""
    units = tool_context.state.get("units", "C")
    return {"city": city, "temperature": 21 if units == "C" else 70, "units": units}


def convert_currency(amount: float, to: str) -> dict[str, Any]:
    """Convert an amount in euros."""
    return {"amount": round(amount * 1.1, 2), "currency": to}


def book_hotel(city: str, nights: int, tool_context: ToolContext) -> dict[str, Any]:
    """Book a hotel; the booking is noted in the session state."""
    tool_context.state["booked"] = city
    return {"status": "booked", "city": city, "nights": nights}


def build_agent(latency_s: float) -> tuple[LlmAgent, Meter]:
    """The agent under test, and the meter of the model all its agents share."""
    model = LatencyLlm(latency_s=latency_s)
    booking = LlmAgent(
        name="booking_agent",
        description="Books hotels.",
        instruction="You book hotels for {user_name}.",
        model=model,
        tools=[book_hotel],
    )
    root = LlmAgent(
        name="travel_agent",
        description="Plans trips.",
        instruction="You plan trips for {user_name}, who uses {units} units.",
        model=model,
        tools=[get_weather, convert_currency],
        sub_agents=[booking],
    )
    return root, model.meter


# --------------------------------------------------------------------------- the data


def _message(case: int, turn: int, turns: int) -> str:
    city = _CITIES[(case + turn) % len(_CITIES)]
    if turn == turns - 1 and case % 2 == 0:  # last: the sub-agent keeps the conversation
        return f"Book a hotel in {city} for {1 + case % 4} nights."
    kind = (case + turn) % 3
    if kind == 0:
        return f"What is the weather in {city}?"
    if kind == 1:
        return f"How much is {10 * (1 + case % 9)} euros in dollars?"
    return "Thanks, that is all for now."


def generate(cases: int, turns: int) -> list[Json]:
    """``cases`` eval cases as JSON, each ``turns`` user messages with its session state."""
    return [
        {
            "eval_id": f"case-{c:04d}",
            "conversation": [
                {
                    "invocation_id": f"case-{c:04d}-{t}",
                    "user_content": {"role": "user", "parts": [{"text": _message(c, t, turns)}]},
                }
                for t in range(turns)
            ],
            "session_input": {
                "app_name": APP,
                "user_id": f"user-{c % 7}",
                "state": {"user_name": f"Traveller {c}", "units": "F" if c % 3 else "C"},
            },
        }
        for c in range(cases)
    ]


# --------------------------------------------------------------------------- one timed run


@dataclass(frozen=True)
class CaseSummary:
    """What one case recorded: its turns, the tools called per turn, the final responses."""

    invocations: int
    tool_calls: tuple[tuple[str, ...], ...]
    finals: tuple[str, ...]


@dataclass
class Run:
    """One timed run of one side."""

    wall_s: float
    cpu_s: float
    summaries: dict[str, CaseSummary]
    failures: list[str]
    model_calls: int
    max_in_flight: int

    @property
    def invocations(self) -> int:
        """Invocations recorded over every case."""
        return sum(s.invocations for s in self.summaries.values())

    @property
    def tool_calls(self) -> int:
        """Tool calls recorded over every case."""
        return sum(len(turn) for s in self.summaries.values() for turn in s.tool_calls)


def _run(meter: Meter, summaries: dict[str, CaseSummary], failures: list[str]) -> Run:
    return Run(meter.wall_s, meter.cpu_s, summaries, failures, meter.calls, meter.max_in_flight)


def _final(invocation: Any) -> str:
    final = invocation.final_response
    return "".join(p.text or "" for p in final.parts or []) if final else ""


def _summary(invocations: Sequence[Any], calls: Callable[[Any], Sequence[Any]]) -> CaseSummary:
    return CaseSummary(
        invocations=len(invocations),
        tool_calls=tuple(tuple(call.name or "" for call in calls(i)) for i in invocations),
        finals=tuple(_final(i) for i in invocations),
    )


def _adk_calls(invocation: Any) -> Sequence[Any]:
    from google.adk.evaluation.eval_case import get_all_tool_calls

    return get_all_tool_calls(invocation.intermediate_data)


async def _assay_run(
    agent: LlmAgent, meter: Meter, cases: Sequence[EvalCase], concurrency: int
) -> Run:
    factory = adk_agent_factory(agent, source="bench_inference")

    def user(context: CaseContext, _: Agent) -> StaticUserSimulator:
        return StaticUserSimulator(context.case.conversation or [])

    settings = InferenceSettings(concurrency=concurrency)
    with meter.measure():
        done = await run_inference(cases, factory, user, settings)
    summaries = {d.eval_id: _summary(d.invocations, lambda i: i.tool_calls()) for d in done}
    failures = [f"{d.eval_id}: {d.error}" for d in done if d.error is not None]
    return _run(meter, summaries, failures)


@contextlib.contextmanager
def _adk_quiet() -> Iterator[None]:
    """ADK's evaluation classes warn that they are experimental on every use."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"\[EXPERIMENTAL\]", UserWarning)
        yield


def _adk_cases(data: Sequence[Json]) -> list[Any]:
    from google.adk.evaluation.eval_case import EvalCase as AdkEvalCase

    return [AdkEvalCase.model_validate(case) for case in data]


async def _adk_service(agent: LlmAgent, cases: Sequence[Any], parallelism: int) -> list[Any]:
    """``LocalEvalService.perform_inference``, as ``adk eval`` drives it."""
    with _adk_quiet():  # importing the metric registry warns too
        from google.adk.evaluation.base_eval_service import InferenceConfig, InferenceRequest
        from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
        from google.adk.evaluation.local_eval_service import LocalEvalService

        sets = InMemoryEvalSetsManager()
        sets.create_eval_set(app_name=APP, eval_set_id=EVAL_SET)
        for case in cases:
            sets.add_eval_case(app_name=APP, eval_set_id=EVAL_SET, eval_case=case)
        service = LocalEvalService(root_agent=agent, eval_sets_manager=sets)
        request = InferenceRequest(
            app_name=APP,
            eval_set_id=EVAL_SET,
            inference_config=InferenceConfig(parallelism=parallelism),
        )
        async with contextlib.aclosing(service.perform_inference(request)) as results:
            return [result async for result in results]


async def _adk_generator(agent: LlmAgent, cases: Sequence[Any], parallelism: int) -> list[Any]:
    """The function ``LocalEvalService`` runs per case, run the way it runs it."""
    from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
    from google.adk.evaluation.base_eval_service import InferenceResult, InferenceStatus
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.simulation.static_user_simulator import StaticUserSimulator
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    sessions, artifacts = InMemorySessionService(), InMemoryArtifactService()
    slots = asyncio.Semaphore(parallelism)

    async def one(case: Any) -> Any:
        session_id = f"adk-eval-session-{uuid.uuid4()}"  # LocalEvalService's default supplier
        result = InferenceResult(
            app_name=APP, eval_set_id=EVAL_SET, eval_case_id=case.eval_id, session_id=session_id
        )
        async with slots:
            try:
                with _adk_quiet():
                    user = StaticUserSimulator(static_conversation=case.conversation)
                result.inferences = await EvaluationGenerator._generate_inferences_from_root_agent(
                    root_agent=agent,
                    user_simulator=user,
                    initial_session=case.session_input,
                    session_id=session_id,
                    session_service=sessions,
                    artifact_service=artifacts,
                )
                result.status = InferenceStatus.SUCCESS
            except Exception as exc:  # as LocalEvalService: one case's failure, not the run's
                result.status = InferenceStatus.FAILURE
                result.error_message = str(exc)
        return result

    return [await done for done in asyncio.as_completed([one(case) for case in cases])]


async def _adk_run(
    agent: LlmAgent, meter: Meter, cases: Sequence[Any], parallelism: int, driver: str
) -> Run:
    drive = _adk_service if driver == "service" else _adk_generator
    with meter.measure():
        results = await drive(agent, cases, parallelism)
    summaries = {r.eval_case_id: _summary(r.inferences or [], _adk_calls) for r in results}
    failures = [f"{r.eval_case_id}: {r.error_message}" for r in results if r.inferences is None]
    return _run(meter, summaries, failures)


# --------------------------------------------------------------------------- rounds and report


@dataclass
class Side:
    """One side at one latency, and its timed runs."""

    name: str
    parallelism: int
    runs: list[Run] = field(default_factory=list)

    @property
    def wall_s(self) -> float:
        """The median wall time."""
        return statistics.median(r.wall_s for r in self.runs) if self.runs else 0.0

    @property
    def cpu_s(self) -> float:
        """The median CPU time."""
        return statistics.median(r.cpu_s for r in self.runs) if self.runs else 0.0


@dataclass
class Stage:
    """Every side at one model latency."""

    latency_ms: float
    sides: list[Side]

    @property
    def adk(self) -> Side:
        """ADK's side (the first)."""
        return self.sides[0]


@dataclass
class Report:
    """The settings, both latencies' figures, and every disagreement found."""

    cases: int
    turns: int
    latency_ms: float
    parallelism: int
    repeats: int
    adk_driver: str
    stages: list[Stage] = field(default_factory=list)
    loads: list[tuple[float, float, float]] = field(default_factory=list)
    """The load average (1, 5, 15 minutes) before and after the timings."""
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every run recorded what it should, the same as ADK."""
        return not self.mismatches


def _check(report: Report, side: Side, run: Run, adk: Run) -> None:
    """Note how ``run`` differs from what it should record and from ADK's ``adk``."""
    label = f"{side.name} (concurrency {side.parallelism}) at {report.stages[-1].latency_ms:g} ms"
    problems = [f"{label}: {failure}" for failure in run.failures[:3]]
    if run.invocations != report.cases * report.turns:
        problems.append(
            f"{label}: {run.invocations} invocations, not {report.cases * report.turns}"
        )
    if run.tool_calls != adk.tool_calls or run.model_calls != adk.model_calls:
        problems.append(
            f"{label}: {run.tool_calls} tool calls and {run.model_calls} model calls, "
            f"ADK {adk.tool_calls} and {adk.model_calls}"
        )
    keys = adk.summaries.keys() | run.summaries.keys()
    differing = sorted(k for k in keys if adk.summaries.get(k) != run.summaries.get(k))
    if differing:
        problems.append(f"{label}: {len(differing)} cases differ from ADK's, first {differing[0]}")
    report.mismatches.extend(problems)


def _stage(report: Report, data: Sequence[Json], latency_ms: float) -> Stage:
    """``report.repeats`` rounds, each timing every side once (ADK first in the first round,
    then the order turns round); every run is checked against ADK's first."""
    agent, meter = build_agent(latency_ms / 1000.0)
    ours = [EvalCase.model_validate(case) for case in data]
    theirs = _adk_cases(data)
    adk = Side(f"ADK ({report.adk_driver})", report.parallelism)
    sides = [adk, *(Side("assay", c) for c in sorted({ASSAY_CONCURRENCY, report.parallelism}))]
    report.stages.append(Stage(latency_ms, sides))
    reference: Run | None = None
    for round_ in range(report.repeats):
        for side in sides[round_ % len(sides) :] + sides[: round_ % len(sides)]:
            if side is adk:
                run = asyncio.run(
                    _adk_run(agent, meter, theirs, side.parallelism, report.adk_driver)
                )
                reference = reference or run
            else:
                run = asyncio.run(_assay_run(agent, meter, ours, side.parallelism))
            assert reference is not None  # ADK runs first in the first round
            _check(report, side, run, reference)
            side.runs.append(run)
    return report.stages[-1]


def _warm_up(driver: str, parallelism: int) -> None:
    """One small run per side: imports and ADK's first-use set-up stay out of the timings."""
    data = generate(2, 2)
    agent, meter = build_agent(0.0)
    asyncio.run(_adk_run(agent, meter, _adk_cases(data), parallelism, driver))
    asyncio.run(_assay_run(agent, meter, [EvalCase.model_validate(c) for c in data], 1))


def run(
    cases: int = 60,
    turns: int = 3,
    latency_ms: float = 20.0,
    parallelism: int | None = None,
    repeats: int = 3,
    adk_driver: str = "service",
) -> Report:
    """Warm up, then time both sides at ``latency_ms`` and with no latency; compare."""
    if adk_driver not in ADK_FUNCTIONS:
        raise ValueError(f"adk_driver must be service or generator, got {adk_driver!r}")
    from google.adk.evaluation.base_eval_service import InferenceConfig

    p = InferenceConfig().parallelism if parallelism is None else parallelism
    report = Report(cases, turns, latency_ms, p, repeats, adk_driver)
    report.loads.append(os.getloadavg())
    _warm_up(adk_driver, p)
    data = generate(cases, turns)
    for latency in dict.fromkeys((latency_ms, 0.0)):
        _stage(report, data, latency)
    report.loads.append(os.getloadavg())
    return report


# --------------------------------------------------------------------------- output


def _side_json(report: Report, stage: Stage, side: Side) -> Json:
    turns, adk, last = report.cases * report.turns, stage.adk, side.runs[-1]
    return {
        "name": side.name,
        "parallelism": side.parallelism,
        "walls": [r.wall_s for r in side.runs],
        "cpus": [r.cpu_s for r in side.runs],
        "wall_s": side.wall_s,
        "cases_per_s": report.cases / side.wall_s if side.wall_s else None,
        "ms_per_turn": 1000 * side.wall_s / turns,
        "ratio_to_adk": side.wall_s / adk.wall_s if adk.wall_s else None,
        "cpu_s": side.cpu_s,
        "cpu_ms_per_turn": 1000 * side.cpu_s / turns,
        "cpu_ratio_to_adk": side.cpu_s / adk.cpu_s if adk.cpu_s else None,
        "invocations": last.invocations,
        "tool_calls": last.tool_calls,
        "model_calls": last.model_calls,
        "max_in_flight": max(r.max_in_flight for r in side.runs),
    }


def _ideal_s(report: Report, stage: Stage) -> float:
    return stage.adk.runs[-1].model_calls * stage.latency_ms / 1000.0 / report.parallelism


def to_json(report: Report) -> Json:
    """The report as plain JSON."""
    return {
        "cases": report.cases,
        "turns": report.turns,
        "latency_ms": report.latency_ms,
        "parallelism": report.parallelism,
        "assay_default_concurrency": ASSAY_CONCURRENCY,
        "repeats": report.repeats,
        "adk_function": ADK_FUNCTIONS[report.adk_driver],
        "load_average_before_after": [list(load) for load in report.loads],
        "stages": [
            {
                "latency_ms": stage.latency_ms,
                "ideal_s": _ideal_s(report, stage),
                "sides": [_side_json(report, stage, side) for side in stage.sides],
            }
            for stage in report.stages
        ],
        "mismatches": report.mismatches,
        "ok": report.ok,
    }


def table(report: Report) -> list[str]:
    """The figures as printed lines."""
    before, after = ("/".join(f"{x:.2f}" for x in load) for load in report.loads)
    lines = [
        f"{report.cases} cases x {report.turns} turns; ADK: {ADK_FUNCTIONS[report.adk_driver]}, "
        f"parallelism {report.parallelism}; assay: run_inference + adk_agent_factory; median of "
        f"{report.repeats} runs; load average {before} before, {after} after",
        f"{'latency':<9}{'side':<17}{'conc.':>5}{'wall s':>8}{'cases/s':>8}{'ms/turn':>8}"
        f"{'/ADK':>6}{'cpu ms/turn':>12}{'/ADK':>6}{'invoc.':>7}{'tools':>6}{'model':>6}",
    ]
    for stage in report.stages:
        for side in stage.sides:
            f = _side_json(report, stage, side)
            lines.append(
                f"{f'{stage.latency_ms:g} ms':<9}{side.name:<17}{side.parallelism:>5}"
                f"{side.wall_s:>8.3f}{f['cases_per_s'] or 0:>8.1f}{f['ms_per_turn']:>8.2f}"
                f"{f['ratio_to_adk'] or 0:>6.2f}{f['cpu_ms_per_turn']:>12.2f}"
                f"{f['cpu_ratio_to_adk'] or 0:>6.2f}"
                f"{f['invocations']:>7}{f['tool_calls']:>6}{f['model_calls']:>6}"
            )
        if ideal := _ideal_s(report, stage):
            lines.append(
                f"{'':<9}ideal (model calls x latency / {report.parallelism}): {ideal:.3f} s"
            )
    if report.ok:
        lines.append(
            "agreement: every run recorded the same invocations, tool calls, final responses "
            "and model calls as ADK"
        )
    else:
        lines.append(f"DISAGREEMENT: {len(report.mismatches)} problems")
        lines.extend(f"  {line}" for line in report.mismatches[:10])
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=60, help="eval cases (default 60)")
    parser.add_argument("--turns", type=int, default=3, help="user messages per case (default 3)")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="per model call (20)")
    parser.add_argument("--parallelism", type=int, help="ADK's cases at once (default: ADK's)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per side (median)")
    parser.add_argument("--adk-driver", choices=list(ADK_FUNCTIONS), default="service")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if min(args.cases, args.turns, args.repeats) < 1 or args.latency_ms < 0:
        parser.error("--cases, --turns and --repeats must be >= 1, --latency-ms >= 0")
    if args.parallelism is not None and args.parallelism < 1:
        parser.error("--parallelism must be >= 1")
    report = run(
        args.cases, args.turns, args.latency_ms, args.parallelism, args.repeats, args.adk_driver
    )
    print(json.dumps(to_json(report), indent=2) if args.json else "\n".join(table(report)))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
