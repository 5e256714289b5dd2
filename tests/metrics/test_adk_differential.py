"""Differential tests: assay's deterministic metrics against google-adk 2.13.0's own evaluators.

Every case is generated as JSON by a seeded ``random.Random``, then parsed twice: into ADK's
``Invocation`` (scored by ``TrajectoryEvaluator`` / ``RougeEvaluator``) and into assay's
(scored by ``ToolTrajectoryMetric`` / ``ResponseMatchMetric``). The overall score and status and
every per-invocation score and status must be identical (scores compared with ``==``).

The generator aims at the places where a re-implementation can drift: Python ``==`` on args
(``1 == 1.0 == True``, ``-0.0 == 0``, big ints against floats, NFC against NFD), ``None`` args
against ``{}``, both intermediate-data shapes, empty expected lists, and for ROUGE every script
ADK's Unicode-aware tokenizer treats specially, stemming, and degenerate texts.
"""

from __future__ import annotations

import copy
import json
import math
import random
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support import run_metric as _run
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import BaseCriterion as AdkBaseCriterion
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import (
    ToolTrajectoryCriterion as AdkToolTrajectoryCriterion,
)
from google.adk.evaluation.evaluator import EvaluationResult as AdkEvaluationResult
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.local_eval_sets_manager import (
    convert_eval_set_to_pydantic_schema,
    load_eval_set_from_file,
)
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from assay.config import BaseCriterion, MatchType, ToolTrajectoryCriterion
from assay.evalset import EvalCase, Invocation, load_eval_set
from assay.metrics import EvalStatus, MetricResult, ResponseMatchMetric, ToolTrajectoryMetric

SEED = 20_130
CASES_PER_CRITERION = 2_500
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "adk"  # ADK's files, vendored

Json = Any
_OMIT = object()  # a key left out of the JSON object altogether


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


# --------------------------------------------------------------------------- tool calls

_SCALARS: list[Json] = [
    0,
    1,
    -1,
    2,
    42,
    10000000000000001,
    10000000000000000,
    2**53 + 1,
    1.0,
    0.0,
    -0.0,
    1e16,
    float(2**53),
    0.3,
    0.30000000000000004,
    2.5,
    1e-300,
    True,
    False,
    None,
    "",
    "1",
    "1.0",
    "0",
    "true",
    "null",
    "x",
    "X",
    "café",
    _nfd("café"),
    "Straße",
    "ﬁle",
    "İstanbul",
    "東京",
    "😀",
    " padded ",
]
_KEYS = ["a", "b", "x", "city", "query", "items", "nested", "A", "café", _nfd("café"), "ß", ""]
_TOOL_NAMES = [
    "get_weather",
    "get_weather",
    "Get_Weather",
    "search",
    "search",
    "SEARCH",
    "roll_die",
    "check_prime",
    "transfer_to_agent",
    "tool_é",
    _nfd("tool_é"),
]


def _random_value(rng: random.Random, depth: int) -> Json:
    roll = rng.random()
    if depth < 4 and roll < 0.12:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 4 and roll < 0.24:
        return _random_object(rng, depth + 1)
    return rng.choice(_SCALARS)


def _random_object(rng: random.Random, depth: int) -> dict[str, Json]:
    obj: dict[str, Json] = {}
    for _ in range(rng.randint(0, 4)):
        obj[rng.choice(_KEYS)] = _random_value(rng, depth)
    if depth == 0 and rng.random() < 0.25:
        # dicts in lists in dicts, explicitly
        obj["items"] = [{"id": rng.choice(_SCALARS), "tags": [rng.choice(_SCALARS)]}]
    return obj


def _random_args(rng: random.Random) -> Json:
    roll = rng.random()
    if roll < 0.1:
        return _OMIT
    if roll < 0.17:
        return None
    if roll < 0.27:
        return {}
    if roll < 0.33:
        return {"x": None}
    return _random_object(rng, 0)


