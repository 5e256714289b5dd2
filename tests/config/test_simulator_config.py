"""user_simulator_config: ADK 2.13's fields and defaults, validated at load with JSON paths; what
ADK accepts loads, with a warning where assay ignores it or cannot play it."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.simulation._llm_audio_user_simulator import (
    LlmAudioUserSimulatorConfig as AdkAudioConfig,
)
from google.adk.evaluation.simulation.llm_backed_user_simulator import (
    LlmBackedUserSimulatorConfig as AdkConfig,
)
from pydantic import ValidationError

from assay.config import EvalConfig, check_config, parse_config
from assay.config.simulator import AudioUserSimulatorConfig
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
        EvalConfig.model_validate({"user_simulator_config": {"max_allowed_invocations": "many"}})


def warnings_of(user_simulator_config: Any) -> list[str]:
    """What check_config warns about a simulator config ADK accepts (checked against ADK)."""
    data = {"criteria": {}, "user_simulator_config": user_simulator_config}
    assert AdkEvalConfig.model_validate(data).user_simulator_config is not None
    config = check_config(data, "c.json")
    assert config.user_simulator_config is not None
    return [str(w) for w in config.warnings]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"max_alowed_invocations": 5},
            "c.json: user_simulator_config.max_alowed_invocations: unknown key "
            "'max_alowed_invocations' ignored, as ADK does; did you mean 'max_allowed_invocations'?",
        ),
        (
            {"maxAllowedInvocation": 5},
            "c.json: user_simulator_config.maxAllowedInvocation: unknown key "
            "'maxAllowedInvocation' ignored, as ADK does; did you mean 'maxAllowedInvocations'?",
        ),
        (
            {"type": "llm_audio"},
            "c.json: user_simulator_config.type: ADK's audio user simulator is not available in "
            "assay: a case with a conversation_scenario is NOT_EVALUATED with this config",
        ),
        (
            {"max_allowed_invocations": 0},
            "c.json: user_simulator_config.max_allowed_invocations: a limit of 0 stops every "
            "simulated conversation before its first message, as in ADK (-1 is no limit)",
        ),
        (
            {"maxAllowedInvocations": -2},
            "c.json: user_simulator_config.maxAllowedInvocations: a limit of -2 stops every "
            "simulated conversation before its first message, as in ADK (-1 is no limit)",
        ),
        (
            {"max_allowed_invocations": True},
            "c.json: user_simulator_config.max_allowed_invocations: a boolean limit, read as 1 "
            "as ADK reads it; write a number",
        ),
        (
            {"model": ""},
            "c.json: user_simulator_config.model: no model named: a conversation_scenario "
            "cannot be played",
        ),
        (
            {"model_configuration": {"temprature": 0.2}},
            "c.json: user_simulator_config.model_configuration.temprature: 'temprature' is not a "
            "setting of google-genai's GenerateContentConfig (did you mean 'temperature'?), so "
            "ADK refuses this config; assay passes it to the simulated user's model as it is",
        ),
    ],
    ids=[
        "typo",
        "camelCase-typo",
        "audio",
        "zero-limit",
        "negative-limit",
        "boolean-limit",
        "empty-model",
        "genai-setting",
    ],
)
def test_what_adk_accepts_loads_with_a_warning_at_its_json_path(given: Any, expected: str) -> None:
    if "model_configuration" in given:  # ADK refuses this one: assay's models are not all Gemini
        with pytest.raises(ValidationError):
            AdkEvalConfig.model_validate({"user_simulator_config": given})
        assert [
            str(w) for w in check_config({"user_simulator_config": given}, "c.json").warnings
        ] == [expected]
        return
    assert warnings_of(given) == [expected]


def test_the_audio_simulators_settings_are_checked_as_adk_checks_them() -> None:
    audio = {"type": "llm_audio", "audio_model": "cloud_tts", "include_text_with_audio": False}
    config = check_config({"user_simulator_config": audio}, "c.json").user_simulator_config
    assert isinstance(config, AudioUserSimulatorConfig)
    assert config.include_text_with_audio is False
    assert set(AudioUserSimulatorConfig.model_fields) == set(AdkAudioConfig.model_fields)

    bad = {"type": "llm_audio", "include_text_with_audio": "sometimes"}
    with pytest.raises(ValidationError):
        AdkEvalConfig.model_validate({"user_simulator_config": bad})
    assert problems(bad)[0] == (
        "c.json: user_simulator_config.include_text_with_audio: expected true or false; "
        'got "sometimes"'
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (
            {"type": "scripted"},
            "c.json: user_simulator_config.type: expected 'llm_backed' (the default) or "
            "'llm_audio'; got \"scripted\"",
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
        "unknown-type",
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


def test_every_mistake_is_reported_at_once_with_the_warnings() -> None:
    found = problems({"modle": "x", "max_allowed_invocations": "0x", "custom_instructions": "hi"})
    assert len(found) == 3
    assert found[-1] == (
        "c.json: user_simulator_config.modle: unknown key 'modle' ignored, as ADK does; "
        "did you mean 'model'?"
    )


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
