"""user_simulator_config: ADK 2.13's fields and defaults, validated at load with JSON paths."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.simulation.llm_backed_user_simulator import (
    LlmBackedUserSimulatorConfig as AdkConfig,
)
from pydantic import ValidationError

from assay.config import EvalConfig, parse_config
from assay.errors import ConfigError
from assay.simulation import UserSimulatorConfig

VALID_TEMPLATE = "{{ stop_signal }} {{ conversation_plan }} {{ conversation_history }}"


def problems(user_simulator_config: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config({"criteria": {}, "user_simulator_config": user_simulator_config}, "c.json")
    return [str(p) for p in caught.value.problems]


def test_the_fields_are_adks() -> None:
    assert set(UserSimulatorConfig.model_fields) == set(AdkConfig.model_fields)


def test_the_defaults_are_adks_except_the_gemini_only_model_configuration() -> None:
    ours, adk = UserSimulatorConfig(), AdkConfig()
    for name in ("type", "model", "max_allowed_invocations", "custom_instructions"):
        assert getattr(ours, name) == getattr(adk, name), name
    assert ours.include_function_calls is adk.include_function_calls is False
    assert ours.model_configuration is None
    assert ours.limit == 20


def test_a_config_adk_accepts_loads_with_the_same_values() -> None:
    data = {
        "criteria": {},
        "userSimulatorConfig": {
            "model": "openai:gpt-4o-mini",
            "modelConfiguration": {"temperature": 0.2},
            "maxAllowedInvocations": -1,
            "customInstructions": VALID_TEMPLATE,
            "includeFunctionCalls": True,
        },
    }
    adk = AdkEvalConfig.model_validate(data).user_simulator_config
    assert isinstance(adk, AdkConfig)

    ours = parse_config(data).user_simulator_config

    assert isinstance(ours, UserSimulatorConfig)
    assert ours.type == adk.type == "llm_backed"
    assert ours.model == adk.model
    assert ours.max_allowed_invocations == adk.max_allowed_invocations == -1
    assert ours.limit is None
    assert ours.custom_instructions == adk.custom_instructions
    assert ours.include_function_calls is adk.include_function_calls is True
    assert ours.model_configuration == {"temperature": 0.2}
    assert adk.model_configuration.temperature == 0.2


@pytest.mark.parametrize("given", [{}, {"type": None}, {"type": "llm_backed"}])
def test_a_missing_or_null_type_is_llm_backed_as_in_adk(given: dict[str, Any]) -> None:
    config = parse_config({"criteria": {}, "user_simulator_config": given}).user_simulator_config
    assert config is not None and config.type == "llm_backed"
    assert AdkEvalConfig.model_validate({"user_simulator_config": given}).user_simulator_config


def test_no_user_simulator_config_is_none() -> None:
    assert parse_config({"criteria": {}}).user_simulator_config is None


def test_evalconfig_model_validate_types_the_field_too() -> None:
    config = EvalConfig.model_validate({"user_simulator_config": {"max_allowed_invocations": 4}})
    assert isinstance(config.user_simulator_config, UserSimulatorConfig)
    with pytest.raises(ValidationError):
        EvalConfig.model_validate({"user_simulator_config": {"max_alowed_invocations": 4}})


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"max_alowed_invocations": 5},
            "c.json: user_simulator_config: unknown key 'max_alowed_invocations' "
            "(did you mean 'max_allowed_invocations'?)",
        ),
        (
            {"maxAllowedInvocation": 5},
            "c.json: user_simulator_config: unknown key 'maxAllowedInvocation' "
            "(did you mean 'maxAllowedInvocations'?)",
        ),
        (
            {"type": "llm_audio"},
            "c.json: user_simulator_config.type: ADK's audio user simulator ('llm_audio') is "
            "not available in assay; use 'llm_backed' (the default)",
        ),
        (
            {"type": "scripted"},
            "c.json: user_simulator_config.type: expected 'llm_backed' (the only user "
            "simulator); got 'scripted'",
        ),
        (
            {"max_allowed_invocations": 0},
            "c.json: user_simulator_config.max_allowed_invocations: expected -1 (no limit) or a "
            "number of user messages of at least 1; got 0",
        ),
        (
            {"maxAllowedInvocations": -2},
            "c.json: user_simulator_config.maxAllowedInvocations: expected -1 (no limit) or a "
            "number of user messages of at least 1; got -2",
        ),
        (
            {"max_allowed_invocations": True},
            "c.json: user_simulator_config.max_allowed_invocations: expected an integer; got true",
        ),
        (
            {"max_allowed_invocations": "many"},
            'c.json: user_simulator_config.max_allowed_invocations: expected an integer; got "many"',
        ),
        (
            {"model_configuration": "hot"},
            'c.json: user_simulator_config.model_configuration: expected an object; got "hot"',
        ),
        (
            {"custom_instructions": "Plan: {{ conversation_plan }}"},
            "c.json: user_simulator_config.custom_instructions: must use the Jinja "
            "placeholder(s) {{ stop_signal }}, {{ conversation_history }}",
        ),
        (
            {"customInstructions": "{stop_signal} {conversation_plan} {conversation_history}"},
            "c.json: user_simulator_config.customInstructions: must use the Jinja placeholder(s) "
            "{{ stop_signal }}, {{ conversation_plan }}, {{ conversation_history }}; "
            "'{stop_signal}' is the old str.format style, which ADK 2.13 no longer reads: "
            "write '{{ stop_signal }}'",
        ),
        (
            {"custom_instructions": "{{ stop_signal }} {% if %}"},
            "c.json: user_simulator_config.custom_instructions: is not a valid Jinja template: "
            "line 1: Expected an expression, got 'end of statement block'",
        ),
        (
            5,
            "c.json: user_simulator_config: expected an object; got 5",
        ),
    ],
    ids=[
        "typo",
        "camelCase-typo",
        "audio",
        "unknown-type",
        "zero-limit",
        "negative-limit",
        "boolean-limit",
        "string-limit",
        "model-configuration",
        "missing-placeholders",
        "old-format-style",
        "syntax-error",
        "not-an-object",
    ],
)
def test_each_mistake_is_reported_at_its_json_path(given: Any, expected: str) -> None:
    assert problems(given) == [expected]


def test_every_mistake_is_reported_at_once() -> None:
    found = problems({"modle": "x", "max_allowed_invocations": 0, "custom_instructions": "hi"})
    assert len(found) == 3
    assert "c.json: user_simulator_config: unknown key 'modle' (did you mean 'model'?)" in found


@pytest.mark.parametrize(
    "template",
    [
        VALID_TEMPLATE,
        "{{conversation_history}}{{conversation_plan}}{{stop_signal}}",
        "{% if stop_signal %}{{ stop_signal }}{% endif %} {{ conversation_plan | upper }} "
        "{{ conversation_history }}",
        VALID_TEMPLATE + " {{ persona.description }}",
        "{{ stop_signal }} {{ conversation_plan }}",
        "{stop_signal} {conversation_plan} {conversation_history}",
        "{{ stop_signal }} {{ conversation_plan }} {{ conversation_history",
        "{% raw %}{{ stop_signal }}{% endraw %} {{ conversation_plan }} {{ conversation_history }}",
        "{% set stop_signal = 'x' %}{{ stop_signal }} {{ conversation_plan }} "
        "{{ conversation_history }}",
    ],
)
def test_custom_instructions_are_accepted_exactly_when_adk_accepts_them(template: str) -> None:
    try:
        AdkConfig(custom_instructions=template)
        adk_accepts = True
    except ValidationError:
        adk_accepts = False

    try:
        UserSimulatorConfig(custom_instructions=template)
        we_accept = True
    except ValidationError:
        we_accept = False

    assert we_accept == adk_accepts