def _random_call(rng: random.Random) -> dict[str, Json]:
    call: dict[str, Json] = {"name": rng.choice(_TOOL_NAMES)}
    args = _random_args(rng)
    if args is not _OMIT:
        call["args"] = args
    if rng.random() < 0.01:
        del call["name"]  # a call without a name (None == None)
    return call


def _variant(rng: random.Random, value: Json) -> Json:
    """A value that is equal to ``value`` under Python ``==``, or only nearly so."""
    if isinstance(value, bool):
        options: list[Json] = [int(value), float(value), not value, str(value).lower()]
    elif isinstance(value, int):
        options = [float(value), value + 1, -value, str(value)]
        if value == 1:
            options.append(True)
        if value == 0:
            options += [False, -0.0]
        if value == 10000000000000001:
            options.append(1e16)
    elif isinstance(value, float):
        options = [-value, math.nextafter(value, math.inf), repr(value)]
        if value.is_integer():
            options.append(int(value))
        if value == 0.3:
            options.append(0.1 + 0.2)
    elif isinstance(value, str):
        options = [_nfd(value), unicodedata.normalize("NFC", value), value.upper(), value + " "]
    elif value is None:
        options = [{}, [], 0, False, "", "null"]
    elif isinstance(value, list):
        options = [list(reversed(value)), value[1:], [*value, None]]
        if value:
            index = rng.randrange(len(value))
            options.append([_variant(rng, v) if i == index else v for i, v in enumerate(value)])
    else:
        options = [dict(reversed(list(value.items()))), {**value, "x": None}]
        if value:
            key = rng.choice(list(value))
            options.append({k: _variant(rng, v) if k == key else v for k, v in value.items()})
            options.append({k: v for k, v in value.items() if k != key})
    return rng.choice(options)


