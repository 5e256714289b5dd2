"""``per_turn_user_simulator_quality_v1``: the first-turn check, judged turns, the stop-signal
check, the overall fraction, prompts, notes, and a differential test against ADK 2.13's own
evaluator with its judge replaced by a script."""

from __future__ import annotations

import asyncio
import json
import random
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from _judge_server import JudgeServer
from google.adk.evaluation.conversation_scenarios import ConversationScenario as AdkScenario
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import JudgeModelOptions as AdkJudgeModelOptions
from google.adk.evaluation.eval_metrics import (
    LlmBackedUserSimulatorCriterion as AdkCriterion,
)
from google.adk.evaluation.llm_as_judge_utils import Label
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import (
    PerTurnUserSimulatorQualityV1,
    _format_conversation_history,
    _parse_llm_response,
)
from google.adk.models.llm_response import LlmResponse as AdkLlmResponse
from google.genai import types as genai_types

from assay.config import LlmBackedUserSimulatorCriterion, parse_config
from assay.evalset.case import EvalCase, UserPersona
from assay.evalset.invocation import Invocation
from assay.llm.backends.openai_compat import OpenAICompatBackend
from assay.llm.base import LlmCallError, LlmRequest, LlmResponse, TokenUsage
from assay.llm.client import LlmClient
from assay.llm.judge import Judge
from assay.metrics.base import EvalStatus, MetricResult
from assay.metrics.prompts import simulator_quality as sq_prompt
from assay.metrics.registry import default_registry
from assay.metrics.simulator_quality import (
    NAME,
    NO_FIRST_MESSAGE,
    NO_INVOCATIONS,
    NO_SCENARIO,
    NO_VERDICT,
    STOP_CHECK_ID,
    TurnVerdict,
    UserSimulatorQualityMetric,
    parse_verdict,
)

START = "Hi, I need to book a flight."
PLAN = "Book a one-way flight from SFO to LAX next Tuesday, then rent a car for three days."
STOP = "</finished>"
SEVEN = [
    "CONVERSATION_PLAN_FOLLOWED",
    "STOP_CONDITION_FOLLOWED",
    "USER_GOAL_ORIENTED",
    "LIMITED_TROUBLESHOOTING",
    "RESPONSIVENESS",
    "CORRECTS_AGENT",
    "CONVERSATIONAL_TONE",
]

# --------------------------------------------------------------------------- a scripted judge

Answer = str | Exception


def _new_message(prompt: str) -> str:
    return prompt.split("<new_user_message>\n", 1)[1].rsplit("\n</new_user_message>", 1)[0]


@dataclass
class ScriptedCaller:
    """Answers sample ``n`` of a judged turn with ``scripts[message][n]``, where ``message`` is
    the turn's new user message (the stop signal for the ending check)."""

    scripts: dict[str, list[Answer]]
    model: str = "scripted:judge"
    requests: list[LlmRequest] = field(default_factory=list)

    async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
        self.requests.append(request)
        answer = self.scripts[_new_message(request.messages[-1].content)][sample]
        if isinstance(answer, Exception):
            raise answer
        usage = TokenUsage(prompt_tokens=100, completion_tokens=10, calls=1)
        return LlmResponse(text=answer, model=self.model, usage=usage, cached=sample == 1)

    def asked(self, message: str) -> list[LlmRequest]:
        return [r for r in self.requests if _new_message(r.messages[-1].content) == message]


def _answer(valid: bool, failed: tuple[str, ...] = ()) -> str:
    criteria = [{"name": n, "reasoning": "r", "passes": n not in failed} for n in SEVEN]
    return json.dumps({"criteria": criteria, "is_valid": valid})


VALID, INVALID, JUNK = _answer(True), _answer(False, ("RESPONSIVENESS",)), "Hard to say."
# ADK's own answer format: Python booleans and trailing commas (not JSON).
ADK_VALID = (
    '{\n    "criteria": [\n        {\n          "name": "RESPONSIVENESS",\n'
    '          "reasoning": "fine",\n          "passes": True,\n        },\n    ],\n'
    '    "is_valid": True,\n}'
)
ADK_INVALID = ADK_VALID.replace("True", "False")


