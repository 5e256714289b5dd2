"""``hallucinations_v1``: steps, context, parsers, label scoring, means, reasons and notes, with a
scripted in-process judge; and a differential test against google-adk 2.13.0's own evaluator."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from assay.config import HallucinationsCriterion
from assay.evalset import EvalCase, Invocation
from assay.llm.base import LlmCallError, LlmError, LlmRequest, LlmResponse, TokenUsage
from assay.llm.judge import Judge
from assay.metrics import EvalStatus, MetricResult
from assay.metrics.hallucinations import (
    HallucinationsMetric,
    SentenceLabel,
    label_score,
    parse_labels,
    parse_sentences,
    step_score,
    steps_for,
)
from assay.metrics.prompts import hallucinations as prompts

Reply = Callable[[LlmRequest], "str | LlmError"]


class FakeCaller:
    """A judge client answering from a function of the request; records every request."""

    model = "scripted:test"

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[LlmRequest] = []

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        self.requests.append(request)
        await asyncio.sleep(0)
        answer = self.reply(request)
        if isinstance(answer, LlmError):
            raise answer
        usage = TokenUsage(prompt_tokens=10, completion_tokens=2, calls=1)
        return LlmResponse(text=answer, model=self.model, usage=usage)


def is_segmenter(request: LlmRequest) -> bool:
    return request.messages[0].content == prompts.SEGMENTER_INSTRUCTIONS


def answer_of(request: LlmRequest) -> str:
    """The text a segmenter request asks to split."""
    user = request.messages[-1].content
    return user.removeprefix("<answer>\n").removesuffix("\n</answer>")


def sentences_of(request: LlmRequest) -> list[str]:
    """The sentences a validator request asks to label."""
    block = request.messages[-1].content.split("<sentences>\n", 1)[1]
    lines = block.removesuffix("\n</sentences>").splitlines()
    return [json.loads(line.split(". ", 1)[1]) for line in lines]


def context_of(request: LlmRequest) -> str:
    user = request.messages[-1].content
    return user.split("<context>\n", 1)[1].split("\n</context>", 1)[0]


def labelling(labels: dict[str, str], default: str = "supported") -> Reply:
    """A judge that splits answers at '. ' and labels each sentence from ``labels``."""

    def reply(request: LlmRequest) -> str:
        if is_segmenter(request):
            parts = [p for p in answer_of(request).split(". ") if p]
            return json.dumps({"sentences": parts})
        items = [
            {
                "sentence": s,
                "label": labels.get(s, default),
                "rationale": "because",
                "supporting_excerpt": None,
                "contradicting_excerpt": None,
            }
            for s in sentences_of(request)
        ]
        return json.dumps({"sentences": items})

    return reply


def make_metric(
    reply: Reply, *, intermediate: bool = False, threshold: float = 0.8, **options: Any
) -> tuple[HallucinationsMetric, FakeCaller]:
    caller = FakeCaller(reply)
    criterion = HallucinationsCriterion.model_validate(
        {
            "threshold": threshold,
            "evaluate_intermediate_nl_responses": intermediate,
            "judge_model_options": options,
        }
    )
    judge = Judge(client=caller, metric="hallucinations_v1", source="test")
    return HallucinationsMetric(criterion, judge), caller


def inv(final: str | None = "Paris is sunny", **extra: Any) -> Invocation:
    data: dict[str, Any] = {"invocation_id": "i", "user_content": {"parts": [{"text": "Weather?"}]}}
    if final is not None:
        data["final_response"] = {"parts": [{"text": final}]}
    data.update(extra)
    return Invocation.model_validate(data)


def text_event(author: str, *texts: str) -> dict[str, Any]:
    return {"author": author, "content": {"parts": [{"text": t} for t in texts]}}


def call_event(name: str, args: dict[str, Any], response: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"author": "root", "content": {"parts": [{"function_call": {"name": name, "args": args}}]}},
        {
            "author": "root",
            "content": {"parts": [{"function_response": {"name": name, "response": response}}]},
        },
    ]


def events(*items: dict[str, Any]) -> dict[str, Any]:
    return {"invocation_events": list(items)}


def run(metric: HallucinationsMetric, actual: Sequence[Invocation]) -> MetricResult:
    case = EvalCase(eval_id="case-1", conversation=list(actual))
    return asyncio.run(metric.evaluate(actual, None, case))


APP = {
    "agent_details": {
        "root": {
            "name": "root",
            "instructions": "Answer about weather.",
            "tool_declarations": [{"function_declarations": [{"name": "get_weather"}]}],
        },
        "silent": {"name": "silent"},
        "helper": {"name": "helper", "instructions": "Be brief."},
    }
}


# --------------------------------------------------------------------------- steps and context


def test_without_the_intermediate_flag_only_the_final_response_is_a_step() -> None:
    actual = inv(intermediate_data=events(text_event("root", "Let me look.")))
    steps = steps_for(actual, intermediate=False)
    assert [(s.kind, s.text) for s in steps] == [("final", "Paris is sunny")]
    assert "Let me look." in steps[0].context  # still context for the final response


def test_with_the_intermediate_flag_each_text_part_is_a_step_before_the_final_one() -> None:
    actual = inv(
        intermediate_data=events(
            text_event("root", "First.", "Second."),
            *call_event("get_weather", {"city": "Paris"}, {"sky": "sunny"}),
            text_event("helper", "Third."),
        )
    )
    steps = steps_for(actual, intermediate=True)
    assert [(s.kind, s.text) for s in steps] == [
        ("intermediate", "First."),
        ("intermediate", "Second."),
        ("intermediate", "Third."),
        ("final", "Paris is sunny"),
    ]
    # A step sees only the events before its own event; both parts of one event share a context.
    assert steps[0].context == steps[1].context
    assert "First." not in steps[0].context and "sunny" not in steps[0].context
    assert "First." in steps[2].context and '"sky": "sunny"' in steps[2].context
    assert "Third." not in steps[2].context and "Third." in steps[3].context


def test_no_final_text_and_no_intermediate_text_gives_no_steps() -> None:
    actual = inv(final=None, intermediate_data=events(text_event("root", "Thinking.")))
    assert steps_for(actual, intermediate=False) == []
    assert [s.text for s in steps_for(actual, intermediate=True)] == ["Thinking."]


def test_the_context_lists_what_every_case_shares_first_then_the_prompt_and_events_compact() -> (
    None
):
    actual = inv(
        app_details=APP,
        intermediate_data=events(
            text_event("root", "Checking."),
            *call_event("get_weather", {"city": "Paris"}, {"sky": "sunny"}),
        ),
    )
    context = steps_for(actual, intermediate=False)[0].context
    order = [
        "Developer instructions:\nroot:\nAnswer about weather.\n\nhelper:\nBe brief.\n",
        'Tool definitions:\n{"tool_declarations":{"root":[',
        "Grounding metadata:\nNo grounding metadata was provided.\n",
        "User prompt:\nWeather?\n",
        "Checking.\n",
        'tool_calls:\n[{"args": {"city": "Paris"}, "name": "get_weather"',
        'tool_outputs:\n[{"name": "get_weather", "response": {"sky": "sunny"',
    ]
    positions = [context.index(piece) for piece in order]
    assert positions == sorted(positions)
    assert "\n  " not in context  # nothing indented: whitespace costs a local judge tokens
    assert "silent" not in context.split("Tool definitions:")[0]  # no instructions, not listed


def test_without_app_details_the_context_says_the_agent_has_no_tools() -> None:
    context = steps_for(inv(), intermediate=False)[0].context
    assert context.startswith(
        "Developer instructions:\n\n\nTool definitions:\nAgent has no tools.\n"
    )
    assert "User prompt:\nWeather?\n" in context


def test_static_intermediate_data_gives_tool_calls_and_outputs_as_context() -> None:
    # ADK builds no context from this shape; assay does (a documented departure).
    actual = inv(
        intermediate_data={
            "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}],
            "tool_responses": [{"name": "get_weather", "response": {"sky": "sunny"}}],
            "intermediate_responses": [["helper", [{"text": "Looking it up."}]]],
        }
    )
    final = steps_for(actual, intermediate=False)
    assert len(final) == 1
    context = final[0].context
    assert context.index("tool_calls:") < context.index("tool_outputs:")
    assert context.index("tool_outputs:") < context.index("Looking it up.")
    assert '"sky": "sunny"' in context
    steps = steps_for(actual, intermediate=True)
    assert [(s.kind, s.text) for s in steps] == [
        ("intermediate", "Looking it up."),
        ("final", "Paris is sunny"),
    ]
    assert '"sky": "sunny"' in steps[0].context  # tools come first in the static shape
    assert "Looking it up." not in steps[0].context


def test_an_events_own_grounding_metadata_is_context_for_its_own_text() -> None:
    grounded = {
        **text_event("root", "Rain later."),
        "grounding_metadata": {"webSearchQueries": ["q"]},
    }
    actual = inv(intermediate_data=events(text_event("root", "Hi."), grounded))
    steps = steps_for(actual, intermediate=True)
    assert "No grounding metadata was provided." in steps[0].context
    grounding = steps[1].context.split("Grounding metadata:\n", 1)[1]
    assert grounding.startswith('{"grounding_metadata":[{"step":1,')
    assert '"web_search_queries":["q"]' in grounding
    assert "Rain later." not in steps[1].context  # its grounding, not its text


# --------------------------------------------------------------------------- parsers


@pytest.mark.parametrize(
    "text",
    [
        '{"sentences": ["A.", "B."]}',
        'Here you go:\n```json\n{"sentences": ["A.", "B."]}\n```',
        'Sure! {"sentences": ["A.", "B."]} Done.',
        "<sentence>A.</sentence>\n<sentence>B.</sentence>",
    ],
)
def test_the_segmenter_answer_is_read_as_json_or_as_adk_sentence_tags(text: str) -> None:
    assert parse_sentences(text).value == ["A.", "B."]


def test_adk_sentence_tags_are_kept_verbatim_across_lines() -> None:
    parsed = parse_sentences("<sentence> | a | b |\n| 1 | 2 | </sentence>")
    assert parsed.value == [" | a | b |\n| 1 | 2 | "]


def test_a_segmenter_answer_without_sentences_has_a_reason_and_no_value() -> None:
    parsed = parse_sentences("I cannot split this.")
    assert parsed.value is None and parsed.reason is not None
    assert parse_sentences('{"sentences": [1, 2]}').value is None  # not strings
    assert parse_sentences('{"sentences": []}').value == []


ADK_BLOCKS = """\
sentence: Apples are red.
label: supported
rationale: The context says so.
supporting_excerpt: Apples are red fruits.
contradicting_excerpt: null

