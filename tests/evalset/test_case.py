"""EvalCase and EvalSet: keys, defaults, and conversation XOR conversation_scenario."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from pydantic import ValidationError

from assay.evalset import (
    ConversationScenario,
    ConversationScenarios,
    EvalCase,
    EvalSet,
    Rubric,
    SessionInput,
    UserPersona,
)

from ._helpers import case, eval_set, invocation

SCENARIO = {"starting_prompt": "I need a flight", "conversation_plan": "Book SFO to LAX."}


def _case_error(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        EvalCase.model_validate(data)
    (error,) = info.value.errors()
    assert error["loc"] == ()
    return str(error["msg"]).removeprefix("Value error, ")


def test_case_with_both_conversation_and_scenario_is_rejected() -> None:
    message = _case_error(case(conversation_scenario=SCENARIO))

    assert message.startswith(
        "has both 'conversation' and 'conversation_scenario'; give exactly one"
    )


def test_case_with_neither_conversation_nor_scenario_is_rejected() -> None:
    message = _case_error({"eval_id": "c"})

    assert message.startswith(
        "has neither 'conversation' nor 'conversation_scenario'; give exactly one"
    )


def test_case_with_null_conversation_counts_as_having_none() -> None:
    message = _case_error({"eval_id": "c", "conversation": None, "conversation_scenario": None})

    assert message.startswith("has neither")


def test_case_with_only_a_scenario_is_accepted() -> None:
    loaded = EvalCase.model_validate({"eval_id": "c", "conversation_scenario": SCENARIO})

    assert loaded.conversation is None
    assert loaded.conversation_scenario == ConversationScenario(**SCENARIO)


def test_case_with_an_empty_conversation_is_accepted_as_adk_accepts_it() -> None:
    assert EvalCase.model_validate({"eval_id": "c", "conversation": []}).conversation == []


def test_user_persona_may_be_an_object_or_a_persona_id() -> None:
    by_id = ConversationScenario.model_validate({**SCENARIO, "user_persona": "NOVICE"})
    by_object = ConversationScenario.model_validate(
        {
            **SCENARIO,
            "userPersona": {
                "id": "p",
                "description": "terse",
                "behaviors": [{"name": "b", "behaviorInstructions": ["be brief"]}],
            },
        }
    )

    assert by_id.user_persona == "NOVICE"
    assert isinstance(by_object.user_persona, UserPersona)
    assert by_object.user_persona.behaviors[0].behavior_instructions == ["be brief"]


def test_scenarios_file_holds_a_list_of_scenarios() -> None:
    scenarios = ConversationScenarios.model_validate({"scenarios": [SCENARIO, SCENARIO]})

    assert len(scenarios.scenarios) == 2


def test_eval_set_accepts_camel_case_keys_at_every_level() -> None:
    camel = EvalSet.model_validate(
        {
            "evalSetId": "s",
            "creationTimestamp": 5.0,
            "evalCases": [
                {
                    "evalId": "c",
                    "conversation": [
                        {"userContent": {"parts": [{"text": "hi"}]}, "invocationId": "i"}
                    ],
                    "sessionInput": {"appName": "app", "userId": "u", "sessionId": "s1"},
                    "finalSessionState": {"k": 1},
                }
            ],
        }
    )
    snake = EvalSet.model_validate(
        {
            "eval_set_id": "s",
            "creation_timestamp": 5.0,
            "eval_cases": [
                {
                    "eval_id": "c",
                    "conversation": [
                        {"user_content": {"parts": [{"text": "hi"}]}, "invocation_id": "i"}
                    ],
                    "session_input": {"app_name": "app", "user_id": "u", "session_id": "s1"},
                    "final_session_state": {"k": 1},
                }
            ],
        }
    )

    assert camel == snake


def test_eval_set_dump_is_snake_case() -> None:
    loaded = EvalSet.model_validate(
        {
            "evalSetId": "s",
            "evalCases": [
                {
                    "evalId": "c",
                    "conversationScenario": {"startingPrompt": "a", "conversationPlan": "b"},
                    "sessionInput": {"appName": "app", "userId": "u"},
                }
            ],
        }
    )

    dumped = loaded.model_dump(exclude_none=True)
    assert list(dumped) == ["eval_set_id", "eval_cases", "creation_timestamp"]
    assert dumped["eval_cases"][0]["conversation_scenario"] == {
        "starting_prompt": "a",
        "conversation_plan": "b",
    }
    assert dumped["eval_cases"][0]["session_input"] == {
        "app_name": "app",
        "user_id": "u",
        "state": {},
    }


def test_case_defaults_match_adk() -> None:
    data = eval_set(case())
    ours = EvalSet.model_validate(data).eval_cases[0]
    adk = AdkEvalSet.model_validate(data).eval_cases[0]

    assert ours.final_session_state == adk.final_session_state == {}
    assert ours.creation_timestamp == adk.creation_timestamp == 0.0
    assert ours.rubrics is None and adk.rubrics is None
    assert ours.session_input is None and adk.session_input is None


def test_explicit_null_final_session_state_is_kept() -> None:
    assert EvalCase.model_validate(case(final_session_state=None)).final_session_state is None


def test_session_input_requires_app_name_and_user_id() -> None:
    with pytest.raises(ValidationError) as info:
        SessionInput.model_validate({"state": {}})

    assert sorted(e["loc"] for e in info.value.errors()) == [("app_name",), ("user_id",)]


def test_rubric_text_property_may_be_left_out_as_in_adk() -> None:
    rubric = Rubric.model_validate({"rubricId": "r1", "rubricContent": {}, "type": "X"})

    assert rubric.rubric_content.text_property is None


def test_rubrics_are_accepted_on_cases_and_invocations() -> None:
    rubric = {"rubric_id": "r", "rubric_content": {"text_property": "is polite"}}
    loaded = EvalCase.model_validate(
        {"eval_id": "c", "rubrics": [rubric], "conversation": [invocation(rubrics=[rubric])]}
    )

    assert loaded.rubrics is not None
    assert loaded.rubrics[0].rubric_content.text_property == "is polite"
    assert (loaded.conversation or [])[0].rubrics == loaded.rubrics


def test_eval_set_case_finds_a_case_by_id() -> None:
    loaded = EvalSet.model_validate(eval_set(case("a"), case("b")))

    assert loaded.case("b") is loaded.eval_cases[1]
    assert loaded.case("z") is None


def test_eval_set_requires_its_id_and_cases() -> None:
    with pytest.raises(ValidationError) as info:
        EvalSet.model_validate({})

    assert sorted(e["loc"] for e in info.value.errors()) == [("eval_cases",), ("eval_set_id",)]