def _turn(index: int, text: str | None = None, reply: str | None = "agent reply") -> Invocation:
    data: dict[str, Any] = {
        "invocation_id": f"inv-{index}",
        "user_content": {"role": "user", "parts": [{"text": text or f"user message {index}"}]},
    }
    if reply is not None:
        data["final_response"] = {"role": "model", "parts": [{"text": f"{reply} {index}"}]}
    return Invocation.model_validate(data)


def _conversation(turns: int, first: str = START) -> list[Invocation]:
    return [_turn(0, first), *(_turn(i) for i in range(1, turns))]


def _case(persona: Any = None) -> EvalCase:
    scenario: dict[str, Any] = {"starting_prompt": START, "conversation_plan": PLAN}
    if persona is not None:
        scenario["user_persona"] = persona
    return EvalCase.model_validate({"eval_id": "sim", "conversation_scenario": scenario})


def _criterion(
    num_samples: int = 1, threshold: float = 0.5, stop_signal: str | None = None, **options: Any
) -> LlmBackedUserSimulatorCriterion:
    data: dict[str, Any] = {
        "threshold": threshold,
        "judge_model_options": {"num_samples": num_samples, **options},
    }
    if stop_signal is not None:
        data["stop_signal"] = stop_signal
    return LlmBackedUserSimulatorCriterion.model_validate(data)


@dataclass
class Run:
    result: MetricResult
    caller: ScriptedCaller
    judge: Judge

    @property
    def statuses(self) -> list[EvalStatus]:
        return [r.status for r in self.result.per_invocation]

    @property
    def scores(self) -> list[float | None]:
        return [r.score for r in self.result.per_invocation]


def _run(
    actual: list[Invocation],
    scripts: dict[str, list[Answer]],
    criterion: LlmBackedUserSimulatorCriterion | None = None,
    case: EvalCase | None = None,
    **kwargs: Any,
) -> Run:
    caller = ScriptedCaller(scripts)
    judge = Judge(caller, NAME, source="config")
    metric = UserSimulatorQualityMetric(criterion or _criterion(), judge, **kwargs)
    result = asyncio.run(metric.evaluate(actual, None, case or _case()))
    return Run(result, caller, judge)


def _scripts(*later: list[Answer], stop: list[Answer] | None = None) -> dict[str, list[Answer]]:
    """Answers for turns 2, 3, ... (by their default user messages) and the stop check."""
    scripts = {f"user message {i}": answers for i, answers in enumerate(later, start=1)}
    scripts[STOP] = stop if stop is not None else [VALID] * 4
    return scripts


# --------------------------------------------------------------------------- parsing

# (judge text, ADK's label): ADK's own parser agrees with ours on every one of these.
ADK_CASES = [
    (VALID, Label.VALID),
    (INVALID, Label.INVALID),
    (ADK_VALID, Label.VALID),
    (ADK_INVALID, Label.INVALID),
    ('"is_valid": True,\n', Label.VALID),
    ('"is_valid": "valid"}', Label.VALID),
    ('"is_valid": ["Invalid"]\n', Label.INVALID),
    ('"is_valid": [ true ]}', Label.VALID),
    ('"is_valid": "almost",', Label.INVALID),
    ('"is_valid": "partially valid"}', Label.INVALID),  # spaces are part of the label here
    ('"is_valid": partially_valid}', Label.INVALID),
    ('"is_valid": "partially",', Label.INVALID),
    ('"is_valid": True }', Label.VALID),
    ('"is_valid": true, "criteria": []}', Label.VALID),
    ('"is_valid": "maybe"}', Label.NOT_FOUND),
    ('"is_valid": ""}', Label.NOT_FOUND),
    ('"is_valid": true', Label.NOT_FOUND),  # no comma, newline or brace after it
    ("```json\n" + INVALID + "\n```", Label.INVALID),
    ("My verdict: " + VALID + " That is all.", Label.VALID),
    (JUNK, Label.NOT_FOUND),
    ("", Label.NOT_FOUND),
]

_SCORES = {Label.VALID: 1.0, Label.INVALID: 0.0, Label.NOT_FOUND: None}