Sentence: Bananas are green.
LABEL: Contradictory
rationale: The context says yellow,
not green.
supporting_excerpt: NULL
contradicting_excerpt: Bananas are yellow."""


def test_adk_validator_blocks_are_read_with_any_case_field_names_and_null_excerpts() -> None:
    parsed = parse_labels(ADK_BLOCKS)
    assert parsed.value == [
        SentenceLabel(
            "Apples are red.", "supported", "The context says so.", "Apples are red fruits.", None
        ),
        SentenceLabel(
            "Bananas are green.",
            "Contradictory",
            "The context says yellow,\nnot green.",
            None,
            "Bananas are yellow.",
        ),
    ]
    assert parsed.score == 0.5


def test_json_validator_answers_are_read_fenced_or_with_text_around() -> None:
    body = {
        "sentences": [
            {"sentence": "A.", "label": "supported", "rationale": "r", "supporting_excerpt": "A"},
            {"sentence": "B.", "label": "not_applicable", "contradicting_excerpt": "null"},
            "not an object",
        ]
    }
    parsed = parse_labels(f"Labels:\n```json\n{json.dumps(body)}\n```\nThanks")
    assert parsed.value == [
        SentenceLabel("A.", "supported", "r", "A", None),
        SentenceLabel("B.", "not_applicable", "", None, None),
    ]
    assert parsed.score == 1.0


def test_a_validator_answer_without_labels_has_no_value_and_a_reason() -> None:
    parsed = parse_labels("sentence: A.\nlabel: supported\n(missing the other fields)")
    assert parsed.value is None and parsed.score is None
    assert parsed.reason == "no sentence labels found in the validator's answer"


@pytest.mark.parametrize(
    ("label", "score"),
    [
        ("supported", 1),
        (" Supported ", 1),
        ("NOT_APPLICABLE", 1),
        ("unsupported", 0),
        ("contradictory", 0),
        ("Disputed", 0),
        ("not applicable", None),
        ("partially", None),
        ("", None),
    ],
)
def test_labels_score_one_zero_or_are_ignored(label: str, score: int | None) -> None:
    assert label_score(label) == score


def test_a_step_scores_the_mean_of_its_known_labels_and_ignores_the_rest() -> None:
    labels = [
        SentenceLabel("a", "supported"),
        SentenceLabel("b", "maybe"),
        SentenceLabel("c", "disputed"),
    ]
    assert step_score(labels) == 0.5
    assert step_score([SentenceLabel("a", "maybe")]) is None
    parsed = parse_labels('{"sentences": [{"sentence": "a", "label": "maybe"}]}')
    assert parsed.value is not None and parsed.score is None
    assert parsed.reason == "no sentence got a known label"


# --------------------------------------------------------------------------- scoring


def test_the_case_scores_the_mean_of_invocation_means_not_of_all_sentences() -> None:
    labels = {"A": "supported", "B": "unsupported", "C": "supported", "D": "contradictory"}
    metric, _ = make_metric(labelling(labels), intermediate=True, threshold=0.4)
    first = inv("A. B", intermediate_data=events(text_event("root", "C")))  # steps: 1.0, 0.5
    second = inv("D")  # 0.0
    result = run(metric, [first, second])
    assert [r.score for r in result.per_invocation] == [0.75, 0.0]
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.score == 0.375  # pooled over sentences it would be 2/4
    assert result.status == EvalStatus.FAILED


def test_num_samples_is_ignored_one_segmenter_and_one_validator_call_per_step() -> None:
    metric, caller = make_metric(labelling({}), num_samples=5)
    result = run(metric, [inv("A. B")])
    assert result.score == 1.0 and result.status == EvalStatus.PASSED
    assert [is_segmenter(r) for r in caller.requests] == [True, False]
    assert sentences_of(caller.requests[1]) == ["A", "B"]


def test_the_validator_schema_names_each_sentence_so_none_is_copied_by_generation() -> None:
    schema = prompts.validator_schema(["A.", "B.", "A."])
    listed = schema["properties"]["sentences"]
    assert listed["items"]["properties"]["sentence"]["enum"] == ["A.", "B."]
    assert listed["minItems"] == listed["maxItems"] == 3
    assert (
        "enum"
        not in prompts.VALIDATOR_SCHEMA["properties"]["sentences"]["items"]["properties"][
            "sentence"
        ]
    )


def test_requests_put_the_instructions_first_and_send_a_schema_and_the_config() -> None:
    metric, caller = make_metric(labelling({}), judge_model_config={"temperature": 0.2, "seed": 3})
    run(metric, [inv("A")])
    segmenter, validator = caller.requests
    assert [m.role for m in validator.messages] == ["system", "user"]
    assert validator.messages[0].content == prompts.VALIDATOR_INSTRUCTIONS
    assert segmenter.response_schema == prompts.SEGMENTER_SCHEMA
    assert validator.response_schema == prompts.validator_schema(sentences_of(validator))
    assert validator.temperature == 0.2 and validator.params == {"seed": 3}
    user = validator.messages[1].content
    assert (
        user.index("<context>") < user.index("User prompt:\nWeather?") < user.index("<sentences>")
    )


def test_no_text_to_check_is_not_evaluated_with_a_reason() -> None:
    metric, caller = make_metric(labelling({}))
    result = run(metric, [inv(final=None)])
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    assert result.per_invocation[0].status == EvalStatus.NOT_EVALUATED
    assert result.notes is not None
    assert result.notes.per_invocation[0].reason == (
        "nothing to check: the invocation has no final response text"
    )
    assert result.reason == (
        "no invocation was scored; invocation 1 (i): "
        "nothing to check: the invocation has no final response text"
    )
    assert caller.requests == []


def test_a_case_without_invocations_is_not_evaluated() -> None:
    metric, _ = make_metric(labelling({}))
    result = run(metric, [])
    assert result.status == EvalStatus.NOT_EVALUATED
    assert result.reason == "the case has no invocations"


def test_a_failed_step_is_skipped_with_its_reason_and_the_other_steps_still_count() -> None:
    def reply(request: LlmRequest) -> str | LlmError:
        if is_segmenter(request) and answer_of(request) == "Broken":
            return LlmCallError("gave up after 4 attempts: HTTP 503")
        return labelling({"Fine": "unsupported"})(request)

    metric, _ = make_metric(reply, intermediate=True, threshold=0.0)
    result = run(metric, [inv("Fine", intermediate_data=events(text_event("root", "Broken")))])
    assert result.score == 0.0 and result.status == EvalStatus.PASSED
    assert result.notes is not None
    steps = result.notes.per_invocation[0].details["steps"]  # type: ignore[index]
    assert steps[0]["score"] is None
    assert steps[0]["reason"] == "segmenter call failed: gave up after 4 attempts: HTTP 503"
    assert steps[1]["score"] == 0.0 and steps[1]["reason"] is None


def test_an_unparseable_validator_answer_is_no_score_its_text_is_kept() -> None:
    def reply(request: LlmRequest) -> str:
        return '{"sentences": ["A"]}' if is_segmenter(request) else "All good!"

    metric, _ = make_metric(reply)
    result = run(metric, [inv("A")])
    assert result.status == EvalStatus.NOT_EVALUATED and result.score is None
    assert result.notes is not None
    notes = result.notes.per_invocation[0]
    assert notes.samples[1].text == "All good!" and notes.samples[1].score is None
    assert notes.samples[1].reason == "no sentence labels found in the validator's answer"
    assert notes.reason == (
        "no text could be scored (step 1 (final text): "
        "no sentence labels found in the validator's answer)"
    )


def test_a_segmenter_that_finds_no_sentences_leaves_the_step_unscored() -> None:
    metric, caller = make_metric(lambda request: '{"sentences": []}')
    result = run(metric, [inv("A")])
    assert result.notes is not None
    assert "the segmenter found no sentences" in (result.notes.per_invocation[0].reason or "")
    assert len(caller.requests) == 1  # no validator call


def test_notes_record_judge_usage_every_call_and_the_sentence_labels() -> None:
    metric, _ = make_metric(labelling({"B": "disputed"}), intermediate=True)
    result = run(metric, [inv("A. B", intermediate_data=events(text_event("root", "C")))])
    notes = result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:test", "test")
    assert notes.usage == TokenUsage(prompt_tokens=40, completion_tokens=8, calls=4)
    invocation = notes.per_invocation[0]
    assert invocation.invocation_id == "i" and invocation.reason is None
    assert [s.sample for s in invocation.samples] == [0, 1, 2, 3]
    assert [s.score for s in invocation.samples] == [None, 1.0, None, 0.5]
    assert invocation.details is not None
    steps = invocation.details["steps"]
    assert [(s["kind"], s["text"], s["score"], s["calls"]) for s in steps] == [
        ("intermediate", "C", 1.0, [0, 1]),
        ("final", "A. B", 0.5, [2, 3]),
    ]
    assert steps[1]["sentences"][1] == {
        "sentence": "B",
        "label": "disputed",
        "rationale": "because",
        "supporting_excerpt": None,
        "contradicting_excerpt": None,
    }


def test_invocations_are_judged_concurrently_and_reported_in_order() -> None:
    started: list[str] = []
    both_started = asyncio.Event()

    class Gate(FakeCaller):
        async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
            if is_segmenter(request):
                started.append(answer_of(request))
                if len(started) == 2:
                    both_started.set()
                await asyncio.wait_for(both_started.wait(), 2.0)  # deadlocks if sequential
            return await super().generate(request, sample=sample)

    caller = Gate(labelling({"Second": "unsupported"}))
    criterion = HallucinationsCriterion(threshold=0.5)
    metric = HallucinationsMetric(criterion, Judge(client=caller, metric="hallucinations_v1"))
    result = run(metric, [inv("First"), inv("Second")])
    assert [r.score for r in result.per_invocation] == [1.0, 0.0]


def test_parallelism_limit_caps_the_calls_of_a_whole_case() -> None:
    in_flight: list[int] = [0, 0]  # now, most

    class Counting(FakeCaller):
        async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
            for _ in range(3):
                await asyncio.sleep(0)
            in_flight[0] -= 1
            return await super().generate(request, sample=sample)

    caller = Counting(labelling({}))
    criterion = HallucinationsCriterion.model_validate(
        {"threshold": 0.5, "judge_model_options": {"parallelism_limit": 1}}
    )
    metric = HallucinationsMetric(criterion, Judge(client=caller, metric="hallucinations_v1"))
    result = run(metric, [inv("A"), inv("B"), inv("C")])
    assert result.score == 1.0 and len(caller.requests) == 6
    assert in_flight[1] == 1
    unlimited, _ = make_metric(labelling({}))
    in_flight[1] = 0
    unlimited.judge = Judge(client=Counting(labelling({})), metric="hallucinations_v1")
    run(unlimited, [inv("A"), inv("B"), inv("C")])
    assert in_flight[1] == 3


# --------------------------------------------------------------------------- ADK differential

ADK_WORDS = ["Paris", "rain", "é", "2 °C", "sunny", "tomorrow", "*", "1.", "ok", "北京"]
ADK_LABELS = [
    "supported",
    "unsupported",
    "contradictory",
    "disputed",
    "not_applicable",
    "Supported",
    " NOT_APPLICABLE ",
    "partially",
    "",
]


def _rng_for(*key: object) -> Any:
    import random

    return random.Random(json.dumps(key, ensure_ascii=False))


def _words(rng: Any, low: int, high: int) -> str:
    return " ".join(rng.choice(ADK_WORDS) for _ in range(rng.randint(low, high)))


def adk_segmenter_text(answer: str) -> str:
    """The segmenter's answer in ADK's format, a pure function of the text to split."""
    rng = _rng_for("seg", answer)
    if rng.random() < 0.08:
        return "I cannot segment this."
    pieces = [f"{answer[:12]} #{k}" for k in range(rng.randint(1, 3))]
    return "\n".join(f"<sentence>{p}</sentence>" for p in pieces)


def adk_validator_text(sentences: Sequence[str]) -> str:
    """The validator's answer in ADK's format, a pure function of the sentences."""
    rng = _rng_for("val", list(sentences))
    if rng.random() < 0.08:
        return "No labels today."
    blocks = []
    for sentence in sentences:
        support = rng.choice(["null", "NULL", _words(rng, 1, 3)])
        blocks.append(
            f"sentence: {sentence}\nlabel: {rng.choice(ADK_LABELS)}\n"
            f"rationale: {_words(rng, 0, 4)}\nsupporting_excerpt: {support}\n"
            f"contradicting_excerpt: null"
        )
    if rng.random() < 0.1:
        blocks.append("sentence: dangling\nlabel: supported")  # an incomplete block
    return "\n\n".join(blocks)


def _fails(kind: str, key: object) -> bool:
    return bool(_rng_for("fail", kind, key).random() < 0.05)


def _random_part(rng: Any) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.45:
        return {"text": _words(rng, 1, 6)}
    name = rng.choice(["get_weather", "lookup"])
    if roll < 0.75:
        call: dict[str, Any] = {"name": name, "args": {"city": _words(rng, 1, 2), "n": 1.5}}
        if rng.random() < 0.3:
            call["id"] = f"call-{rng.randint(0, 9)}"
        return {"function_call": call}
    return {"function_response": {"name": name, "response": {"out": _words(rng, 1, 3)}}}


def _random_event(rng: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"author": rng.choice(["root", "helper"])}
    if rng.random() < 0.9:
        event["content"] = {"parts": [_random_part(rng) for _ in range(rng.randint(0, 3))]}
    if rng.random() < 0.15:
        event["grounding_metadata"] = {"web_search_queries": [_words(rng, 1, 2)]}
    return event


def random_invocation(rng: Any, index: int) -> dict[str, Any]:
    data: dict[str, Any] = {
        "invocation_id": f"inv-{index}",
        "user_content": {"role": "user", "parts": [{"text": _words(rng, 1, 5)}]},
        "intermediate_data": {
            "invocation_events": [_random_event(rng) for _ in range(rng.randint(0, 4))]
        },
    }
    if rng.random() < 0.85:
        data["final_response"] = {"role": "model", "parts": [{"text": _words(rng, 1, 8)}]}
    if rng.random() < 0.7:
        tools = [{"function_declarations": [{"name": "get_weather", "description": "Wetter é"}]}]
        agents: dict[str, Any] = {"root": {"name": "root", "instructions": _words(rng, 0, 4)}}
        agents["root"]["tool_declarations"] = tools
        if rng.random() < 0.5:
            agents["helper"] = {"name": "helper", "instructions": "Be brief."}
        data["app_details"] = {"agent_details": agents}
    return data


def _between(text: str, start: str, end: str) -> str:
    # The last occurrence: ADK's prompts show a worked example with the same markers first.
    return text.rsplit(start, 1)[1].split(end, 1)[0]


class AdkStubJudge:
    """Stands in for ADK's judge model: answers from the same functions, records contexts."""

    def __init__(self) -> None:
        self.contexts: list[tuple[tuple[str, ...], str]] = []

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        from google.adk.models.llm_response import LlmResponse as AdkLlmResponse
        from google.genai import types as genai_types

        prompt = llm_request.contents[0].parts[0].text
        if "**Sentences Begin**" in prompt:
            block = _between(prompt, "**Sentences Begin**\n", "\n**Sentences End**")
            sentences = tuple(s for s in block.split("</sentence>\n<sentence>"))
            sentences = tuple(
                s.removeprefix("<sentence>").removesuffix("</sentence>") for s in sentences
            )
            self.contexts.append(
                (sentences, _between(prompt, "**Context Begin**\n", "\n**Context End**"))
            )
            if _fails("val", sentences):
                raise RuntimeError("judge down")
            text = adk_validator_text(sentences)
        else:
            answer = _between(prompt, "**Response Begin**\n", "\n**Response End**")
            if _fails("seg", answer):
                raise RuntimeError("judge down")
            text = adk_segmenter_text(answer)
        yield AdkLlmResponse(content=genai_types.Content(parts=[genai_types.Part(text=text)]))


