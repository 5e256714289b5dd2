"""Invocation: both intermediate-data shapes, tool calls and responses, web-editor keys."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_case import InvocationEvent as AdkInvocationEvent
from google.adk.evaluation.eval_case import get_all_tool_calls, get_all_tool_responses
from pydantic import ValidationError

from assay.evalset import (
    Content,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)

USER = {"role": "user", "parts": [{"text": "turn on the light"}]}

TOOL_USES_SHAPE: dict[str, Any] = {
    "user_content": USER,
    "intermediate_data": {
        "tool_uses": [
            {"id": "c1", "name": "find_device", "args": {"room": "kitchen"}},
            {"id": "c2", "name": "switch_on", "args": None},
            {"id": "c3", "name": "log", "args": {}},
        ],
        "tool_responses": [{"id": "c1", "name": "find_device", "response": {"id": 3}}],
        "intermediate_responses": [["sub_agent", [{"text": "looking"}]]],
    },
}

EVENTS_SHAPE: dict[str, Any] = {
    "userContent": USER,
    "intermediateData": {
        "invocationEvents": [
            {
                "author": "root",
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "let me look"},
                        {"functionCall": {"id": "c1", "name": "find_device", "args": {"r": 1}}},
                        {"functionCall": {"id": "c2", "name": "switch_on"}},
                    ],
                },
                "usageMetadata": {"promptTokenCount": 10},
            },
            {"author": "root"},
            {
                "author": "user",
                "content": {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"id": "c1", "name": "find_device", "response": {}}},
                        {"functionResponse": {"id": "c2", "name": "switch_on"}},
                    ],
                },
            },
            {
                "author": "root",
                "content": {"parts": [{"functionCall": {"name": "log", "args": {}}}]},
                "modelVersion": "gemini-x",
            },
        ]
    },
}


def _calls(calls: list[Any]) -> list[tuple[Any, Any, Any]]:
    return [(call.id, call.name, call.args) for call in calls]


def _responses(responses: list[Any]) -> list[tuple[Any, Any, Any]]:
    return [(r.id, r.name, r.response) for r in responses]


def test_tool_uses_shape_reads_as_intermediate_data() -> None:
    inv = Invocation.model_validate(TOOL_USES_SHAPE)

    assert isinstance(inv.intermediate_data, IntermediateData)
    assert inv.intermediate_data.intermediate_responses[0][0] == "sub_agent"


def test_invocation_events_shape_reads_as_invocation_events() -> None:
    inv = Invocation.model_validate(EVENTS_SHAPE)

    assert isinstance(inv.intermediate_data, InvocationEvents)
    assert len(inv.intermediate_data.invocation_events) == 4


def test_tool_calls_of_the_tool_uses_shape_keep_order_and_none_versus_empty_args() -> None:
    inv = Invocation.model_validate(TOOL_USES_SHAPE)

    assert _calls(inv.tool_calls()) == [
        ("c1", "find_device", {"room": "kitchen"}),
        ("c2", "switch_on", None),
        ("c3", "log", {}),
    ]
    assert _responses(inv.tool_responses()) == [("c1", "find_device", {"id": 3})]


def test_tool_calls_of_the_events_shape_come_from_every_event_in_order() -> None:
    inv = Invocation.model_validate(EVENTS_SHAPE)

    assert _calls(inv.tool_calls()) == [
        ("c1", "find_device", {"r": 1}),
        ("c2", "switch_on", None),
        (None, "log", {}),
    ]
    assert _responses(inv.tool_responses()) == [
        ("c1", "find_device", {}),
        ("c2", "switch_on", None),
    ]


@pytest.mark.parametrize("shape", [TOOL_USES_SHAPE, EVENTS_SHAPE], ids=["tool_uses", "events"])
def test_tool_calls_and_responses_match_adk_for_the_same_json(shape: dict[str, Any]) -> None:
    ours = Invocation.model_validate(shape)
    adk = AdkInvocation.model_validate(shape)

    assert _calls(ours.tool_calls()) == _calls(get_all_tool_calls(adk.intermediate_data))
    assert _responses(ours.tool_responses()) == _responses(
        get_all_tool_responses(adk.intermediate_data)
    )
    assert ours.model_dump(mode="json", exclude_none=True) == adk.model_dump(
        mode="json", exclude_none=True
    )


def test_invocation_without_intermediate_data_has_no_tool_calls() -> None:
    inv = Invocation.model_validate({"user_content": USER})

    assert inv.tool_calls() == []
    assert inv.tool_responses() == []
    assert inv.usage_metadata() == []


def test_empty_intermediate_data_object_is_the_tool_uses_shape() -> None:
    inv = Invocation.model_validate({"user_content": USER, "intermediate_data": {}})

    assert inv.intermediate_data == IntermediateData()
    assert inv.tool_calls() == []


def test_usage_metadata_comes_only_from_events_that_report_it() -> None:
    assert Invocation.model_validate(EVENTS_SHAPE).usage_metadata() == [{"prompt_token_count": 10}]
    assert Invocation.model_validate(TOOL_USES_SHAPE).usage_metadata() == []


@pytest.mark.parametrize(
    "ui_keys",
    [
        {"invocationIndex": 0, "toolUseIndex": 2},
        {"invocation_index": 0, "tool_use_index": 2},
        {"invocationIndex": 1},
    ],
)
def test_invocation_event_ignores_the_web_editors_ui_keys(ui_keys: dict[str, int]) -> None:
    event = InvocationEvent.model_validate({"author": "root", **ui_keys})

    assert event == InvocationEvent(author="root")
    assert "invocation_index" not in event.model_dump()


def test_the_web_editors_ui_keys_are_never_shown_nor_written_and_cost_no_python_hook() -> None:
    event = InvocationEvent.model_validate_json('{"author": "root", "toolUseIndex": 4}')

    assert repr(event) == repr(InvocationEvent(author="root"))
    assert event.model_dump_json(exclude_none=True) == '{"author":"root"}'
    assert not InvocationEvent.__pydantic_decorators__.model_validators  # 28% slower reads


def test_invocation_event_still_rejects_other_unknown_keys() -> None:
    with pytest.raises(ValidationError) as info:
        InvocationEvent.model_validate({"author": "root", "invocationIndex": 0, "index": 1})

    assert [(e["type"], e["loc"]) for e in info.value.errors()] == [("extra_forbidden", ("index",))]


def test_invocation_requires_user_content_and_defaults_the_rest() -> None:
    with pytest.raises(ValidationError):
        Invocation.model_validate({})

    inv = Invocation.model_validate({"user_content": USER})
    assert inv.invocation_id == ""
    assert inv.creation_timestamp == 0.0
    assert inv.final_response is None
    assert inv.rubrics is None
    assert inv.app_details is None


def test_invocation_accepts_camel_case_and_writes_snake_case() -> None:
    inv = Invocation.model_validate(
        {
            "invocationId": "i-1",
            "userContent": USER,
            "finalResponse": {"role": "model", "parts": [{"text": "done"}]},
            "creationTimestamp": 12.5,
            "modelDuration": 0.5,
            "appDetails": {"agentDetails": {"root": {"name": "root", "toolDeclarations": []}}},
        }
    )

    dumped = inv.model_dump(exclude_none=True)
    assert dumped["invocation_id"] == "i-1"
    assert dumped["creation_timestamp"] == 12.5
    assert dumped["model_duration"] == 0.5
    assert dumped["app_details"] == {
        "agent_details": {"root": {"name": "root", "instructions": "", "tool_declarations": []}}
    }


def test_function_calls_built_in_code_are_returned_as_given() -> None:
    call = FunctionCall(name="f", args={})
    response = FunctionResponse(name="f", response={"ok": 1})
    inv = Invocation(
        user_content=Content.model_validate(USER),
        intermediate_data=IntermediateData(tool_uses=[call], tool_responses=[response]),
    )

    assert inv.tool_calls() == [call]
    assert inv.tool_responses() == [response]


GENAI_EVENT: dict[str, Any] = {
    "author": "root",
    "usageMetadata": {
        "promptTokenCount": 3,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 3}],
        "thoughtsTokenCount": None,
    },
    "groundingMetadata": {"webSearchQueries": ["q"]},
    "content": {
        "parts": [
            {"functionCall": {"name": "f", "args": {"camelArg": {"innerKey": None}}}},
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
            {"text": "x", "partMetadata": {"myKey": 1}},
        ]
    },
}


def test_genai_metadata_is_snake_cased_without_nulls_but_tool_args_are_kept_as_written() -> None:
    event = InvocationEvent.model_validate(GENAI_EVENT)

    assert event.usage_metadata == {
        "prompt_token_count": 3,
        "prompt_tokens_details": [{"modality": "TEXT", "token_count": 3}],
    }
    assert event.grounding_metadata == {"web_search_queries": ["q"]}
    assert event.content is not None
    parts = event.content.parts or []
    assert parts[0].function_call is not None
    assert parts[0].function_call.args == {"camelArg": {"innerKey": None}}
    assert parts[1].inline_data == {"mime_type": "image/png", "data": "AAAA"}
    assert parts[2].part_metadata == {"myKey": 1}


def test_genai_metadata_dumps_as_adk_dumps_it() -> None:
    ours = InvocationEvent.model_validate(GENAI_EVENT)
    adk = AdkInvocationEvent.model_validate(GENAI_EVENT)

    assert ours.model_dump(mode="json", exclude_none=True) == adk.model_dump(
        mode="json", exclude_none=True
    )