def _score(text: str) -> float | None:
    value = parse_verdict(text).value
    return value.score if value is not None else None


@pytest.mark.parametrize(("text", "label"), ADK_CASES)
def test_the_parser_reads_what_adks_parser_reads(text: str, label: Label) -> None:
    assert _parse_llm_response(text) == label  # the case is what we say ADK does
    assert _score(text) == _SCORES[label]


def test_a_json_object_is_read_as_json_where_adks_pattern_finds_nothing() -> None:
    text = '{"criteria": [], "is_valid" : false}'
    assert _parse_llm_response(text) == Label.NOT_FOUND
    assert _score(text) == 0.0


def test_the_answer_object_wins_over_an_earlier_draft_in_prose() -> None:
    text = 'Draft: "is_valid": false,\nFinal: ' + VALID
    assert _score(text) == 1.0


def test_a_verdict_carries_the_criteria_the_judge_said_failed() -> None:
    parsed = parse_verdict(_answer(False, ("RESPONSIVENESS", "CONVERSATIONAL_TONE")))
    assert parsed.value == TurnVerdict(0.0, ("RESPONSIVENESS", "CONVERSATIONAL_TONE"))
    assert (parsed.score, parsed.verdict, parsed.reason) == (0.0, "invalid", None)


def test_an_unparseable_answer_is_no_score_with_a_reason() -> None:
    assert (parse_verdict(JUNK).value, parse_verdict(JUNK).reason) == (None, NO_VERDICT)
    unknown = parse_verdict('{"is_valid": "Perhaps"}')
    assert (unknown.value, unknown.reason) == (None, "unknown verdict label 'perhaps'")


# --------------------------------------------------------------------------- the first turn


def test_turn_one_must_be_the_starting_prompt_up_to_whitespace_and_asks_no_judge() -> None:
    run = _run([_turn(0, f"  {START}\n")], _scripts(stop=[VALID]))
    assert (run.scores, run.statuses) == ([1.0], [EvalStatus.PASSED])
    assert [_new_message(r.messages[-1].content) for r in run.caller.requests] == [STOP]
    assert run.result.notes is not None
    assert run.result.notes.per_invocation[0].details == {"starting_prompt_matches": True}
    assert run.result.notes.per_invocation[0].samples == []


def test_a_first_turn_other_than_the_starting_prompt_scores_zero() -> None:
    run = _run([_turn(0, "Hello, I want a train ticket.")], _scripts(stop=[VALID]))
    assert (run.scores, run.statuses) == ([0.0], [EvalStatus.FAILED])
    assert (run.result.score, run.result.status) == (0.0, EvalStatus.FAILED)


def test_the_first_turns_status_follows_the_threshold() -> None:
    run = _run([_turn(0, "something else")], _scripts(stop=[VALID]), _criterion(threshold=0.0))
    assert (run.scores, run.statuses) == ([0.0], [EvalStatus.PASSED])


def test_a_first_message_without_parts_is_not_evaluated_and_still_counts() -> None:
    first = Invocation.model_validate({"user_content": {"role": "user", "parts": []}})
    run = _run([first, _turn(1)], _scripts([VALID]))
    assert run.statuses == [EvalStatus.NOT_EVALUATED, EvalStatus.PASSED]
    assert run.result.notes is not None
    assert run.result.notes.per_invocation[0].reason == NO_FIRST_MESSAGE
    assert (run.result.score, run.result.status) == (0.5, EvalStatus.PASSED)


# --------------------------------------------------------------------------- judged turns


def test_a_later_turn_is_judged_with_the_plan_the_turns_before_it_and_its_message() -> None:
    run = _run(_conversation(3), _scripts([VALID], [VALID]))
    (request,) = run.caller.asked("user message 2")
    system, user = (m.content for m in request.messages)
    assert f"<conversation_plan>\n{PLAN}\n</conversation_plan>" in user
    history = (
        f"user: {START}\n\nmodel: agent reply 0\n\nuser: user message 1\n\nmodel: agent reply 1"
    )
    assert f"<conversation_history>\n{history}\n</conversation_history>" in user
    assert user.endswith("<new_user_message>\nuser message 2\n</new_user_message>")
    assert "agent reply 2" not in user  # the turn's own reply comes after its message
    assert "<persona>" not in user
    assert all(name in system for name in SEVEN)
    assert f"`{STOP}`" in system
    assert run.caller.asked("user message 1")[0].messages[0].content == system