def _reordered(rng: random.Random, value: Json) -> Json:
    """A deep copy with every dict's keys in a random order (equal under ``==``)."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _reordered(rng, value[k]) for k in keys}
    if isinstance(value, list):
        return [_reordered(rng, v) for v in value]
    return value


def _mutate_args(rng: random.Random, call: dict[str, Json]) -> None:
    args = call.get("args")
    if isinstance(args, dict) and args and rng.random() < 0.85:
        call["args"] = _variant(rng, args)
        return
    # omitted, null, {} and {"x": null} are four different args to ADK
    replacement = rng.choice([_OMIT, None, {}, {"x": None}, _random_object(rng, 0)])
    if replacement is _OMIT:
        call.pop("args", None)
    else:
        call["args"] = replacement


def _mutate_calls(rng: random.Random, expected: list[dict[str, Json]]) -> list[dict[str, Json]]:
    """The actual calls: the expected ones, often disturbed in one or two ways."""
    calls = [_reordered(rng, c) for c in expected]
    for _ in range(rng.choice([0, 1, 1, 1, 2])):
        op = rng.randrange(11)
        if op == 0 and calls:  # an arg (or the args) nearly or exactly equal
            _mutate_args(rng, rng.choice(calls))
        elif op == 1 and calls:  # tool name case or normal form
            call = rng.choice(calls)
            name = call.get("name") or ""
            call["name"] = rng.choice([name.upper(), name.lower(), name.title(), _nfd(name)])
        elif op == 2 and calls:  # a missing call
            del calls[rng.randrange(len(calls))]
        elif op == 3 and calls:  # a duplicate
            calls.insert(rng.randrange(len(calls) + 1), copy.deepcopy(rng.choice(calls)))
        elif op == 4:  # an extra call
            calls.insert(rng.randrange(len(calls) + 1), _random_call(rng))
        elif op == 5:
            rng.shuffle(calls)
        elif op == 6 and len(calls) > 1:  # two neighbours swapped
            i = rng.randrange(len(calls) - 1)
            calls[i], calls[i + 1] = calls[i + 1], calls[i]
        elif op == 7:
            calls = []
        elif op == 8:
            calls = [_random_call(rng) for _ in range(rng.randint(0, 4))]
        elif op == 9 and calls:  # args of one call replaced wholesale
            rng.choice(calls)["args"] = _random_object(rng, 0)
        # op 10 (and the inapplicable ones): unchanged
    return calls


def _with_id(rng: random.Random, call: dict[str, Json]) -> dict[str, Json]:
    if rng.random() < 0.4:
        return {"id": f"call-{rng.randrange(10**6)}", **call}
    return call


def _noise_part(rng: random.Random) -> dict[str, Json]:
    return rng.choice(
        [
            {"text": "Let me check that."},
            {"text": "thinking about tools", "thought": True},
            {"text": None},
            {"function_response": {"name": "get_weather", "response": {"result": "sunny"}}},
            {"functionResponse": {"id": "r1", "name": "search", "response": {}}},
        ]
    )


def _events(rng: random.Random, calls: list[dict[str, Json]]) -> list[dict[str, Json]]:
    events: list[dict[str, Json]] = []
    pending = list(calls)
    while pending or (not events and rng.random() < 0.5):
        parts: list[dict[str, Json]] = []
        for _ in range(rng.randint(1, 3) if pending else 0):
            if pending:
                key = "functionCall" if rng.random() < 0.2 else "function_call"
                parts.append({key: _with_id(rng, pending.pop(0))})
        for _ in range(rng.choice([0, 0, 1, 2])):
            parts.insert(rng.randrange(len(parts) + 1), _noise_part(rng))
        events.append(
            {
                "author": rng.choice(["root_agent", "helper"]),
                "content": {"role": "model", "parts": parts},
            }
        )
        if rng.random() < 0.2:
            events.append(
                rng.choice(
                    [
                        {"author": "root_agent"},
                        {"author": "root_agent", "content": None},
                        {"author": "user", "content": {"role": "user", "parts": None}},
                        {"author": "root_agent", "content": {"parts": []}},
                        {
                            "author": "tool",
                            "content": {"role": "user", "parts": [_noise_part(rng)]},
                        },
                    ]
                )
            )
    return events


def _intermediate(rng: random.Random, calls: list[dict[str, Json]]) -> Json:
    """The calls in one of the two intermediate-data shapes, or no intermediate data at all."""
    if not calls and rng.random() < 0.4:
        return rng.choice([_OMIT, None, {}, {"tool_uses": []}, {"invocation_events": []}])
    if rng.random() < 0.5:
        data: dict[str, Json] = {
            rng.choice(["tool_uses", "toolUses"]): [_with_id(rng, c) for c in calls]
        }
        if rng.random() < 0.3:
            data["tool_responses"] = [
                {"name": c.get("name"), "response": {"ok": True}} for c in calls
            ]
        if rng.random() < 0.2:
            data["intermediate_responses"] = [["helper", [{"text": "working on it"}]]]
        return data
    return {rng.choice(["invocation_events", "invocationEvents"]): _events(rng, calls)}


def _invocation_json(index: int, final_response: Json, intermediate: Json) -> dict[str, Json]:
    data: dict[str, Json] = {
        "invocation_id": f"inv-{index}",
        "user_content": {"role": "user", "parts": [{"text": f"question {index}"}]},
    }
    if final_response is not _OMIT:
        data["final_response"] = final_response
    if intermediate is not _OMIT:
        data["intermediate_data"] = intermediate
    return data


def _random_calls(rng: random.Random) -> list[dict[str, Json]]:
    count = rng.choice([0, 0, 1, 1, 2, 2, 3, 4, 5])
    calls = [_random_call(rng) for _ in range(count)]
    if calls and rng.random() < 0.15:  # a repeated call, for ANY_ORDER's multiset matching
        calls.append(copy.deepcopy(rng.choice(calls)))
    return calls


def _trajectory_case(rng: random.Random) -> tuple[list[Json], list[Json]]:
    actual: list[Json] = []
    expected: list[Json] = []
    for index in range(rng.randint(1, 5)):
        wanted = _random_calls(rng)
        made = _mutate_calls(rng, wanted)
        response = {"role": "model", "parts": [{"text": "done"}]}
        expected.append(_invocation_json(index, response, _intermediate(rng, wanted)))
        actual.append(_invocation_json(index, response, _intermediate(rng, made)))
    return actual, expected


# --------------------------------------------------------------------------- responses

_WORDS = {
    "english": [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "running",
        "run",
        "runs",
        "ran",
        "flies",
        "fly",
        "flying",
        "generous",
        "generate",
        "generation",
        "happily",
        "happy",
        "weather",
        "sunny",
        "cloudy",
        "is",
        "a",
        "an",
        "of",
        "to",
        "cats",
        "cat",
        "agreed",
        "agree",
        "Paris",
        "paris",
        "PARIS",
        "Running",
        "RUN",
        "caresses",
        "ponies",
        "ties",
        "sized",
        "the",
        "THE",
    ],
    "ascii_odd": [
        "don't",
        "it's",
        "state-of-the-art",
        "snake_case",
        "e-mail",
        "U.S.A.",
        "3.14",
        "1,000",
        "2024",
        "42",
        "x2",
        "hello,",
        "world.",
        "(parens)",
        "#tag",
        "@user",
        "a_b_c",
        "o'clock",
    ],
    "accented": [
        "café",
        "cafe",
        _nfd("café"),
        "cafés",
        "résumés",
        "naïvely",
        "größten",
        "größte",
        "Dónde",
        "donde",
        "está",
        "esta",
        "¿Dónde",
        "naïve",
        "naive",
        "résumé",
        "resume",
        "Straße",
        "strasse",
        "STRASSE",
        "İstanbul",
        "istanbul",
        "ﬁne",
        "fine",
        "ﬂower",
        "Ｆｕｌｌ",
        "ｗｉｄｔｈ",
        "１２３",
        "Ⅻ",
        "x²",
        "Ångström",
        "ΣΊΣΥΦΟΣ",
        "σίσυφος",
        "Привет",
        "привет",
        "Ελληνικά",
        "e\u0301",
        "\u0301",
        "ǅemal",
        "Kelvin\u212a",
    ],
    "cjk": [
        "天气很好",
        "東京",
        "今日は晴れです",
        "こんにちは",
        "カタカナ",
        "ｶﾀｶﾅ",
        "안녕하세요",
        "한국어",
        "ᄀ",
        "㍿",
        "①",
        "豈",
        "㐀",
        "ゟ",
        "ヿ",
        "゠",
        "\u3099",
        "。",
        "、",
        "\u4e00\u9fff",
        "\uac00\ud7a3",
    ],
    "complex": [
        "สวัสดีครับ",
        "ภาษาไทย",
        "๑๒๓",
        "ສະບາຍດີ",
        "សួស្តី",
        "ភាសាខ្មែរ",
        "မင်္ဂလာပါ",
        "မြန်မာ",
        "नमस्ते",
        "हिन्दी",
        "क्षत्रिय",
        "مرحبا",
        "العربية",
        "مَرْحَبًا",
        "٣",
        "שלום",
        "\u0e00\u0e7f\u0e80\u0eff",
        "\u1000\u109f\u1780\u17ff",
    ],
    "emoji": ["😀", "👍🏽", "🇫🇷", "❤️", "👨‍👩‍👧", "🙂🙂", "✨"],
    "punct": ["!!!", "...", "—", "–", "¿", "¡", "«»", "'", '"', "-", "_", "@#$%", "…", "·"],
}
_SEPARATORS = [" ", " ", " ", " ", "\n", "", ", ", "\t", "\u00a0", "\u3000", "\u200d"]
_STEM_PAIRS = {
    "running": "run",
    "flies": "fly",
    "generous": "generate",
    "cats": "cat",
    "agreed": "agree",
    "happily": "happy",
    "Straße": "strasse",
    "café": "cafés",
    "cafe": "cafés",
    "résumé": "résumés",
    "naïve": "naïvely",
}


def _random_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.04:
        return ""
    if roll < 0.08:
        return "".join(rng.choice(_WORDS["punct"]) for _ in range(rng.randint(1, 5)))
    if roll < 0.12:
        return " ".join(rng.choice(_WORDS["emoji"]) for _ in range(rng.randint(1, 4)))
    groups = list(_WORDS)
    weights = [5, 2, 3, 2, 2, 1, 1]
    length = rng.randint(100, 250) if rng.random() < 0.01 else rng.randint(1, 25)
    out: list[str] = []
    for _ in range(length):
        out.append(rng.choice(_WORDS[rng.choices(groups, weights)[0]]))
        out.append(rng.choice(_SEPARATORS))
    return "".join(out).strip(" ")


def _related_text(rng: random.Random, text: str) -> str:
    """A text sharing words with ``text``: some changed, dropped, added or stemmed."""
    roll = rng.random()
    if roll < 0.1:
        return text
    if roll < 0.2:
        return _random_text(rng)
    words = text.split(" ")
    out: list[str] = []
    for word in words:
        r = rng.random()
        if r < 0.1:
            continue
        if r < 0.2:
            out.append(_STEM_PAIRS.get(word, word.upper()))
        elif r < 0.3:
            out.append(rng.choice(_WORDS[rng.choice(list(_WORDS))]))
        else:
            out.append(word)
    if rng.random() < 0.3:
        rng.shuffle(out)
    return " ".join(out)


def _content_json(rng: random.Random, text: str) -> Json:
    """A final response carrying ``text`` in one of the shapes ADK reads text from."""
    roll = rng.random()
    if roll < 0.03:
        return _OMIT
    if roll < 0.06:
        return None
    if roll < 0.08:
        return {"role": "model"}
    if roll < 0.10:
        return {"role": "model", "parts": None}
    if roll < 0.12:
        return {"role": "model", "parts": []}
    if roll < 0.14:
        return {"role": "model", "parts": [{"text": None}]}
    if roll < 0.6:
        return {"role": "model", "parts": [{"text": text}]}
    # several parts: the text split up, with thoughts, empty and non-text parts among them
    pieces = text.split(" ")
    cut = sorted(rng.sample(range(len(pieces) + 1), k=min(2, len(pieces) + 1)))
    chunks = [" ".join(pieces[: cut[0]]), " ".join(pieces[cut[0] : cut[-1]])]
    chunks.append(" ".join(pieces[cut[-1] :]))
    parts: list[dict[str, Json]] = [{"text": chunk} for chunk in chunks]
    extras: list[dict[str, Json]] = [
        {"text": "I should answer briefly.", "thought": True},
        {"text": ""},
        {"text": None},
        {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"thought": True, "text": "思考中"},
    ]
    for _ in range(rng.randint(0, 2)):
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(extras))
    return {"role": "model", "parts": parts}


def _response_case(rng: random.Random) -> tuple[list[Json], list[Json]]:
    actual: list[Json] = []
    expected: list[Json] = []
    for index in range(rng.randint(1, 5)):
        reference = _random_text(rng)
        response = _related_text(rng, reference)
        tools = _random_calls(rng) if rng.random() < 0.2 else []
        expected.append(
            _invocation_json(index, _content_json(rng, reference), _intermediate(rng, tools))
        )
        actual.append(
            _invocation_json(index, _content_json(rng, response), _intermediate(rng, tools))
        )
    return actual, expected


# --------------------------------------------------------------------------- running both


def _threshold(rng: random.Random, invocations: int) -> float:
    roll = rng.random()
    if roll < 0.6:
        return rng.choice([0.0, 0.5, 1.0])
    if roll < 0.8:  # exactly at a reachable mean, to test >= against ==
        return rng.randint(0, invocations) / invocations
    return rng.random()


def _mismatch(ours: MetricResult, adk: AdkEvaluationResult) -> str | None:
    """Where our result differs from ADK's, or None when they agree exactly."""
    if ours.score != adk.overall_score:
        return f"overall score {ours.score!r} != ADK {adk.overall_score!r}"
    if int(ours.status) != adk.overall_eval_status.value:
        return f"overall status {ours.status!r} != ADK {adk.overall_eval_status!r}"
    if len(ours.per_invocation) != len(adk.per_invocation_results):
        return "different numbers of per-invocation results"
    for i, (mine, theirs) in enumerate(
        zip(ours.per_invocation, adk.per_invocation_results, strict=True)
    ):
        if mine.score != theirs.score or int(mine.status) != theirs.eval_status.value:
            return (
                f"invocation {i}: {mine.score!r}/{mine.status!r} != "
                f"ADK {theirs.score!r}/{theirs.eval_status!r}"
            )
    return None


