"""Content, Part, FunctionCall and FunctionResponse: genai's JSON shape without genai."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types as genai_types
from pydantic import ValidationError

from assay.evalset import Content, FunctionCall, FunctionResponse, Part, content_text


def test_part_accepts_camel_case_and_snake_case_keys_alike() -> None:
    camel = Part.model_validate({"functionCall": {"name": "f", "args": {"x": 1}}})
    snake = Part.model_validate({"function_call": {"name": "f", "args": {"x": 1}}})

    assert camel == snake
    assert camel.function_call == FunctionCall(name="f", args={"x": 1})


def test_function_call_and_response_accept_camel_case_keys() -> None:
    call = FunctionCall.model_validate({"name": "f", "willContinue": True, "partialArgs": []})
    response = FunctionResponse.model_validate({"id": "1", "willContinue": False})

    assert call.will_continue is True
    assert call.partial_args == []
    assert response.will_continue is False


def test_dump_writes_snake_case_keys() -> None:
    part = Part.model_validate(
        {"functionResponse": {"name": "f", "response": {"ok": True}, "willContinue": True}}
    )

    assert part.model_dump(exclude_none=True) == {
        "function_response": {"name": "f", "response": {"ok": True}, "will_continue": True}
    }


def test_explicit_nulls_written_by_adk_are_accepted() -> None:
    part = Part.model_validate(
        {
            "video_metadata": None,
            "thought": None,
            "inline_data": None,
            "file_data": None,
            "thought_signature": None,
            "code_execution_result": None,
            "executable_code": None,
            "function_call": None,
            "function_response": None,
            "text": "hello",
        }
    )

    assert part == Part(text="hello")


def test_part_rejects_an_unknown_key() -> None:
    with pytest.raises(ValidationError) as info:
        Part.model_validate({"txt": "hello"})

    (error,) = info.value.errors()
    assert error["type"] == "extra_forbidden"
    assert error["loc"] == ("txt",)


def test_part_has_exactly_the_fields_of_genai_part() -> None:
    assert set(Part.model_fields) == set(genai_types.Part.model_fields)
    assert set(Content.model_fields) == set(genai_types.Content.model_fields)
    assert set(FunctionCall.model_fields) == set(genai_types.FunctionCall.model_fields)
    assert set(FunctionResponse.model_fields) == set(genai_types.FunctionResponse.model_fields)


@pytest.mark.parametrize("args", [None, {}, {"a": None}, {"nested": {"list": [1, 2.5, "x"]}}])
def test_function_call_args_survive_dump_and_validate_unchanged(args: Any) -> None:
    call = FunctionCall(name="f", args=args)

    again = FunctionCall.model_validate(call.model_dump(exclude_none=True))

    assert again.args == args
    assert (again.args is None) == (args is None)


def test_none_args_and_empty_args_are_different_calls() -> None:
    assert FunctionCall(name="f", args=None) != FunctionCall(name="f", args={})


def test_content_from_text_is_one_text_part() -> None:
    content = Content.from_text("hi", role="user")

    assert content == Content(role="user", parts=[Part(text="hi")])
    assert Content.from_text("ok").role == "model"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, ""),
        (Content(role="model"), ""),
        (Content(role="model", parts=[]), ""),
        (Content(role="model", parts=[Part(text="a"), Part(text="b")]), "a\nb"),
        (Content(role="model", parts=[Part(text=None), Part(text=""), Part(text="b")]), "b"),
        (Content(role="model", parts=[Part(text="plan", thought=True), Part(text="b")]), "plan\nb"),
        (
            Content(
                role="model",
                parts=[Part(function_call=FunctionCall(name="f")), Part(text="done")],
            ),
            "done",
        ),
    ],
    ids=["none", "no-parts", "empty-parts", "two-texts", "skips-empty", "thought", "tool-call"],
)
def test_content_text_joins_non_empty_texts_with_newlines(
    content: Content | None, expected: str
) -> None:
    assert content_text(content) == expected