def test_the_history_is_rendered_as_adk_renders_it() -> None:
    turns = [
        _turn(0, START),
        _turn(1, reply=None),
        Invocation.model_validate(
            {
                "user_content": {"role": "user", "parts": [{"text": "a"}, {"text": "b"}]},
                "final_response": {"role": "model", "parts": [{"text": "c"}, {"text": "d"}]},
            }
        ),
        Invocation.model_validate(
            {"user_content": {"parts": []}, "final_response": {"role": "model", "parts": []}}
        ),
    ]
    adk = [AdkInvocation.model_validate(t.model_dump(exclude_none=True)) for t in turns[:3]]
    assert sq_prompt.conversation_history(turns[:3]) == _format_conversation_history(adk)
    # ADK writes Python's None for a final response without parts (and for one without a role);
    # assay writes empty text (and the role ``model``).
    assert sq_prompt.conversation_history(turns[3:]) == "model: "


def test_the_samples_vote_and_a_tie_is_invalid() -> None:
    criterion = _criterion(num_samples=4)
    won = _run(_conversation(2), _scripts([VALID, INVALID, VALID, JUNK]), criterion)
    assert won.statuses[1] is EvalStatus.PASSED
    tied = _run(_conversation(2), _scripts([VALID, JUNK, INVALID, JUNK]), criterion)
    assert (tied.scores[1], tied.statuses[1]) == (0.0, EvalStatus.FAILED)
    assert tied.result.notes is not None
    assert tied.result.notes.per_invocation[1].details == {
        "votes": {"valid": 1, "invalid": 1, "none": 2},
        "failed_criteria": {"RESPONSIVENESS": 1},
    }


def test_a_turn_without_any_verdict_is_not_evaluated_with_its_reason_and_counts() -> None:
    run = _run(_conversation(3), _scripts([JUNK, JUNK], [VALID, VALID]), _criterion(2))
    assert run.statuses == [EvalStatus.PASSED, EvalStatus.NOT_EVALUATED, EvalStatus.PASSED]
    assert run.result.notes is not None
    assert run.result.notes.per_invocation[1].reason == (
        "no verdict found in any of the 2 judge answers"
    )
    assert (run.result.score, run.result.status) == (2 / 3, EvalStatus.PASSED)


def test_samples_and_turns_are_judged_concurrently_within_the_parallelism_limit() -> None:
    active = 0
    peak = 0

    class SlowCaller(ScriptedCaller):
        async def generate(self, request: LlmRequest, *, sample: int = 0) -> LlmResponse:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            active -= 1
            return await super().generate(request, sample=sample)

    def peak_for(criterion: LlmBackedUserSimulatorCriterion) -> int:
        nonlocal peak
        peak = 0
        caller = SlowCaller(_scripts([VALID] * 2, [VALID] * 2))
        metric = UserSimulatorQualityMetric(criterion, Judge(caller, NAME))
        asyncio.run(metric.evaluate(_conversation(3), None, _case()))
        return peak

    assert peak_for(_criterion(num_samples=2)) == 6  # two turns and the stop check, 2 samples
    assert peak_for(_criterion(num_samples=2, parallelism_limit=2)) == 2


# --------------------------------------------------------------------------- the stop signal


def test_the_stop_check_judges_the_stop_signal_after_the_whole_conversation() -> None:
    run = _run(_conversation(2), _scripts([VALID]))
    (request,) = run.caller.asked(STOP)
    user = request.messages[-1].content
    assert "user: user message 1\n\nmodel: agent reply 1\n</conversation_history>" in user
    assert user.endswith(f"<new_user_message>\n{STOP}\n</new_user_message>")