def _both(text: str) -> tuple[list[Invocation], list[AdkInvocation], list[Any], list[Any]]:
    """Parse the case's JSON twice, so neither side shares an object with the other."""
    ours = json.loads(text)
    theirs = json.loads(text)
    return (
        [Invocation.model_validate(x) for x in ours["actual"]],
        [AdkInvocation.model_validate(x) for x in theirs["actual"]],
        [Invocation.model_validate(x) for x in ours["expected"]],
        [AdkInvocation.model_validate(x) for x in theirs["expected"]],
    )


CaseMaker = Callable[[random.Random], tuple[list[Json], list[Json]]]
ScoreBoth = Callable[
    [random.Random, list[Invocation], list[Invocation], list[AdkInvocation], list[AdkInvocation]],
    tuple[MetricResult, AdkEvaluationResult, str],
]


def _differential(maker: CaseMaker, seed: int, score_both: ScoreBoth) -> list[float | None]:
    """Generate and score every case both ways; the per-invocation scores, or fail on a mismatch."""
    rng = random.Random(seed)
    failures: list[str] = []
    scores: list[float | None] = []
    for index in range(CASES_PER_CRITERION):
        actual_json, expected_json = maker(rng)
        text = json.dumps({"actual": actual_json, "expected": expected_json}, ensure_ascii=False)
        ours_actual, adk_actual, ours_expected, adk_expected = _both(text)
        ours, adk, setting = score_both(rng, ours_actual, ours_expected, adk_actual, adk_expected)
        scores.extend(r.score for r in ours.per_invocation)
        problem = _mismatch(ours, adk)
        if problem is not None:
            failures.append(f"case {index} ({setting}): {problem}\n  {text}")
            if len(failures) >= 5:
                break
    assert not failures, "\n".join(failures)
    return scores