def assay_reply(contexts: list[tuple[tuple[str, ...], str]]) -> Reply:
    def reply(request: LlmRequest) -> str | LlmError:
        if is_segmenter(request):
            answer = answer_of(request)
            return (
                LlmCallError("judge down") if _fails("seg", answer) else adk_segmenter_text(answer)
            )
        sentences = tuple(sentences_of(request))
        contexts.append((sentences, context_of(request)))
        return (
            LlmCallError("judge down")
            if _fails("val", sentences)
            else adk_validator_text(sentences)
        )

    return reply


_USER_PROMPT = re.compile(r"User prompt:\n([^\n]*)\n(?:\n|\Z)")
_DECODER = json.JSONDecoder()


def canonical_context(context: str) -> tuple[str, str]:
    """What a context tells the judge, whatever its order and layout: the user prompt, and the
    rest with the user prompt's section taken out and every JSON value written compact."""
    found = _USER_PROMPT.search(context)
    assert found is not None, context
    rest = context[: found.start()] + context[found.end() :]
    out, at = [], 0
    while at < len(rest):
        if rest[at] in "[{" and (at == 0 or rest[at - 1] == "\n"):
            try:
                value, end = _DECODER.raw_decode(rest, at)
            except json.JSONDecodeError:
                pass
            else:
                out.append(json.dumps(value))
                at = end
                continue
        out.append(rest[at])
        at += 1
    return found.group(1), re.sub(r"\n{2,}", "\n\n", "".join(out)).strip()