def test_a_failed_stop_check_replaces_the_last_turns_result() -> None:
    run = _run(_conversation(3), _scripts([VALID], [VALID], stop=[INVALID]))
    assert run.scores == [1.0, 1.0, 0.0]
    assert run.statuses == [EvalStatus.PASSED, EvalStatus.PASSED, EvalStatus.FAILED]
    assert run.result.per_invocation[2].actual.invocation_id == "inv-2"
    assert (run.result.score, run.result.status) == (2 / 3, EvalStatus.PASSED)
    assert run.result.notes is not None
    last, check = run.result.notes.per_invocation[2:]
    assert last.details is not None and last.details["replaced_by_stop_signal_check"] is True
    assert check.invocation_id == STOP_CHECK_ID
    assert check.details is not None and check.details["replaced_last_turn"] is True


@pytest.mark.parametrize("stop", [[VALID], [JUNK]])
def test_a_passed_or_unjudged_stop_check_leaves_the_last_turn(stop: list[Answer]) -> None:
    run = _run(_conversation(2), _scripts([INVALID], stop=stop))
    assert (run.scores, run.statuses) == ([1.0, 0.0], [EvalStatus.PASSED, EvalStatus.FAILED])
    assert run.result.notes is not None
    assert run.result.notes.per_invocation[2].details is not None
    assert run.result.notes.per_invocation[2].details["replaced_last_turn"] is False


def test_a_zero_stop_verdict_passes_under_a_zero_threshold_and_replaces_nothing() -> None:
    run = _run(_conversation(2), _scripts([VALID], stop=[INVALID]), _criterion(threshold=0.0))
    assert run.scores == [1.0, 1.0]


def test_with_one_turn_a_failed_stop_check_replaces_the_first_turn() -> None:
    run = _run(_conversation(1), _scripts(stop=[INVALID]))
    assert (run.scores, run.statuses) == ([0.0], [EvalStatus.FAILED])
    assert (run.result.score, run.result.status) == (0.0, EvalStatus.FAILED)


def test_the_criterions_stop_signal_is_the_one_judged_and_explained() -> None:
    scripts = {"user message 1": [VALID], "<<DONE>>": [VALID]}
    run = _run(_conversation(2), scripts, _criterion(stop_signal="<<DONE>>"))
    (request,) = run.caller.asked("<<DONE>>")
    assert "`<<DONE>>`" in request.messages[0].content
    assert STOP not in request.messages[0].content


# --------------------------------------------------------------------------- the overall score


def test_the_score_sums_passed_turns_over_all_turns_not_evaluated_ones_included() -> None:
    # Turn 1 matches (1), turn 2 is judged invalid (0), turn 3 gets no verdict (NOT_EVALUATED,
    # still counted), turns 4 and 5 are valid (1 each): 3 / 5, whatever the threshold.
    scripts = _scripts([INVALID], [JUNK], [VALID], [VALID])
    passing = _run(_conversation(5), scripts, _criterion(threshold=0.6))
    assert passing.statuses == [
        EvalStatus.PASSED,
        EvalStatus.FAILED,
        EvalStatus.NOT_EVALUATED,
        EvalStatus.PASSED,
        EvalStatus.PASSED,
    ]
    assert (passing.result.score, passing.result.status) == (3 / 5, EvalStatus.PASSED)
    failing = _run(_conversation(5), scripts, _criterion(threshold=0.61))
    assert (failing.result.score, failing.result.status) == (3 / 5, EvalStatus.FAILED)
    lenient = _run(_conversation(5), scripts, _criterion(threshold=0.0))
    assert lenient.statuses[1] is EvalStatus.PASSED  # a 0.0 passes threshold 0, adding 0
    assert lenient.result.score == 3 / 5


# --------------------------------------------------------------------------- not evaluated


def test_a_case_with_a_static_conversation_is_not_evaluated_without_asking() -> None:
    turns = _conversation(2)
    run = _run(turns, {}, case=EvalCase(eval_id="static", conversation=turns))
    assert (run.result.status, run.result.reason) == (EvalStatus.NOT_EVALUATED, NO_SCENARIO)
    assert len(run.result.per_invocation) == 2
    assert run.caller.requests == []


def test_a_conversation_without_invocations_is_not_evaluated_without_asking() -> None:
    run = _run([], {})
    assert (run.result.status, run.result.reason, run.result.score) == (
        EvalStatus.NOT_EVALUATED,
        NO_INVOCATIONS,
        None,
    )
    assert run.caller.requests == []