def _trajectory_both(
    rng: random.Random,
    ours_actual: list[Invocation],
    ours_expected: list[Invocation],
    adk_actual: list[AdkInvocation],
    adk_expected: list[AdkInvocation],
) -> tuple[MetricResult, AdkEvaluationResult, str]:
    match_type = rng.choice(["EXACT", "IN_ORDER", "ANY_ORDER"])
    ignore_args = rng.random() < 0.25
    threshold = _threshold(rng, len(ours_actual))
    evaluator = TrajectoryEvaluator(
        eval_metric=AdkEvalMetric(
            metric_name="tool_trajectory_avg_score",
            threshold=threshold,
            criterion=AdkToolTrajectoryCriterion(
                threshold=threshold, match_type=match_type, ignore_args=ignore_args
            ),
        )
    )
    adk = evaluator.evaluate_invocations(adk_actual, adk_expected)
    assert isinstance(adk, AdkEvaluationResult)
    metric = ToolTrajectoryMetric(
        ToolTrajectoryCriterion(
            threshold=threshold, match_type=MatchType[match_type], ignore_args=ignore_args
        )
    )
    case = EvalCase(eval_id="c", conversation=ours_expected)
    ours = _run(metric.evaluate(ours_actual, ours_expected, case))
    return ours, adk, f"{match_type} ignore_args={ignore_args} threshold={threshold!r}"


