"""What the judges are shown of an invocation, checked against ADK 2.13's own helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.adk.evaluation.app_details import AppDetails as AdkAppDetails
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.llm_as_judge_utils import (
    get_grounding_metadata_as_json_str,
    get_text_from_content,
    get_tool_calls_and_responses_as_json_str,
    get_tool_declarations_as_json_str,
)

from assay.evalset.invocation import AppDetails, Invocation
from assay.metrics import judge_inputs
from assay.metrics.judge_inputs import NO_STEPS, NO_TOOLS


def _text(text: str, role: str = "model") -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def _call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return call


def _response(name: str, call_id: str | None = None, **response: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "response": response}
    if call_id is not None:
        out["id"] = call_id
    return out


def _events(*events: tuple[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "invocation_events": [
            {"author": author, "content": {"role": "model", "parts": parts}}
            for author, parts in events
        ]
    }


APP = {
    "agent_details": {
        "root": {
            "name": "root",
            "instructions": "Answer about flights.",
            "tool_declarations": [{"function_declarations": [{"name": "find_flights"}]}],
        },
        "helper": {"name": "helper", "instructions": "Help.", "tool_declarations": []},
    }
}

EVENTS_INVOCATION = {
    "invocation_id": "i1",
    "user_content": _text("Flights to Oslo?", "user"),
    "final_response": _text("Two flights."),
    "intermediate_data": _events(
        (
            "root",
            [{"text": "Let me look."}, {"function_call": _call("find_flights", "c1", to="OSL")}],
        ),
        ("root", [{"function_response": _response("find_flights", "c1", flights=[1, 2])}]),
        ("helper", [{"text": "Found them."}, {"text": ""}]),
    ),
    "app_details": APP,
}

STATIC_INVOCATION = {
    "user_content": _text("Weather?", "user"),
    "final_response": {"role": "model", "parts": [{"text": "Sunny"}, {"text": "and warm."}]},
    "intermediate_data": {
        "tool_uses": [_call("geo", "a", city="Oslo"), _call("weather"), _call("weather")],
        "tool_responses": [
            _response("geo", "a", lat=1),
            _response("weather", temp=20),
            _response("weather", temp=21),
            _response("geo", "a", lat=2),
        ],
        "intermediate_responses": [["sub", [{"text": "Checking."}]], ["sub", [{"text": ""}]]],
    },
}

BARE_INVOCATION = {"user_content": _text("Hi", "user")}

SHAPES = {
    "events": EVENTS_INVOCATION,
    "static": STATIC_INVOCATION,
    "bare": BARE_INVOCATION,
    "empty-events": {**BARE_INVOCATION, "intermediate_data": {"invocation_events": []}},
}


def _both(data: dict[str, Any]) -> tuple[Invocation, AdkInvocation]:
    return Invocation.model_validate(data), AdkInvocation.model_validate(data)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("include", [False, True])
def test_final_text_is_adks_text_with_or_without_intermediate_responses(
    shape: str, include: bool
) -> None:
    ours, adk = _both(SHAPES[shape])
    expected = get_text_from_content(adk, include_intermediate_responses_in_final=include) or ""
    assert judge_inputs.final_text(ours, include_intermediate=include) == expected


def test_intermediate_text_comes_before_the_final_response_one_per_line() -> None:
    ours = Invocation.model_validate(EVENTS_INVOCATION)
    assert judge_inputs.final_text(ours, include_intermediate=True) == (
        "Let me look.\nFound them.\nTwo flights."
    )
    assert judge_inputs.final_text(ours) == "Two flights."


@pytest.mark.parametrize("shape", SHAPES)
def test_tool_steps_pair_calls_with_responses_as_adk_does(shape: str) -> None:
    ours, adk = _both(SHAPES[shape])
    expected = get_tool_calls_and_responses_as_json_str(adk.intermediate_data)
    got = judge_inputs.tool_steps_json(ours)
    if expected == NO_STEPS:
        assert got == NO_STEPS
    else:
        assert json.loads(got) == json.loads(expected)


def test_calls_without_an_id_share_the_last_response_without_one_and_the_last_wins() -> None:
    steps = judge_inputs.tool_steps(Invocation.model_validate(STATIC_INVOCATION))
    assert [(c.name, r.response if r else None) for c, r in steps] == [
        ("geo", {"lat": 2}),
        ("weather", {"temp": 21}),
        ("weather", {"temp": 21}),
    ]


def test_a_call_without_a_response_shows_none_and_each_step_is_one_line() -> None:
    inv = Invocation.model_validate(
        {**BARE_INVOCATION, "intermediate_data": {"tool_uses": [_call("f", "x"), _call("g", "y")]}}
    )
    text = judge_inputs.tool_steps_json(inv)
    assert text.splitlines()[1:3] == [
        '{"step": 0, "tool_call": {"id": "x", "name": "f", "args": {}}, "tool_response": "None"},',
        '{"step": 1, "tool_call": {"id": "y", "name": "g", "args": {}}, "tool_response": "None"}',
    ]


def test_no_tool_calls_reads_no_intermediate_steps() -> None:
    assert judge_inputs.tool_steps_json(Invocation.model_validate(BARE_INVOCATION)) == NO_STEPS


def test_tool_declarations_are_adks_json_keyed_by_agent() -> None:
    ours = AppDetails.model_validate(APP)
    expected = get_tool_declarations_as_json_str(AdkAppDetails.model_validate(APP))
    assert json.loads(judge_inputs.tool_declarations_json(ours)) == json.loads(expected)


def test_no_app_details_or_no_declared_tool_reads_agent_has_no_tools() -> None:
    assert judge_inputs.tool_declarations_json(None) == NO_TOOLS
    toolless = AppDetails.model_validate({"agent_details": {"a": {"name": "a"}}})
    assert judge_inputs.tool_declarations_json(toolless) == NO_TOOLS


def test_developer_instructions_are_those_of_the_first_events_author() -> None:
    data = {**EVENTS_INVOCATION, "intermediate_data": _events(("helper", [{"text": "x"}]))}
    assert judge_inputs.developer_instructions(Invocation.model_validate(data)) == "Help."


def test_without_events_the_first_agents_instructions_are_used() -> None:
    data = {**STATIC_INVOCATION, "app_details": APP}
    assert judge_inputs.developer_instructions(Invocation.model_validate(data)) == (
        "Answer about flights."
    )


def test_developer_instructions_are_empty_without_app_details_or_a_known_author() -> None:
    assert judge_inputs.developer_instructions(Invocation.model_validate(STATIC_INVOCATION)) == ""
    unknown = {**EVENTS_INVOCATION, "intermediate_data": _events(("stranger", [{"text": "x"}]))}
    assert judge_inputs.developer_instructions(Invocation.model_validate(unknown)) == ""


def test_grounding_metadata_is_listed_with_its_step_and_author() -> None:
    data = {
        **BARE_INVOCATION,
        "intermediate_data": {
            "invocation_events": [
                {"author": "root", "content": _text("a")},
                {"author": "root", "grounding_metadata": {"webSearchQueries": ["oslo"]}},
            ]
        },
    }
    ours, adk = _both(data)
    got = judge_inputs.grounding_metadata_json(ours)
    assert got is not None
    assert json.loads(got) == json.loads(get_grounding_metadata_as_json_str(adk.intermediate_data))
    assert json.loads(got)["grounding_metadata"][0]["step"] == 1


def test_no_grounding_metadata_gives_none() -> None:
    assert (
        judge_inputs.grounding_metadata_json(Invocation.model_validate(EVENTS_INVOCATION)) is None
    )
    assert (
        judge_inputs.grounding_metadata_json(Invocation.model_validate(STATIC_INVOCATION)) is None
    )