def test_a_failed_judge_call_leaves_the_metric_not_evaluated_with_the_error() -> None:
    error = LlmCallError("HTTP 503 from the judge", status=503)
    run = _run(_conversation(3), _scripts([VALID, VALID], [VALID, error]), _criterion(2))
    result = run.result
    assert (result.status, result.score) == (EvalStatus.NOT_EVALUATED, None)
    assert result.reason == "turn 3: judge call failed (sample 1): HTTP 503 from the judge"
    assert run.statuses == [EvalStatus.NOT_EVALUATED] * 3
    assert result.notes is not None  # every sample is still recorded
    assert result.notes.per_invocation[2].samples[1].error == "HTTP 503 from the judge"
    assert result.notes.per_invocation[1].samples[0].score == 1.0


def test_a_failed_stop_check_call_is_named_in_the_reason() -> None:
    error = LlmCallError("connection refused")
    run = _run(_conversation(2), _scripts([VALID], stop=[error]))
    assert run.result.reason == "the stop-signal check: judge call failed (sample 0): " + (
        "connection refused"
    )


# --------------------------------------------------------------------------- personas

PERSONA = {
    "id": "hurried",
    "description": "A busy traveller who wants short answers.",
    "behaviors": [
        {
            "name": "KEEPS_IT_SHORT",
            "description": "Writes one short sentence at a time.",
            "behavior_instructions": ["Be brief."],
            "violation_rubrics": ["It writes a paragraph.", "It ends without {{ stop_signal }}."],
        },
        {
            "name": "NO_SMALL_TALK",
            "description": "Skips pleasantries.",
            "violation_rubrics": ["It chats about the weather."],
        },
    ],
}


def test_a_persona_replaces_the_seven_criteria_with_its_behaviours() -> None:
    run = _run(_conversation(2), _scripts([VALID]), case=_case(PERSONA))
    (request,) = run.caller.asked("user message 1")
    system, user = (m.content for m in request.messages)
    assert "KEEPS_IT_SHORT: Writes one short sentence at a time." in system
    assert f"- It ends without {STOP}." in system  # ADK fills the behaviours' placeholders
    assert "- It chats about the weather." in system
    assert not any(name in system for name in SEVEN)
    assert "<persona>\nA busy traveller who wants short answers.\n</persona>" in user
    assert user.index("<persona>") < user.index("<new_user_message>")
    assert request.response_schema is not None
    entry = request.response_schema["properties"]["criteria"]
    assert entry["items"]["properties"]["name"]["enum"] == ["KEEPS_IT_SHORT", "NO_SMALL_TALK"]
    assert (entry["minItems"], entry["maxItems"]) == (2, 2)


def test_a_built_in_persona_id_needs_a_resolver() -> None:
    unresolved = _run(_conversation(2), _scripts([VALID]), case=_case("NOVICE"))
    assert unresolved.result.status is EvalStatus.NOT_EVALUATED
    assert unresolved.result.reason is not None and "'NOVICE'" in unresolved.result.reason
    assert unresolved.caller.requests == []
    persona = UserPersona.model_validate(PERSONA)
    resolved = _run(
        _conversation(2),
        _scripts([VALID]),
        case=_case("NOVICE"),
        personas=lambda pid: persona if pid == "NOVICE" else None,
    )
    assert resolved.result.status is EvalStatus.PASSED
    assert "KEEPS_IT_SHORT" in resolved.caller.requests[0].messages[0].content


# --------------------------------------------------------------------------- the request