def _response_both(
    rng: random.Random,
    ours_actual: list[Invocation],
    ours_expected: list[Invocation],
    adk_actual: list[AdkInvocation],
    adk_expected: list[AdkInvocation],
) -> tuple[MetricResult, AdkEvaluationResult, str]:
    threshold = _threshold(rng, len(ours_actual))
    evaluator = RougeEvaluator(
        AdkEvalMetric(
            metric_name="response_match_score",
            threshold=threshold,
            criterion=AdkBaseCriterion(threshold=threshold),
        )
    )
    adk = evaluator.evaluate_invocations(adk_actual, adk_expected)
    assert isinstance(adk, AdkEvaluationResult)
    metric = ResponseMatchMetric(BaseCriterion(threshold=threshold))
    case = EvalCase(eval_id="c", conversation=ours_expected)
    ours = _run(metric.evaluate(ours_actual, ours_expected, case))
    return ours, adk, f"threshold={threshold!r}"


def test_tool_trajectory_matches_adk_on_generated_cases() -> None:
    scores = _differential(_trajectory_case, SEED, _trajectory_both)
    # the generator is not degenerate: plenty of invocations, both verdicts well represented
    assert len(scores) > 2 * CASES_PER_CRITERION
    assert set(scores) == {0.0, 1.0}
    assert 0.3 < scores.count(1.0) / len(scores) < 0.8


