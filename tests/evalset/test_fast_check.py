"""The fast check of invocations' JSON: whatever it accepts the models accept, and it accepts
the files ADK and assay write (so that streamed traces are not built twice)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from assay.evalset.case import EvalCase
from assay.evalset.fast_check import surely_case_json, surely_invocations
from assay.evalset.invocation import Invocation

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODELS = TypeAdapter(list[Invocation])

RECORDED: dict[str, Any] = {
    "invocation_id": "e-1",
    "user_content": {"role": "user", "parts": [{"text": "weather in Paris?"}]},
    "final_response": {"role": "model", "parts": [{"text": "Sunny.", "thought": False}]},
    "intermediate_data": {
        "invocation_events": [
            {
                "author": "root_agent",
                "content": {
                    "role": "model",
                    "parts": [
                        {"function_call": {"id": "c1", "name": "get_weather", "args": {"c": 1}}}
                    ],
                },
                "usage_metadata": {"prompt_token_count": 3},
                "invocation_index": 0,
            },
            {
                "author": "root_agent",
                "content": {
                    "role": "user",
                    "parts": [{"function_response": {"name": "get_weather", "response": {}}}],
                },
            },
        ]
    },
    "creation_timestamp": 1.5,
    "duration": 2,
    "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "is polite"}}],
    "app_details": {"agent_details": {"root_agent": {"name": "root_agent"}}},
}
STATIC: dict[str, Any] = {
    "user_content": {"parts": [{"text": "hi"}]},
    "intermediate_data": {
        "tool_uses": [{"name": "t", "args": {}}],
        "tool_responses": [{"name": "t", "response": {"ok": True}}],
        "intermediate_responses": [["sub_agent", [{"text": "thinking"}]]],
    },
}


def _models_accept(data: Any) -> bool:
    try:
        MODELS.validate_python(data)
    except ValidationError:
        return False
    return True


def _mutations(value: Any) -> Iterator[Any]:
    """``value`` with one place changed: each value replaced by one of another type, each
    object given an unknown key or a key's camelCase spelling, or a key left out."""
    odd: list[Any] = [None, 3, 2.5, True, "x", [], {}, [{}], {"text": 1}]
    if isinstance(value, dict):
        yield {**value, "surely_unknown": 1}
        for key in value:
            rest = {k: v for k, v in value.items() if k != key}
            yield rest
            head, *words = key.split("_")
            yield {**rest, head + "".join(w.capitalize() for w in words): value[key]}
            for changed in _mutations(value[key]):
                yield {**value, key: changed}
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for changed in _mutations(item):
                yield [*value[:index], changed, *value[index + 1 :]]
    yield from (other for other in odd if type(other) is not type(value) or other != value)


@pytest.mark.parametrize("invocation", [RECORDED, STATIC], ids=["events", "static"])
def test_whatever_the_check_accepts_the_models_accept_under_every_one_place_change(
    invocation: dict[str, Any],
) -> None:
    assert surely_invocations([invocation])
    accepted = 0
    for mutated in _mutations([copy.deepcopy(invocation)]):
        if surely_invocations(mutated):
            accepted += 1
            assert _models_accept(mutated), json.dumps(mutated)[:300]

    assert accepted > 10  # values the check accepts too: not a check that refuses all


def test_a_mix_of_events_and_static_steps_is_left_to_the_models_which_refuse_it() -> None:
    mixed = copy.deepcopy(RECORDED)
    mixed["intermediate_data"]["tool_uses"] = []

    assert not surely_invocations([mixed])
    assert not _models_accept([mixed])


def _conversations(data: Any) -> Iterator[list[Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "conversation" and isinstance(value, list):
                yield value
            else:
                yield from _conversations(value)
    elif isinstance(data, list):
        for item in data:
            yield from _conversations(item)


def _fixtures() -> Iterator[tuple[Path, Any]]:
    """Each JSON fixture file, and what it holds."""
    for path in sorted(FIXTURES.rglob("*.json")):
        try:
            yield path, json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue


def test_on_every_fixture_conversation_the_check_agrees_with_the_models_when_it_accepts() -> None:
    accepted = 0
    for path, data in _fixtures():
        for conversation in _conversations(data):
            if surely_invocations(conversation):
                accepted += 1
                assert _models_accept(conversation), path

    assert accepted >= 5


CASE: dict[str, Any] = {
    "eval_id": "weather",
    "conversation": [RECORDED, STATIC],
    "session_input": {"app_name": "travel", "user_id": "u1", "state": {"tier": "gold"}},
    "creation_timestamp": 3,
    "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "is brief"}}],
    "final_session_state": {"done": True},
}


def _case_models_accept(text: str) -> EvalCase | None:
    try:
        return EvalCase.model_validate_json(text)
    except ValidationError:
        return None


def test_whatever_the_case_check_accepts_the_models_accept_with_its_id_and_app() -> None:
    assert surely_case_json(json.dumps(CASE)) == ("weather", "travel")
    accepted = 0
    for mutated in _mutations(copy.deepcopy(CASE)):
        text = json.dumps(mutated)
        seen = surely_case_json(text)
        if seen is not None:
            accepted += 1
            case = _case_models_accept(text)
            assert case is not None, text[:300]
            app = case.session_input.app_name if case.session_input else None
            assert seen == (case.eval_id, app)

    assert accepted > 10


@pytest.mark.parametrize(
    "text",
    [
        '{"evalId": "c", "conversation": []}',  # camelCase: the models read it
        '{"eval_id": "c", "conversation_scenario": {"starting_prompt": "a", '
        '"conversation_plan": "b"}}',  # a scenario
        '{"eval_id": "c", "conversation": null}',
        '{"eval_id": "c", "conversation": [], "conversation_scenario": null}',
        '{"eval_id": "c", "conversation": [], "creation_timestamp": "3"}',
        '{"eval_id": "c", "conversation": []} x',
    ],
)
def test_what_the_case_check_is_unsure_of_is_left_to_the_models(text: str) -> None:
    assert surely_case_json(text) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"eval_id": "\\ud800", "conversation": []}',  # a lone surrogate
        '{"eval_id": "c", "conversation": [], "eval_id": 3}',  # a key given twice
        '{"eval_id": "c", "conversation": [], "eval_id": "d"}',
        '{"eval_id": "c", "conversation": [], "creation_timestamp": 1e400}',
        '{"eval_id": "c", "conversation": [], "creation_timestamp": 123456789012345678901}',
    ],
)
def test_on_text_parsers_may_read_differently_the_case_check_accepts_only_what_the_models_do(
    text: str,
) -> None:
    seen = surely_case_json(text)
    case = _case_models_accept(text)
    assert seen is None or (case is not None and seen == (case.eval_id, None))


def test_on_every_fixture_case_the_case_check_agrees_with_the_models_when_it_accepts() -> None:
    accepted = 0
    for path, data in _fixtures():
        cases = data.get("eval_cases") if isinstance(data, dict) else None
        for case in cases if isinstance(cases, list) else ():
            text = json.dumps(case)
            if surely_case_json(text) is not None:
                accepted += 1
                assert _case_models_accept(text) is not None, path

    assert accepted >= 5
