"""The efficiency metrics against google-adk 2.13.0's own informational evaluators.

Seeded-random cases are generated as JSON and parsed twice: into ADK's ``Invocation`` (scored by
``_ToolCallCountV1Evaluator`` and friends) and into assay's. Per-invocation scores and statuses,
the overall score and status, and the token / duration breakdowns must be equal (``==``).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli
from google.adk.evaluation._efficiency_evaluators import (
    _InferenceCallCountV1Evaluator,
    _InvocationDurationV1Evaluator,
    _TokenUsageV1Evaluator,
    _ToolCallCountV1Evaluator,
)
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.evaluator import EvaluationResult as AdkEvaluationResult
from google.adk.evaluation.evaluator import Evaluator as AdkEvaluator

from assay.config import BaseCriterion
from assay.evalset import EvalCase, Invocation
from assay.metrics.base import EvalStatus, MetricResult, PerInvocationResult
from assay.metrics.efficiency import (
    DURATION_FIELDS,
    EFFICIENCY_METRICS,
    NO_VALUE_REASONS,
    TOKEN_USAGE_FIELDS,
    InferenceCallCountMetric,
    InvocationDurationMetric,
    TokenUsageMetric,
    ToolCallCountMetric,
)

SEED = 4_2013
CASES = 400
Json = Any
_OMIT = object()

_USAGE_KEYS = (
    ("prompt_token_count", "promptTokenCount"),
    ("tool_use_prompt_token_count", "toolUsePromptTokenCount"),
    ("candidates_token_count", "candidatesTokenCount"),
    ("thoughts_token_count", "thoughtsTokenCount"),
    ("cached_content_token_count", "cachedContentTokenCount"),
    ("total_token_count", "totalTokenCount"),  # read by neither side
)


def _run(coro: Coroutine[Any, Any, MetricResult]) -> MetricResult:
    return asyncio.run(coro)


def _case(actual: list[Invocation]) -> EvalCase:
    return EvalCase(eval_id="c", conversation=actual)


def _put(obj: dict[str, Json], snake: str, camel: str, value: Any, rng: random.Random) -> None:
    if value is not _OMIT:
        obj[camel if rng.random() < 0.4 else snake] = value


# --------------------------------------------------------------------------- generator


def _count_value(rng: random.Random) -> Json:
    roll = rng.random()
    if roll < 0.12:
        return 0
    if roll < 0.17:
        return None
    if roll < 0.20:
        return float(rng.randint(0, 500))  # an integral float, as a JSON writer may emit
    if roll < 0.22:
        return str(rng.randint(0, 500))  # a numeric string, which genai's lax int accepts
    if roll < 0.24:
        return 2**40 + rng.randint(0, 10**6)
    return rng.randint(1, 5_000)


def _usage_metadata(rng: random.Random) -> Json:
    roll = rng.random()
    if roll < 0.35:
        return _OMIT
    if roll < 0.42:
        return None
    if roll < 0.50:
        return {}
    usage: dict[str, Json] = {}
    for snake, camel in _USAGE_KEYS:
        if rng.random() < 0.6:
            _put(usage, snake, camel, _count_value(rng), rng)
    return usage


def _function_call(rng: random.Random) -> Json:
    return {"name": rng.choice(["search", "lookup", "add"]), "args": {"q": rng.randint(0, 3)}}


def _part(rng: random.Random) -> Json:
    roll = rng.random()
    if roll < 0.35:
        return {"text": rng.choice(["ok", "thinking", ""])}
    if roll < 0.7:
        return {rng.choice(["function_call", "functionCall"]): _function_call(rng)}
    return {"function_response": {"name": "search", "response": {"result": 1}}}


def _content(rng: random.Random, role: str) -> Json:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.15:
        return {"role": role}
    if roll < 0.2:
        return {"role": role, "parts": []}
    return {"role": role, "parts": [_part(rng) for _ in range(rng.randint(1, 3))]}


def _event(rng: random.Random) -> Json:
    event: dict[str, Json] = {"author": rng.choice(["agent", "sub_agent", "user"])}
    content = _content(rng, "model")
    if content is not None or rng.random() < 0.5:
        event["content"] = content
    _put(event, "usage_metadata", "usageMetadata", _usage_metadata(rng), rng)
    roll = rng.random()
    version = _OMIT if roll < 0.6 else None if roll < 0.7 else "" if roll < 0.75 else "gemini-x"
    _put(event, "model_version", "modelVersion", version, rng)
    return event


def _intermediate_data(rng: random.Random) -> Json:
    roll = rng.random()
    if roll < 0.12:
        return _OMIT
    if roll < 0.17:
        return None
    if roll < 0.22:
        return {}
    if roll < 0.45:
        data: dict[str, Json] = {}
        _put(
            data,
            "tool_uses",
            "toolUses",
            [_function_call(rng) for _ in range(rng.randint(0, 4))],
            rng,
        )
        if rng.random() < 0.5:
            _put(data, "tool_responses", "toolResponses", [], rng)
        return data
    events = [_event(rng) for _ in range(rng.randint(0, 6))]
    return {rng.choice(["invocation_events", "invocationEvents"]): events}


def _seconds(rng: random.Random, high: float) -> float:
    value = rng.uniform(0.0, high)
    return round(value, rng.choice([0, 1, 3, 6])) if rng.random() < 0.6 else value


def _invocation(rng: random.Random, index: int) -> Json:
    inv: dict[str, Json] = {
        "invocation_id": f"i{index}",
        "user_content": {"role": "user", "parts": [{"text": "hi"}]},
    }
    if rng.random() < 0.7:
        inv["final_response"] = {"role": "model", "parts": [{"text": "done"}]}
    _put(inv, "intermediate_data", "intermediateData", _intermediate_data(rng), rng)
    if rng.random() < 0.75:
        total = _seconds(rng, 20.0)
        inv["duration"] = total
        # Parts present, absent or partial; sometimes summing past the total (clamped to 0).
        for snake, camel in (
            ("model_duration", "modelDuration"),
            ("tool_duration", "toolDuration"),
        ):
            roll = rng.random()
            if roll < 0.75:
                _put(inv, snake, camel, _seconds(rng, total * rng.choice([0.3, 0.6, 1.1])), rng)
            elif roll < 0.85:
                _put(inv, snake, camel, None, rng)
    elif rng.random() < 0.3:  # parts without a total: ADK reports nothing
        inv["model_duration"] = _seconds(rng, 5.0)
        inv["tool_duration"] = _seconds(rng, 5.0)
    return inv


def _cases() -> list[list[Json]]:
    rng = random.Random(SEED)
    return [
        [_invocation(rng, i) for i in range(rng.choice([0, 1, 1, 2, 3, 5]))] for _ in range(CASES)
    ]


# --------------------------------------------------------------------------- differential

_PAIRS: list[tuple[Callable[[], AdkEvaluator], type[Any], str | None]] = [
    (_ToolCallCountV1Evaluator, ToolCallCountMetric, None),
    (_InferenceCallCountV1Evaluator, InferenceCallCountMetric, None),
    (_TokenUsageV1Evaluator, TokenUsageMetric, "token_usage_details"),
    (_InvocationDurationV1Evaluator, InvocationDurationMetric, "duration_details"),
]


def _adk_details(result: Any, key: str | None, overall: bool) -> dict[str, Any] | None:
    if key is None:
        return None
    value = getattr(result, f"overall_{key}" if overall else key)
    return None if value is None else dict(value.model_dump())


def _ours_details(details: dict[str, Any] | None, key: str | None) -> dict[str, Any] | None:
    if key is None or details is None:
        return details
    assert set(details) == {key}
    inner: dict[str, Any] = details[key]
    return inner


def _compare(adk: AdkEvaluationResult, ours: MetricResult, key: str | None) -> list[str]:
    problems = []
    if (ours.score, int(ours.status)) != (adk.overall_score, adk.overall_eval_status.value):
        problems.append(f"overall {ours.score!r}/{ours.status!r} != {adk.overall_score!r}")
    if _ours_details(ours.details, key) != _adk_details(adk, key, overall=True):
        problems.append(f"overall details {ours.details!r} != {_adk_details(adk, key, True)!r}")
    if len(ours.per_invocation) != len(adk.per_invocation_results):
        return [*problems, "per-invocation length"]
    for i, (mine, theirs) in enumerate(
        zip(ours.per_invocation, adk.per_invocation_results, strict=True)
    ):
        if (mine.score, int(mine.status)) != (theirs.score, theirs.eval_status.value):
            problems.append(f"[{i}] {mine.score!r}/{mine.status!r} != {theirs.score!r}")
        if _ours_details(mine.details, key) != _adk_details(theirs, key, overall=False):
            problems.append(f"[{i}] details {mine.details!r} != {_adk_details(theirs, key, False)}")
    return problems


Parsed = list[tuple[list[Json], list[AdkInvocation], list[Invocation]]]


@pytest.fixture(scope="module")
def parsed_cases() -> Parsed:
    out = []
    for data in _cases():
        adk = [AdkInvocation.model_validate(inv) for inv in data]
        ours = [Invocation.model_validate(inv) for inv in data]
        out.append((data, adk, ours))
    return out


def _evaluate_cases(metric: Any, parsed: Parsed) -> list[MetricResult]:
    """Our results for every case, on one event loop."""

    async def run_all() -> list[MetricResult]:
        return [await metric.evaluate(invs, None, _case(invs)) for _, _, invs in parsed]

    return asyncio.run(run_all())


@pytest.mark.parametrize(
    ("adk_factory", "metric_type", "key"),
    _PAIRS,
    ids=["tool_call_count", "inference_call_count", "token_usage", "duration"],
)
def test_matches_adk(
    parsed_cases: Parsed,
    adk_factory: Callable[[], AdkEvaluator],
    metric_type: type[Any],
    key: str | None,
) -> None:
    evaluator = adk_factory()
    ours_results = _evaluate_cases(metric_type(None), parsed_cases)
    failures = []
    for (data, adk_invs, _), ours in zip(parsed_cases, ours_results, strict=True):
        adk = evaluator.evaluate_invocations(adk_invs)
        assert isinstance(adk, AdkEvaluationResult)  # these evaluators are synchronous
        assert ours.metric_name == metric_type.info.name
        problems = _compare(adk, ours, key)
        if problems:
            failures.append(f"{problems}\n  case: {data}")
    assert not failures, f"{len(failures)} mismatches, first:\n" + "\n".join(failures[:3])


def _per_invocation(metric: Any, parsed: Parsed) -> list[PerInvocationResult]:
    return [r for result in _evaluate_cases(metric, parsed) for r in result.per_invocation]


def test_generator_covers_the_interesting_shapes(parsed_cases: Parsed) -> None:
    """The random cases reach n/a, zero, partial and clamped values, so the diff means something."""
    seen = {"empty case"} if any(not invs for _, _, invs in parsed_cases) else set()
    inferences = [r.score for r in _per_invocation(InferenceCallCountMetric(None), parsed_cases)]
    seen |= {"inference n/a"} if None in inferences else set()
    seen |= {"inference zero"} if 0.0 in inferences else set()
    for r in _per_invocation(TokenUsageMetric(None), parsed_cases):
        d = r.details["token_usage_details"] if r.details else {}
        seen.add("tokens n/a" if d["total_tokens"] is None else "tokens")
        if d["total_tokens"] is not None and None in d.values():
            seen.add("tokens partial")
        if d["total_tokens"] == 0:
            seen.add("tokens zero")
    for r in _per_invocation(InvocationDurationMetric(None), parsed_cases):
        d = r.details["duration_details"] if r.details else {}
        if d["total_seconds"] is None:
            seen.add("duration n/a")
        elif d["framework_seconds"] is None:
            seen.add("duration partial")
        elif d["total_seconds"] - d["model_seconds"] - d["tool_seconds"] < 0:
            seen.add("duration clamped")
        else:
            seen.add("duration split")
    expected = {
        "empty case", "tokens", "tokens n/a", "tokens partial", "tokens zero", "duration n/a",
        "duration partial", "duration clamped", "duration split", "inference n/a", "inference zero",
    }  # fmt: skip
    assert expected <= seen, expected - seen


# --------------------------------------------------------------------------- pinned values


def _inv(**fields: Json) -> Invocation:
    return Invocation.model_validate({"user_content": {"parts": [{"text": "q"}]}, **fields})


def _events(*events: Json) -> Json:
    return {"invocation_events": [{"author": "agent", **e} for e in events]}


def _call(name: str) -> Json:
    return {"content": {"role": "model", "parts": [{"function_call": {"name": name}}]}}


def _evaluate(metric: Any, invs: list[Invocation]) -> MetricResult:
    result: MetricResult = _run(metric.evaluate(invs, None, _case(invs)))
    return result


def test_tool_call_count_both_shapes() -> None:
    invs = [
        _inv(intermediate_data={"tool_uses": [{"name": "a"}, {"name": "b"}]}),
        _inv(intermediate_data=_events(_call("a"), {"usage_metadata": {}}, _call("b"), _call("c"))),
        _inv(),
    ]
    result = _evaluate(ToolCallCountMetric(None), invs)
    assert [r.score for r in result.per_invocation] == [2.0, 3.0, 0.0]
    assert result.score == pytest.approx(5 / 3)
    assert result.status is EvalStatus.INFORMATIONAL
    assert all(
        r.status is EvalStatus.INFORMATIONAL and r.details is None for r in result.per_invocation
    )


def test_inference_call_count_needs_events() -> None:
    invs = [
        _inv(intermediate_data={"tool_uses": [{"name": "a"}]}),  # static shape: n/a
        _inv(
            intermediate_data=_events(
                {"usage_metadata": {}},  # empty usage still marks a model call
                {"model_version": "gemini-2.5-flash"},  # so does a model version alone
                {"usageMetadata": {"promptTokenCount": 3}},
                _call("a"),  # neither: not a model call
            )
        ),
        _inv(intermediate_data=_events()),
    ]
    result = _evaluate(InferenceCallCountMetric(None), invs)
    assert [r.score for r in result.per_invocation] == [None, 3.0, 0.0]
    assert result.score == 1.5  # the n/a invocation is left out of the mean


def test_token_usage_breakdown_and_all_invocation_average() -> None:
    busy = _inv(
        intermediate_data=_events(
            {
                "usage_metadata": {
                    "prompt_token_count": 100,
                    "candidates_token_count": 20,
                    "thoughts_token_count": 5,
                    "cached_content_token_count": 30,
                    "total_token_count": 9999,  # ignored: total is input + output
                }
            },
            {
                "usageMetadata": {
                    "promptTokenCount": 150,
                    "candidatesTokenCount": 10,
                    "toolUsePromptTokenCount": 7,
                }
            },
            {"model_version": "m"},
        )
    )
    silent = _inv(intermediate_data=_events({"model_version": "m"}))
    result = _evaluate(TokenUsageMetric(None), [busy, silent])
    first, second = result.per_invocation
    assert first.score == 292.0
    assert first.details == {
        "token_usage_details": {
            "total_tokens": 292.0,
            "input_tokens": 257.0,
            "prompt_tokens": 250.0,
            "cached_tokens": 30.0,
            "tool_use_tokens": 7.0,
            "output_tokens": 35.0,
            "candidates_tokens": 30.0,
            "reasoning_tokens": 5.0,
        }
    }
    assert second.score is None
    assert second.details == {"token_usage_details": dict.fromkeys(TOKEN_USAGE_FIELDS)}
    # Averaged over both invocations, the silent one counting as zero: 146, not 292.
    assert result.score == 146.0
    assert result.details is not None
    overall = result.details["token_usage_details"]
    assert overall["input_tokens"] == 128.5
    assert overall["reasoning_tokens"] == 2.5
    assert list(overall) == list(TOKEN_USAGE_FIELDS)


def test_token_usage_output_only_and_unreported_counts() -> None:
    inv = _inv(intermediate_data=_events({"usage_metadata": {"thoughts_token_count": 0}}))
    details = _evaluate(TokenUsageMetric(None), [inv]).per_invocation[0].details
    assert details == {
        "token_usage_details": {
            "total_tokens": 0.0,
            "input_tokens": None,
            "prompt_tokens": None,
            "cached_tokens": None,
            "tool_use_tokens": None,
            "output_tokens": 0.0,
            "candidates_tokens": None,
            "reasoning_tokens": 0.0,
        }
    }


def test_invocation_duration_split_clamp_and_rounding() -> None:
    invs = [
        _inv(duration=2.0, model_duration=1.2, tool_duration=0.5),
        _inv(duration=1.0, modelDuration=1.0004, toolDuration=0.0),  # a hair over: clamped
        _inv(model_duration=1.0, tool_duration=1.0),  # not timed: every part n/a
        _inv(duration=3.0),  # timed before the split existed: framework n/a
    ]
    result = _evaluate(InvocationDurationMetric(None), invs)
    details = [r.details["duration_details"] for r in result.per_invocation if r.details]
    assert details[0] == {
        "total_seconds": 2.0,
        "model_seconds": 1.2,
        "tool_seconds": 0.5,
        "framework_seconds": 0.3,
    }
    assert details[1]["framework_seconds"] == 0.0
    assert details[2] == dict.fromkeys(DURATION_FIELDS)
    assert details[3] == {
        "total_seconds": 3.0,
        "model_seconds": None,
        "tool_seconds": None,
        "framework_seconds": None,
    }
    assert [r.score for r in result.per_invocation] == [2.0, 1.0, None, 3.0]
    assert result.score == 2.0
    assert result.details == {
        "duration_details": {
            "total_seconds": 2.0,
            "model_seconds": 1.1,  # round((1.2 + 1.0004) / 2, 3)
            "tool_seconds": 0.25,
            "framework_seconds": 0.15,
        }
    }


@pytest.mark.parametrize("name", list(EFFICIENCY_METRICS))
def test_no_invocations_is_informational_without_a_score(name: str) -> None:
    result = _evaluate(EFFICIENCY_METRICS[name](None), [])
    assert (result.metric_name, result.score, result.status) == (
        name,
        None,
        EvalStatus.INFORMATIONAL,
    )
    assert result.per_invocation == []
    assert result.details is None
    assert result.reason is None  # no invocation: nothing is missing


def test_registry_mapping_and_threshold_rejection() -> None:
    assert list(EFFICIENCY_METRICS) == [
        "tool_call_count_v1",
        "inference_call_count_v1",
        "token_usage_v1",
        "invocation_duration_v1",
    ]
    for name, factory in EFFICIENCY_METRICS.items():
        metric = factory(None)
        assert metric.info.name == name
        assert metric.info.informational
        with pytest.raises(ValueError, match="does not support a threshold"):
            factory(BaseCriterion(threshold=1.0))


# --------------------------------------------------------------------------- no value: why


def test_an_agent_that_reports_no_tokens_gets_an_informational_row_saying_so() -> None:
    # A plain-Python agent: events with tool calls and a model-less answer, no usage_metadata.
    invs = [
        _inv(intermediate_data=_events(_call("search"), {"content": {"parts": [{"text": "ok"}]}})),
        _inv(intermediate_data=_events()),
    ]
    result = _evaluate(TokenUsageMetric(None), invs)

    # As ADK 2.13: no score, still INFORMATIONAL (never NOT_EVALUATED), every count n/a.
    assert (result.score, result.status) == (None, EvalStatus.INFORMATIONAL)
    assert [(r.score, r.status) for r in result.per_invocation] == [
        (None, EvalStatus.INFORMATIONAL),
        (None, EvalStatus.INFORMATIONAL),
    ]
    assert result.details == {"token_usage_details": dict.fromkeys(TOKEN_USAGE_FIELDS)}
    # assay's addition: the reason, for a report to show instead of a bare dash.
    assert result.reason == NO_VALUE_REASONS["token_usage_v1"]
    assert result.reason is not None and result.reason.startswith(
        "the agent reports no token usage"
    )


def test_one_invocation_with_tokens_is_a_value_and_no_reason() -> None:
    invs = [
        _inv(intermediate_data=_events({"usage_metadata": {"prompt_token_count": 8}})),
        _inv(intermediate_data=_events()),
    ]
    result = _evaluate(TokenUsageMetric(None), invs)

    assert (result.score, result.reason) == (4.0, None)


@pytest.mark.parametrize(
    ("metric", "invocation"),
    [
        (InferenceCallCountMetric(None), _inv(intermediate_data={"tool_uses": [{"name": "a"}]})),
        (InvocationDurationMetric(None), _inv()),
    ],
    ids=["inference_call_count_without_events", "duration_untimed"],
)
def test_the_other_missing_values_say_why_too(metric: Any, invocation: Invocation) -> None:
    result = _evaluate(metric, [invocation])

    assert (result.score, result.status) == (None, EvalStatus.INFORMATIONAL)
    assert result.reason == NO_VALUE_REASONS[metric.info.name]


def test_tool_call_count_always_has_a_value_so_no_reason() -> None:
    result = _evaluate(ToolCallCountMetric(None), [_inv()])

    assert (result.score, result.reason) == (0.0, None)
    assert set(NO_VALUE_REASONS) == set(EFFICIENCY_METRICS) - {"tool_call_count_v1"}


def test_the_bundled_plain_python_agent_gets_a_token_usage_row_without_a_score(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    results = tmp_path / "results.json"
    run = run_cli(
        "eval", example.evalset, "--agent", f"{example.dir / 'agent.py'}:travel_agent",
        "--no-history", "--no-cache", "--output", results,
    )  # fmt: skip

    assert run.code in (0, 1), run.output
    cases = json.loads(results.read_text(encoding="utf-8"))["eval_case_results"]
    rows = [
        row
        for case in cases
        if case["eval_metric_result_per_invocation"]
        for row in case["overall_eval_metric_results"]
        if row["metric_name"] == "token_usage_v1"
    ]
    assert len(rows) == sum(1 for case in cases if case["eval_metric_result_per_invocation"]) > 0
    assert all(
        row["eval_status"] == EvalStatus.INFORMATIONAL and "score" not in row for row in rows
    )