def _strings(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = [schema] if schema.get("type") == "string" else []
    for sub in (schema.get("properties") or {}).values():
        found += _strings(sub)
    if isinstance(schema.get("items"), dict):
        found += _strings(schema["items"])
    return found


def test_the_request_asks_for_adks_fields_in_a_json_schema_with_bounded_text() -> None:
    run = _run(_conversation(2), _scripts([VALID]))
    request = run.caller.requests[0]
    assert request.schema_name == "user_simulator_verdict"
    schema = request.response_schema
    assert schema is not None
    assert schema["required"] == ["criteria", "is_valid"]
    assert schema["properties"]["is_valid"] == {"type": "boolean"}
    entry = schema["properties"]["criteria"]
    assert entry["items"]["required"] == ["name", "reasoning", "passes"]
    assert entry["items"]["properties"]["name"]["enum"] == SEVEN
    assert (entry["minItems"], entry["maxItems"]) == (7, 7)
    assert all("enum" in s or "maxLength" in s for s in _strings(schema))


def test_the_system_message_is_the_same_for_every_turn_of_a_case() -> None:
    run = _run(_conversation(4), _scripts([VALID], [VALID], [VALID]))
    assert len({r.messages[0].content for r in run.caller.requests}) == 1
    assert len(run.caller.requests) == 4


# --------------------------------------------------------------------------- notes


def test_notes_record_every_turn_the_stop_check_the_judge_and_usage() -> None:
    run = _run(_conversation(3), _scripts([VALID, JUNK], [INVALID, VALID]), _criterion(2))
    notes = run.result.notes
    assert notes is not None
    assert (notes.judge_model, notes.judge_source) == ("scripted:judge", "config")
    assert notes.usage == TokenUsage(prompt_tokens=600, completion_tokens=60, calls=6)
    assert run.judge.ledger.for_case("sim") == {NAME: notes.usage}
    assert [n.invocation_id for n in notes.per_invocation] == [
        "inv-0",
        "inv-1",
        "inv-2",
        STOP_CHECK_ID,
    ]
    first, second = notes.per_invocation[1].samples
    assert (first.score, first.verdict, first.text) == (1.0, "valid", VALID)
    assert (second.score, second.reason, second.text, second.cached) == (
        None,
        NO_VERDICT,
        JUNK,
        True,
    )


# --------------------------------------------------------------------------- wiring


def test_the_registry_builds_this_metric_with_the_chosen_judge() -> None:
    caller = ScriptedCaller(_scripts([VALID]))

    class Provider:
        def judge_for(self, metric: str, criterion: object) -> Judge:
            return Judge(caller, metric, source="config")

    config = parse_config({"criteria": {NAME: {"threshold": 0.9, "stop_signal": "<<END>>"}}})
    metric = default_registry().create(NAME, config.criteria[NAME], Provider())
    assert isinstance(metric, UserSimulatorQualityMetric)
    assert metric.criterion.stop_signal == "<<END>>"


def test_an_openai_compatible_judge_gets_the_schema_and_its_answer_scores() -> None:
    def reply(body: dict[str, Any]) -> str:
        return VALID if _new_message(body["messages"][-1]["content"]) != STOP else INVALID

    async def score(server: JudgeServer) -> MetricResult:
        client = LlmClient(OpenAICompatBackend("openai:stub", base_url=server.base_url))
        try:
            metric = UserSimulatorQualityMetric(_criterion(), Judge(client, NAME))
            return await metric.evaluate(_conversation(2), None, _case())
        finally:
            await client.aclose()

    with JudgeServer(reply=reply) as server:
        result = asyncio.run(score(server))
        formats = [r.body["response_format"] for r in server.completions]
    assert [f["json_schema"]["name"] for f in formats] == ["user_simulator_verdict"] * 2
    # Turn 2 passes, but the stop check (answered INVALID) replaces it.
    assert [r.status for r in result.per_invocation] == [EvalStatus.PASSED, EvalStatus.FAILED]
    assert result.score == 0.5


# --------------------------------------------------------------------------- against ADK


class _AdkStubJudge:
    """Stands in for ADK's judge model: answers by the generated user response in the prompt."""

    def __init__(self, scripts: dict[str, list[Answer]]) -> None:
        self.scripts = scripts
        self.asked: dict[str, int] = {}

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncIterator[AdkLlmResponse]:
        prompt = llm_request.contents[0].parts[0].text
        key = prompt.rsplit("# Generated User Response\n", 1)[1]
        index = self.asked.get(key, 0)
        self.asked[key] = index + 1
        answer = self.scripts[key][index]
        if isinstance(answer, Exception):
            raise answer
        yield AdkLlmResponse(
            content=genai_types.Content(role="model", parts=[genai_types.Part(text=answer)])
        )


# Texts on which ADK's parser and ours agree (the departures are tested above).
_POOL: list[Answer] = [
    VALID,
    INVALID,
    ADK_VALID,
    ADK_INVALID,
    '"is_valid": "almost",',
    '"is_valid": [valid]\n',
    '"is_valid": "partially valid"}',
    '"is_valid": maybe}',
    '"is_valid": true',
    JUNK,
    "",
    RuntimeError("judge down"),
]

Outcome = tuple[tuple[float | None, int], list[tuple[float | None, int]] | None]


def _adk_outcome(
    actual: list[Invocation], scripts: dict[str, list[Answer]], criterion: AdkCriterion
) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = PerTurnUserSimulatorQualityV1(
            AdkEvalMetric(metric_name=NAME, criterion=criterion)
        )
    evaluator._llm = _AdkStubJudge(scripts)  # type: ignore[assignment]
    invocations = [AdkInvocation.model_validate(a.model_dump(exclude_none=True)) for a in actual]
    scenario = AdkScenario(starting_prompt=START, conversation_plan=PLAN)
    try:
        result = asyncio.run(evaluator.evaluate_invocations(invocations, None, scenario))
    except Exception:  # ADK's eval service records a metric that raises as NOT_EVALUATED
        return (None, EvalStatus.NOT_EVALUATED.value), None
    per = [(r.score, r.eval_status.value) for r in result.per_invocation_results]
    return (result.overall_score, result.overall_eval_status.value), per


def _our_outcome(
    actual: list[Invocation],
    scripts: dict[str, list[Answer]],
    criterion: LlmBackedUserSimulatorCriterion,
) -> Outcome:
    ours = {
        key: [LlmCallError(str(a)) if isinstance(a, Exception) else a for a in answers]
        for key, answers in scripts.items()
    }
    result = _run(actual, ours, criterion).result
    overall = (result.score, result.status.value)
    if result.status is EvalStatus.NOT_EVALUATED:
        return overall, None
    return overall, [(r.score, r.status.value) for r in result.per_invocation]


def _random_first(rng: random.Random) -> Invocation:
    kind = rng.choice(["same", "padded", "other", "no parts"])
    if kind == "no parts":
        return Invocation.model_validate({"user_content": {"role": "user", "parts": []}})
    text = {"same": START, "padded": f"\n {START}  ", "other": "Book me a hotel."}[kind]
    return _turn(0, text, reply=rng.choice(["agent reply", None]))


def test_scores_equal_adks_evaluator_fed_the_same_judge_answers() -> None:
    rng = random.Random(2_013)
    for _ in range(80):
        num_samples = rng.randint(1, 4)
        threshold = rng.choice([0.0, 0.5, 0.75, 1.0, 1.5])  # 1.5: turns scoring 1 fail
        stop = rng.choice([STOP, "<<END>>"])
        actual = [_random_first(rng)]
        actual += [
            _turn(i, reply=rng.choice(["agent reply", None])) for i in range(1, rng.randint(1, 4))
        ]
        scripts = {
            key: [rng.choice(_POOL) for _ in range(num_samples)]
            for key in [*(f"user message {i}" for i in range(1, len(actual))), stop]
        }
        adk_criterion = AdkCriterion(
            threshold=threshold,
            stop_signal=stop,
            judge_model_options=AdkJudgeModelOptions(num_samples=num_samples),
        )
        ours = _criterion(num_samples, threshold, stop_signal=stop)
        assert _our_outcome(actual, scripts, ours) == _adk_outcome(actual, scripts, adk_criterion)


def test_adk_fails_without_a_scenario_or_invocations_where_assay_says_why() -> None:
    criterion = AdkCriterion(threshold=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluator = PerTurnUserSimulatorQualityV1(
            AdkEvalMetric(metric_name=NAME, criterion=criterion)
        )
    scenario = AdkScenario(starting_prompt=START, conversation_plan=PLAN)
    with pytest.raises(IndexError):
        asyncio.run(evaluator.evaluate_invocations([], None, scenario))
    with pytest.raises(ValueError, match="conversation_scenario"):
        asyncio.run(evaluator.evaluate_invocations([], None, None))
    assert _run([], {}).result.reason == NO_INVOCATIONS