@pytest.mark.filterwarnings("ignore:.*EXPERIMENTAL.*:UserWarning")
@pytest.mark.parametrize("intermediate", [False, True])
def test_scores_and_contexts_equal_adks_on_the_same_judge_answers(intermediate: bool) -> None:
    from google.adk.evaluation.eval_case import Invocation as AdkInvocation
    from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
    from google.adk.evaluation.eval_metrics import (
        HallucinationsCriterion as AdkHallucinationsCriterion,
    )
    from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator

    rng = _rng_for("cases", intermediate)
    adk_stub = AdkStubJudge()
    adk = HallucinationsV1Evaluator(
        AdkEvalMetric(
            metric_name="hallucinations_v1",
            criterion=AdkHallucinationsCriterion(
                threshold=0.6, evaluate_intermediate_nl_responses=intermediate
            ),
        )
    )
    adk._judge_model = adk_stub  # type: ignore[assignment]
    our_contexts: list[tuple[tuple[str, ...], str]] = []
    metric, _ = make_metric(assay_reply(our_contexts), intermediate=intermediate, threshold=0.6)
    compared = 0
    statuses: set[EvalStatus] = set()
    for case_index in range(60):
        cases = [random_invocation(rng, i) for i in range(rng.randint(1, 3))]
        expected_result = asyncio.run(
            adk.evaluate_invocations([AdkInvocation.model_validate(c) for c in cases])
        )
        result = run(metric, [Invocation.model_validate(c) for c in cases])
        assert result.score == expected_result.overall_score, case_index
        assert result.status.value == expected_result.overall_eval_status.value, case_index
        for ours, theirs in zip(
            result.per_invocation, expected_result.per_invocation_results, strict=True
        ):
            assert ours.score == theirs.score and ours.status.value == theirs.eval_status.value
            statuses.add(ours.status)
        compared += len(cases)
    # The same sections with the same content as ADK's; only the order and the layout differ.
    assert sorted((s, canonical_context(c)) for s, c in our_contexts) == sorted(
        (s, canonical_context(c)) for s, c in adk_stub.contexts
    )
    assert all(c not in adk_stub.contexts for _, c in our_contexts[:5])
    assert compared > 100 and len(our_contexts) > 60
    assert statuses == {EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED}