def test_response_match_matches_adk_on_generated_cases() -> None:
    scores = _differential(_response_case, SEED + 1, _response_both)
    assert len(scores) > 2 * CASES_PER_CRITERION
    partial = [s for s in scores if s is not None and 0.0 < s < 1.0]
    assert scores.count(1.0) > len(scores) / 20
    assert scores.count(0.0) > len(scores) / 20
    assert len(partial) > len(scores) / 3


# --------------------------------------------------------------------------- edge cases


def _adk_evaluators(threshold: float) -> list[Any]:
    return [
        TrajectoryEvaluator(
            eval_metric=AdkEvalMetric(
                metric_name="tool_trajectory_avg_score",
                threshold=threshold,
                criterion=AdkToolTrajectoryCriterion(threshold=threshold),
            )
        ),
        RougeEvaluator(
            AdkEvalMetric(
                metric_name="response_match_score",
                threshold=threshold,
                criterion=AdkBaseCriterion(threshold=threshold),
            )
        ),
    ]


def _our_metrics(threshold: float) -> list[Any]:
    return [
        ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=threshold)),
        ResponseMatchMetric(BaseCriterion(threshold=threshold)),
    ]


def _simple_invocations(count: int) -> list[Json]:
    return [
        {
            "user_content": {"parts": [{"text": f"q{i}"}]},
            "final_response": {"parts": [{"text": "the answer"}]},
            "intermediate_data": {"tool_uses": [{"name": "f", "args": {"i": i}}]},
        }
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("actual_count", "expected_count"), [(2, 3), (3, 2), (0, 1), (1, 0), (5, 1)]
)
@pytest.mark.parametrize("which", [0, 1], ids=["trajectory", "rouge"])
def test_invocation_count_mismatch_is_not_evaluated_where_adk_raises(
    which: int, actual_count: int, expected_count: int
) -> None:
    actual_json = _simple_invocations(actual_count)
    expected_json = _simple_invocations(expected_count)
    adk = _adk_evaluators(0.5)[which]
    with pytest.raises(ValueError, match="must have the same length"):
        adk.evaluate_invocations(
            [AdkInvocation.model_validate(x) for x in actual_json],
            [AdkInvocation.model_validate(x) for x in expected_json],
        )
    actual = [Invocation.model_validate(x) for x in actual_json]
    expected = [Invocation.model_validate(x) for x in expected_json]
    case = EvalCase(eval_id="c", conversation=expected)
    result = _run(_our_metrics(0.5)[which].evaluate(actual, expected, case))
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.score is None
    assert result.reason == f"expected {expected_count} invocations, got {actual_count}"
    assert [r.status for r in result.per_invocation] == [EvalStatus.NOT_EVALUATED] * actual_count
    assert all(r.score is None for r in result.per_invocation)


@pytest.mark.parametrize("which", [0, 1], ids=["trajectory", "rouge"])
def test_zero_invocations_is_not_evaluated_like_adk(which: int) -> None:
    adk = _adk_evaluators(0.0)[which].evaluate_invocations([], [])
    assert adk.overall_score is None
    assert adk.overall_eval_status.value == EvalStatus.NOT_EVALUATED
    assert adk.per_invocation_results == []
    result = _run(_our_metrics(0.0)[which].evaluate([], [], EvalCase(eval_id="c", conversation=[])))
    assert result.score is None
    assert result.status is EvalStatus.NOT_EVALUATED
    assert result.per_invocation == []
    assert result.reason == "the case has no invocations"


# --------------------------------------------------------------------------- real eval sets

_FIXTURE_FILES = sorted(
    [*FIXTURES.rglob("*.test.json"), *FIXTURES.rglob("*.evalset.json")],
    key=lambda p: p.as_posix(),
)


def _adk_eval_set(path: Path) -> Any:
    try:
        return load_eval_set_from_file(str(path), "x")
    except KeyError:  # a per-turn legacy list, which only AgentEvaluator reads
        with path.open(encoding="utf-8") as f:
            return convert_eval_set_to_pydantic_schema("x", [{"name": "c", "data": json.load(f)}])


def test_fixture_files_are_found() -> None:
    assert len(_FIXTURE_FILES) >= 20


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=p.relative_to(FIXTURES).as_posix()) for p in _FIXTURE_FILES]
)
def test_fixture_eval_set_scores_match_adk(path: Path) -> None:
    """Each real eval set, actual = expected: EXACT at 1.0 and ROUGE at 0.8, as ADK scores them."""
    ours_set = load_eval_set(path).eval_set
    adk_set = _adk_eval_set(path)
    assert len(ours_set.eval_cases) == len(adk_set.eval_cases)
    compared = 0
    for ours_case, adk_case in zip(ours_set.eval_cases, adk_set.eval_cases, strict=True):
        ours_conv = ours_case.conversation or []
        adk_conv = adk_case.conversation or []
        assert len(ours_conv) == len(adk_conv)
        pairs = [
            (
                ToolTrajectoryMetric(ToolTrajectoryCriterion(threshold=1.0)),
                _adk_evaluators(1.0)[0],
            ),
            (ResponseMatchMetric(BaseCriterion(threshold=0.8)), _adk_evaluators(0.8)[1]),
        ]
        for metric, evaluator in pairs:
            ours = _run(metric.evaluate(ours_conv, ours_conv, ours_case))
            adk = evaluator.evaluate_invocations(adk_conv, adk_conv)
            problem = _mismatch(ours, adk)
            assert problem is None, f"{ours_case.eval_id} {metric.info.name}: {problem}"
            compared += 1
    assert compared > 0


def test_roll_die_reference_with_null_text_scores_zero() -> None:
    [path] = [p for p in _FIXTURE_FILES if p.name == "roll_die.test.json"]
    case = load_eval_set(path).eval_set.eval_cases[0]
    conversation = case.conversation or []
    metric = ResponseMatchMetric(BaseCriterion(threshold=0.8))
    result = _run(metric.evaluate(conversation, conversation, case))
    scores = [r.score for r in result.per_invocation]
    assert scores[2] == 0.0
    assert scores[:2] == [1.0, 1.0]


# --------------------------------------------------------------------------- script boundaries

_SCRIPT_RANGES = (
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0x3040, 0x30FF),  # hiragana, katakana
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1780, 0x17FF),  # Khmer
    (0x1000, 0x109F),  # Myanmar
)


@pytest.mark.parametrize(("low", "high"), _SCRIPT_RANGES)
def test_tokens_at_the_edges_of_each_unspaced_script_match_adk(low: int, high: int) -> None:
    """Random texts rarely hold the first or last character of a script's block, or the one
    just outside it: each edge, alone and between letters of the block, tokenizes as ADK's."""
    from google.adk.evaluation.final_response_match_v1 import _UnicodeAwareTokenizer

    from assay.metrics.rouge import clear_caches, tokenize

    adk = _UnicodeAwareTokenizer(use_stemmer=True)
    inside = chr(low + 1) + chr(high - 1)
    for code in (low - 1, low, low + 1, high - 1, high, high + 1):
        for text in (chr(code), f"{inside}{chr(code)}{inside}", f"ab {chr(code)}{chr(code)} cd"):
            clear_caches()
            assert list(tokenize(text)) == adk.tokenize(text), (hex(code), text)
