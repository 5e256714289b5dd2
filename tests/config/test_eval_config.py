"""EvalConfig: the criteria map, strict validation with JSON paths, and parity with ADK 2.13.0."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from _support import Example, RunCli
from google.adk.evaluation import eval_config as adk_eval_config
from google.adk.evaluation import eval_metrics as adk_metrics
from google.adk.evaluation.evaluator import Evaluator as AdkEvaluator
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
from google.adk.evaluation.hallucinations_v1 import HallucinationsV1Evaluator
from google.adk.evaluation.rubric_based_final_response_quality_v1 import (
    RubricBasedFinalResponseQualityV1Evaluator,
)
from google.adk.evaluation.rubric_based_multi_turn_trajectory_evaluator import (
    RubricBasedMultiTurnTrajectoryEvaluator,
)
from google.adk.evaluation.rubric_based_tool_use_quality_v1 import RubricBasedToolUseV1Evaluator
from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import (
    PerTurnUserSimulatorQualityV1,
)
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

import assay.config.eval_config as eval_config_module
from assay.config import (
    CRITERION_TYPES,
    GENERATE_CONTENT_CONFIG_KEYS,
    INFORMATIONAL_METRICS,
    BaseCriterion,
    EvalConfig,
    HallucinationsCriterion,
    LlmAsAJudgeCriterion,
    LlmBackedUserSimulatorCriterion,
    MatchType,
    RubricsBasedCriterion,
    ToolTrajectoryCriterion,
    check_config,
    default_config,
    load_config,
    parse_config,
    read_config,
)
from assay.errors import ConfigError, ConfigWarning

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "examples" / "travel" / "test_config.json"

# The criterion model each ADK 2.13.0 evaluator validates its criterion with. ResponseEvaluator
# (response_evaluation_score) and SafetyEvaluatorV1 (safety_v1) keep the Evaluator default;
# importing them pulls in Vertex AI, which takes seconds.
ADK_CRITERION_TYPES: dict[str, type[adk_metrics.BaseCriterion]] = {
    "tool_trajectory_avg_score": TrajectoryEvaluator.criterion_type,
    "response_match_score": RougeEvaluator.criterion_type,
    "response_evaluation_score": AdkEvaluator.criterion_type,
    "safety_v1": AdkEvaluator.criterion_type,
    "final_response_match_v2": FinalResponseMatchV2Evaluator.criterion_type,
    "rubric_based_final_response_quality_v1": (
        RubricBasedFinalResponseQualityV1Evaluator.criterion_type
    ),
    "rubric_based_tool_use_quality_v1": RubricBasedToolUseV1Evaluator.criterion_type,
    "hallucinations_v1": HallucinationsV1Evaluator.criterion_type,
    "per_turn_user_simulator_quality_v1": PerTurnUserSimulatorQualityV1.criterion_type,
    # The three Vertex-backed multi-turn evaluators need ADK's [eval] extra (pandas) to import;
    # none of them overrides Evaluator.criterion_type, so theirs is the base criterion.
    "multi_turn_task_success_v1": AdkEvaluator.criterion_type,
    "multi_turn_trajectory_quality_v1": AdkEvaluator.criterion_type,
    "multi_turn_tool_use_quality_v1": AdkEvaluator.criterion_type,
    "rubric_based_multi_turn_trajectory_quality_v1": (
        RubricBasedMultiTurnTrajectoryEvaluator.criterion_type
    ),
}

JUDGE = {
    "judge_model": "gemini-2.5-pro",
    "judge_model_config": {"temperature": 0.2},
    "num_samples": 3,
    "parallelism_limit": 2,
}
RUBRICS = [
    {
        "rubric_id": "r1",
        "rubric_content": {"text_property": "The answer is polite."},
        "description": "politeness",
        "type": "FINAL_RESPONSE_QUALITY",
    }
]
FULL_CRITERIA: dict[str, dict[str, Any]] = {
    "tool_trajectory_avg_score": {
        "threshold": 0.9,
        "include_intermediate_responses_in_final": True,
        "match_type": "IN_ORDER",
        "ignore_args": True,
    },
    "response_match_score": {"threshold": 0.7, "include_intermediate_responses_in_final": True},
    "response_evaluation_score": {"threshold": 3.5},
    "safety_v1": {"threshold": 0.6},
    "final_response_match_v2": {"threshold": 0.8, "judge_model_options": JUDGE},
    "rubric_based_final_response_quality_v1": {
        "threshold": 0.75,
        "judge_model_options": JUDGE,
        "rubrics": RUBRICS,
    },
    "rubric_based_tool_use_quality_v1": {"threshold": 0.5, "rubrics": RUBRICS},
    "hallucinations_v1": {
        "threshold": 0.85,
        "judge_model_options": JUDGE,
        "evaluate_intermediate_nl_responses": True,
    },
    "per_turn_user_simulator_quality_v1": {
        "threshold": 1.0,
        "judge_model_options": JUDGE,
        "stop_signal": "<done/>",
    },
}


def problems(data: Any) -> list[str]:
    """Every problem parse_config reports for ``data`` (in file ``c.json``), as text."""
    with pytest.raises(ConfigError) as info:
        parse_config(data, "c.json")
    assert all(problem.file == "c.json" for problem in info.value.problems)
    return [str(problem) for problem in info.value.problems]


def criterion(name: str, value: Any) -> BaseCriterion:
    return parse_config({"criteria": {name: value}}).criteria[name]


def adk_refuses(data: dict[str, Any]) -> bool:
    """Whether ADK refuses ``data``: its EvalConfig, or a criterion re-validated as the model
    its metric's evaluator reads (the differential test runs ADK's whole pipeline)."""
    try:
        adk = adk_eval_config.EvalConfig.model_validate(data)
        for name, value in adk.criteria.items():
            kind = ADK_CRITERION_TYPES.get(name)
            if kind is not None and isinstance(value, adk_metrics.BaseCriterion):
                kind.model_validate(value.model_dump())
    except ValueError:  # pydantic's ValidationError is a ValueError
        return True
    return False


def adk_match_type(value: Any) -> str | None:
    """The member ADK's own ToolTrajectoryCriterion makes of ``value``, or None if it rejects it."""
    try:
        return adk_metrics.ToolTrajectoryCriterion(threshold=1.0, match_type=value).match_type.name
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None


# --- the criteria map -------------------------------------------------------------------------


def test_a_number_is_the_threshold_and_an_object_is_the_metrics_criterion() -> None:
    config = parse_config(
        {
            "criteria": {
                "response_match_score": 0.6,
                "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "ANY_ORDER"},
            }
        }
    )

    assert config.criteria["response_match_score"].threshold == 0.6
    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert isinstance(trajectory, ToolTrajectoryCriterion)
    assert trajectory.threshold == 0.5
    assert trajectory.match_type is MatchType.ANY_ORDER


def test_a_bare_threshold_builds_the_metrics_own_model_with_its_defaults() -> None:
    trajectory = criterion("tool_trajectory_avg_score", 1)
    judge = criterion("final_response_match_v2", 0.8)

    assert type(trajectory) is ToolTrajectoryCriterion
    assert (trajectory.threshold, trajectory.match_type, trajectory.ignore_args) == (
        1.0,
        MatchType.EXACT,
        False,
    )
    assert type(judge) is LlmAsAJudgeCriterion
    assert judge.judge_model_options.judge_model == "gemini-2.5-flash"
    assert judge.judge_model_options.num_samples == 5


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("tool_trajectory_avg_score", ToolTrajectoryCriterion),
        ("response_match_score", BaseCriterion),
        ("response_evaluation_score", BaseCriterion),
        ("safety_v1", BaseCriterion),
        ("final_response_match_v2", LlmAsAJudgeCriterion),
        ("rubric_based_final_response_quality_v1", RubricsBasedCriterion),
        ("rubric_based_tool_use_quality_v1", RubricsBasedCriterion),
        ("hallucinations_v1", HallucinationsCriterion),
        ("per_turn_user_simulator_quality_v1", LlmBackedUserSimulatorCriterion),
    ],
)
def test_each_known_metric_is_validated_by_the_criterion_model_adks_evaluator_uses(
    name: str, model: type[BaseCriterion]
) -> None:
    built = criterion(name, FULL_CRITERIA[name])

    assert type(built) is model
    assert CRITERION_TYPES[name] is model
    adk_type = ADK_CRITERION_TYPES[name]
    assert model.__name__ == adk_type.__name__
    assert set(model.model_fields) == set(adk_type.model_fields)


def test_the_known_metrics_are_adks_prebuilt_metrics_less_the_informational_ones() -> None:
    assert set(CRITERION_TYPES) == set(ADK_CRITERION_TYPES)
    prebuilt = {metric.value for metric in adk_metrics.PrebuiltMetrics}
    assert set(CRITERION_TYPES) == prebuilt - set(INFORMATIONAL_METRICS)
    for name, model in CRITERION_TYPES.items():
        assert model.__name__ == ADK_CRITERION_TYPES[name].__name__, name
    assert set(INFORMATIONAL_METRICS) == set(adk_eval_config._DEFAULT_EFFICIENCY_METRICS)


# --- typos: an error where ADK refuses them, a warning where ADK ignores them -----------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {
                "criteria": {
                    "final_response_match_v2": {
                        "threshold": 0.8,
                        "judge_model_options": {"num_sample": 3},
                    }
                }
            },
            "c.json: criteria.final_response_match_v2.judge_model_options: "
            "unknown key 'num_sample' (did you mean 'num_samples'?)",
        ),
        (
            {
                "criteria": {
                    "final_response_match_v2": {
                        "threshold": 0.8,
                        "judgeModelOptions": {"numSample": 3},
                    }
                }
            },
            "c.json: criteria.final_response_match_v2.judgeModelOptions: "
            "unknown key 'numSample' (did you mean 'numSamples'?)",
        ),
        (
            {
                "criteria": {
                    "rubric_based_final_response_quality_v1": {
                        "threshold": 0.8,
                        "rubrics": [{"rubric_id": "r", "rubric_content": {"text_propert": "x"}}],
                    }
                }
            },
            "c.json: criteria.rubric_based_final_response_quality_v1.rubrics[0].rubric_content: "
            "unknown key 'text_propert' (did you mean 'text_property'?)",
        ),
        (
            {"criteria": {}, "custom_metrics": {"mine": {"code_config": {"nme": "a.b"}}}},
            "c.json: custom_metrics.mine.code_config: unknown key 'nme' (did you mean 'name'?)",
        ),
        (
            {
                "criteria": {},
                "custom_metrics": {"mine": {"code_config": {"name": "a.b", "args": []}}},
            },
            "c.json: custom_metrics.mine.code_config: unknown key 'args'",
        ),
    ],
    ids=["judge-options", "camelCase", "rubric-content", "code-config", "code-config-args"],
)
def test_a_typo_adk_refuses_is_an_error_naming_its_json_path_with_a_suggestion(
    data: dict[str, Any], expected: str
) -> None:
    assert expected in problems(data)
    assert adk_refuses(data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_typ": "EXACT"}}},
            "c.json: criteria.tool_trajectory_avg_score.match_typ: "
            "unknown key 'match_typ' ignored, as ADK does; did you mean 'match_type'?",
        ),
        (
            {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignoreArg": True}}},
            "c.json: criteria.tool_trajectory_avg_score.ignoreArg: "
            "unknown key 'ignoreArg' ignored, as ADK does; did you mean 'ignoreArgs'?",
        ),
        (
            {"criteria": {"final_response_match_v2": {"threshold": 0.5, "num_sample": 3}}},
            "c.json: criteria.final_response_match_v2.num_sample: unknown key 'num_sample' "
            "ignored, as ADK does; did you mean 'judge_model_options.num_samples'?",
        ),
        (
            {
                "criteria": {
                    "per_turn_user_simulator_quality_v1": {"threshold": 1, "stop_signa": "x"}
                }
            },
            "c.json: criteria.per_turn_user_simulator_quality_v1.stop_signa: "
            "unknown key 'stop_signa' ignored, as ADK does; did you mean 'stop_signal'?",
        ),
        (
            {
                "criteria": {
                    "safety_v1": {"threshold": 0.5, "judge_model_options": {"num_sample": 1}}
                }
            },
            "c.json: criteria.safety_v1.judge_model_options: "
            "unknown key 'judge_model_options' ignored, as ADK does",
        ),
        (
            {"criterias": {"response_match_score": 0.8}},
            "c.json: criterias: unknown key 'criterias' ignored, as ADK does; "
            "did you mean 'criteria'?",
        ),
        (
            {
                "criteria": {},
                "custom_metrics": {"mine": {"code_config": {"name": "a.b"}, "descripton": "d"}},
            },
            "c.json: custom_metrics.mine.descripton: "
            "unknown key 'descripton' ignored, as ADK does; did you mean 'description'?",
        ),
        (
            {"criteria": {}, "liveModelConfig": {"timeoutSecond": 5}},
            "c.json: liveModelConfig.timeoutSecond: "
            "unknown key 'timeoutSecond' ignored, as ADK does; did you mean 'timeoutSeconds'?",
        ),
    ],
    ids=[
        "trajectory",
        "camelCase-trajectory",
        "one-level-too-high",
        "simulator-criterion",
        "options-of-a-metric-without-a-judge",
        "top-level",
        "custom-metric",
        "live-model-config",
    ],
)
def test_a_typo_adk_ignores_loads_with_a_warning_naming_its_json_path_and_a_suggestion(
    data: dict[str, Any], expected: str
) -> None:
    assert not adk_refuses(data)

    with pytest.warns(ConfigWarning) as caught:
        config = parse_config(data, "c.json")

    assert [str(w) for w in config.warnings] == [expected]
    assert [str(w.message) for w in caught] == [expected]


def test_a_refused_config_lists_its_warnings_too_as_they_often_explain_the_error() -> None:
    found = problems(
        {
            "criteria": {
                "respons_match_score": 0.8,
                "final_response_match_v2": {
                    "threshold": 0.8,
                    "judge_model_options": {"num_sample": 3},
                },
                "tool_trajectory_avg_score": {"treshold": 1.0},
            }
        }
    )

    assert len(found) == 4
    assert any("criteria.respons_match_score: unknown metric" in p for p in found)
    assert any("unknown key 'num_sample' (did you mean 'num_samples'?)" in p for p in found)
    assert "c.json: criteria.tool_trajectory_avg_score: missing required key 'threshold'" in found
    assert found[-1] == (
        "c.json: criteria.tool_trajectory_avg_score.treshold: "
        "unknown key 'treshold' ignored, as ADK does; did you mean 'threshold'?"
    )


def test_a_key_given_in_snake_case_and_in_camel_case_reads_the_camel_case_one_as_adk_does() -> None:
    data = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1, "matchType": "IN_ORDER", "match_type": 2}
        }
    }
    assert not adk_refuses(data)

    with pytest.warns(ConfigWarning):
        config = parse_config(data, "c.json")

    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert isinstance(trajectory, ToolTrajectoryCriterion)
    assert trajectory.match_type is MatchType.IN_ORDER
    assert [str(w) for w in config.warnings] == [
        "c.json: criteria.tool_trajectory_avg_score.match_type: 'match_type' ignored, as ADK "
        "ignores it: 'matchType' is given too, and read"
    ]


def test_a_setting_google_genai_does_not_know_is_a_warning_saying_adk_refuses_it() -> None:
    data = {
        "criteria": {
            "final_response_match_v2": {
                "threshold": 0.5,
                "judge_model_options": {"judge_model_config": {"temprature": 0.1, "seed": 3}},
            }
        }
    }
    assert adk_refuses(data)  # a departure: assay's judges are not all Gemini

    config = check_config(data, "c.json")

    assert [str(w) for w in config.warnings] == [
        "c.json: criteria.final_response_match_v2.judge_model_options.judge_model_config"
        ".temprature: 'temprature' is not a setting of google-genai's GenerateContentConfig "
        "(did you mean 'temperature'?), so ADK refuses this config; assay passes it to the "
        "judge's backend as it is"
    ]
    options = config.criteria["final_response_match_v2"]
    assert isinstance(options, LlmAsAJudgeCriterion)
    assert options.judge_model_options.judge_model_config == {"temprature": 0.1, "seed": 3}


def test_the_generation_settings_known_are_google_genais() -> None:
    from google.genai import types as genai_types

    assert set(genai_types.GenerateContentConfig.model_fields) == GENERATE_CONTENT_CONFIG_KEYS


def test_warnings_are_emitted_by_parse_and_load_config_not_by_check_and_read_config(
    tmp_path: Path,
) -> None:
    data = {"criteria": {"response_match_score": {"threshold": 0.5, "treshold": 0.6}}}
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    expected = (
        f"{path}: criteria.response_match_score.treshold: unknown key 'treshold' ignored, "
        "as ADK does; did you mean 'threshold'?"
    )

    with pytest.warns(ConfigWarning) as caught:
        loaded = load_config(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read = read_config(path)
        checked = check_config(data, str(path))

    assert [str(w.message) for w in caught] == [expected]
    assert [str(w) for w in loaded.warnings] == [str(w) for w in read.warnings] == [expected]
    assert loaded.warnings == read.warnings == checked.warnings
    assert caught[0].filename != eval_config_module.__file__  # points at the caller


def test_evalconfig_model_validate_keeps_the_warnings_without_emitting_them() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = EvalConfig.model_validate({"criteria": {"safety_v1": True}, "extra": 1})

    assert config.criteria["safety_v1"].threshold == 1.0
    assert [w.path for w in config.warnings] == ["extra", "criteria.safety_v1"]


def test_an_unknown_metric_name_is_an_error_suggesting_the_closest_known_one() -> None:
    [problem] = problems({"criteria": {"respons_match_score": 0.8}})

    assert problem.startswith(
        "c.json: criteria.respons_match_score: unknown metric; did you mean 'response_match_score'?"
    )
    assert "(or declare it under 'custom_metrics')" in problem


def test_an_unknown_metric_name_far_from_any_known_one_lists_the_known_metrics() -> None:
    [problem] = problems({"criteria": {"zzz": 0.8}})

    assert "did you mean" not in problem
    assert all(name in problem for name in CRITERION_TYPES)


@pytest.mark.parametrize("name", INFORMATIONAL_METRICS)
def test_adks_efficiency_metrics_in_criteria_are_errors_because_they_take_no_threshold(
    name: str,
) -> None:
    assert problems({"criteria": {name: 0.5}}) == [
        f"c.json: criteria.{name}: this metric takes no threshold: it is reported on every run "
        "and never fails; remove it from 'criteria'"
    ]


@pytest.mark.parametrize("key", ["custom_metrics", "customMetrics"])
def test_a_metric_declared_in_custom_metrics_is_accepted_in_criteria(key: str) -> None:
    config = parse_config(
        {"criteria": {"my_metric": 0.5}, key: {"my_metric": {"code_config": {"name": "pkg.fn"}}}}
    )

    assert config.criteria["my_metric"].threshold == 0.5
    assert config.custom_metrics is not None
    assert config.custom_metrics["my_metric"].code_config.name == "pkg.fn"


def test_a_custom_metric_used_without_being_declared_is_an_unknown_metric() -> None:
    [problem] = problems({"criteria": {"my_metric": 0.5}})

    assert problem.startswith("c.json: criteria.my_metric: unknown metric;")


def test_an_invalid_custom_metric_declaration_is_reported_once_not_also_as_unknown_metric() -> None:
    found = problems(
        {"criteria": {"my_metric": 0.5}, "custom_metrics": {"my_metric": {"code_config": 5}}}
    )

    assert found == ["c.json: custom_metrics.my_metric.code_config: expected an object; got 5"]


def test_evalconfig_model_validate_accepts_criteria_naming_a_declared_custom_metric() -> None:
    config = EvalConfig.model_validate(
        {"criteria": {"mine": 0.4}, "custom_metrics": {"mine": {"code_config": {"name": "a.b"}}}}
    )

    assert config.criteria["mine"].threshold == 0.4


def test_evalconfig_model_validate_rejects_a_typo_with_its_path() -> None:
    with pytest.raises(ValueError, match=r"criteria\.respons_match_score: unknown metric"):
        EvalConfig.model_validate({"criteria": {"respons_match_score": 0.8}})


# --- match_type and camelCase -----------------------------------------------------------------

MATCH_TYPE_INPUTS: list[Any] = [
    "EXACT",
    "exact",
    "In_Order",
    "in-order",
    "IN ORDER",
    "any order",
    "Any-Order",
    "  any_order  ",
    "\tin-ORDER\n",
    0,
    1,
    2,
    1.0,
    2.0,
    True,
    False,
    "1",
    "0",
    3,
    -1,
    1.5,
    None,
    "x",
    "",
    "in__order",
    "EXACT_",
]


@pytest.mark.parametrize("value", MATCH_TYPE_INPUTS, ids=repr)
def test_match_type_is_coerced_exactly_as_adk_and_what_adk_rejects_is_a_load_error(
    value: Any,
) -> None:
    expected = adk_match_type(value)
    data = {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": value}}}

    if expected is not None:
        built = parse_config(data).criteria["tool_trajectory_avg_score"]
        assert isinstance(built, ToolTrajectoryCriterion)
        assert built.match_type.name == expected
    else:
        [problem] = problems(data)
        assert problem.startswith(
            "c.json: criteria.tool_trajectory_avg_score.match_type: "
            "expected one of EXACT, IN_ORDER, ANY_ORDER (or 0, 1, 2); got "
        )


def test_the_match_type_inputs_cover_both_what_adk_accepts_and_rejects() -> None:
    verdicts = [adk_match_type(value) for value in MATCH_TYPE_INPUTS]

    assert {"EXACT", "IN_ORDER", "ANY_ORDER", None} == set(verdicts)


def test_match_type_values_keep_adks_numbers() -> None:
    assert {m.name: m.value for m in MatchType} == {
        m.name: m.value for m in adk_metrics.ToolTrajectoryCriterion.MatchType
    }


def test_ignore_args_and_match_type_are_read_from_snake_or_camel_case_keys() -> None:
    snake = criterion(
        "tool_trajectory_avg_score", {"threshold": 1, "match_type": 1, "ignore_args": True}
    )
    camel = criterion(
        "tool_trajectory_avg_score", {"threshold": 1, "matchType": "in order", "ignoreArgs": True}
    )

    for built in (snake, camel):
        assert isinstance(built, ToolTrajectoryCriterion)
        assert built.match_type is MatchType.IN_ORDER
        assert built.ignore_args is True


def test_judge_options_are_read_from_camel_case_keys() -> None:
    built = criterion(
        "final_response_match_v2",
        {"threshold": 0.5, "judgeModelOptions": {"judgeModel": "m", "numSamples": 2}},
    )

    assert isinstance(built, LlmAsAJudgeCriterion)
    assert built.judge_model_options.judge_model == "m"
    assert built.judge_model_options.num_samples == 2


def test_num_samples_below_one_is_an_error_as_in_adk() -> None:
    [problem] = problems(
        {
            "criteria": {
                "final_response_match_v2": {
                    "threshold": 1,
                    "judge_model_options": {"num_samples": 0},
                }
            }
        }
    )

    assert problem.startswith(
        "c.json: criteria.final_response_match_v2.judge_model_options.num_samples: "
    )
    assert "greater than or equal to 1" in problem


# --- defaults and thresholds ------------------------------------------------------------------


def test_the_default_config_equals_adks_default_criteria() -> None:
    ours = default_config()
    adk = adk_eval_config._DEFAULT_EVAL_CONFIG

    assert {name: c.threshold for name, c in ours.criteria.items()} == adk.criteria
    assert (
        list(ours.criteria)
        == list(adk.criteria)
        == [
            "tool_trajectory_avg_score",
            "response_match_score",
        ]
    )
    assert isinstance(ours.criteria["tool_trajectory_avg_score"], ToolTrajectoryCriterion)
    assert ours.criteria["tool_trajectory_avg_score"].match_type is MatchType.EXACT


@pytest.mark.parametrize(
    "value",
    [1, 0, "0.5", " 0.5 ", "1e-1", {"threshold": 1}, {"threshold": "0.7"}],
    ids=repr,
)
def test_integer_and_numeric_string_thresholds_are_coerced_as_adk_coerces_them(
    value: Any,
) -> None:
    adk = adk_eval_config.EvalConfig.model_validate({"criteria": {"response_match_score": value}})
    adk_value = adk.criteria["response_match_score"]
    adk_threshold = adk_value if isinstance(adk_value, float) else adk_value.threshold

    ours = criterion("response_match_score", value)

    assert isinstance(ours.threshold, float)
    assert ours.threshold == adk_threshold


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (True, "criteria.response_match_score"),
        (False, "criteria.response_match_score"),
        ({"threshold": True}, "criteria.response_match_score.threshold"),
    ],
    ids=repr,
)
def test_boolean_thresholds_load_as_adk_reads_them_with_a_warning(value: Any, path: str) -> None:
    adk = adk_eval_config.EvalConfig.model_validate({"criteria": {"response_match_score": value}})
    adk_value = adk.criteria["response_match_score"]
    adk_threshold = adk_value if isinstance(adk_value, float) else adk_value.threshold
    assert adk_threshold == float(value is True or value == {"threshold": True})  # ADK: 1.0/0.0

    config = check_config({"criteria": {"response_match_score": value}}, "c.json")

    assert config.criteria["response_match_score"].threshold == adk_threshold
    [warning] = config.warnings
    assert (warning.file, warning.path) == ("c.json", path)
    assert warning.message == (
        f"a boolean threshold, read as {adk_threshold} as ADK reads it; write a number"
    )


def test_a_non_numeric_threshold_is_reported_where_it_was_written() -> None:
    assert problems({"criteria": {"response_match_score": "high"}}) == [
        'c.json: criteria.response_match_score: expected a number; got "high"'
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "expected a threshold number or a criterion object; got null"),
        ([0.5], "expected a threshold number or a criterion object; got a list"),
        ({}, "missing required key 'threshold'"),
    ],
    ids=["null", "list", "empty-object"],
)
def test_a_criterion_that_is_neither_a_number_nor_an_object_with_threshold_is_an_error(
    value: Any, message: str
) -> None:
    assert problems({"criteria": {"response_match_score": value}}) == [
        f"c.json: criteria.response_match_score: {message}"
    ]


def test_criteria_that_is_not_an_object_is_an_error() -> None:
    assert problems({"criteria": ["response_match_score"]}) == [
        "c.json: criteria: expected an object mapping metric names to criteria; got a list"
    ]


def test_a_config_that_is_not_an_object_is_an_error() -> None:
    assert problems([1, 2]) == ["c.json: expected an object with 'criteria'; got a list"]


# --- parity with ADK's EvalConfig -------------------------------------------------------------


def test_a_config_adk_accepts_with_full_criteria_for_all_nine_metrics_loads_the_same() -> None:
    data = {"criteria": FULL_CRITERIA}
    adk = adk_eval_config.EvalConfig.model_validate(data)

    ours = parse_config(data)

    assert list(ours.criteria) == list(adk.criteria) == list(FULL_CRITERIA)
    for name, adk_value in adk.criteria.items():
        assert isinstance(adk_value, adk_metrics.BaseCriterion)
        # What ADK's evaluator works with: its criterion re-validated as its own model.
        adk_typed = ADK_CRITERION_TYPES[name].model_validate(adk_value.model_dump())
        expected = adk_typed.model_dump(mode="json", exclude_none=True)
        assert ours.criteria[name].model_dump(mode="json", exclude_none=True) == expected, name


def test_a_camel_case_config_adk_accepts_loads_the_same_as_its_snake_case_form() -> None:
    camel = {
        "criteria": {
            "hallucinations_v1": {
                "threshold": 0.5,
                "judgeModelOptions": {"judgeModel": "m", "numSamples": 2},
                "evaluateIntermediateNlResponses": True,
            }
        }
    }
    adk = adk_eval_config.EvalConfig.model_validate(camel).criteria["hallucinations_v1"]
    assert isinstance(adk, adk_metrics.BaseCriterion)
    adk_typed = adk_metrics.HallucinationsCriterion.model_validate(adk.model_dump())

    ours = parse_config(camel).criteria["hallucinations_v1"]

    assert ours.model_dump(mode="json", exclude_none=True) == adk_typed.model_dump(
        mode="json", exclude_none=True
    )


# --- written back as ADK writes it -------------------------------------------------------------


def test_a_bare_threshold_is_written_back_as_a_number_as_adk_writes_it() -> None:
    data = {
        "criteria": {
            "response_match_score": "0.8",
            "tool_trajectory_avg_score": 1,
            "final_response_match_v2": {"threshold": 0.5},
        }
    }
    adk = adk_eval_config.EvalConfig.model_validate(data).model_dump(mode="json")

    config = parse_config(data)
    written = config.model_dump(mode="json")

    assert written["criteria"]["response_match_score"] == adk["criteria"]["response_match_score"]
    assert written["criteria"]["response_match_score"] == 0.8
    assert written["criteria"]["tool_trajectory_avg_score"] == 1.0
    assert config.criteria_as_written() == written["criteria"]
    assert written["criteria"]["final_response_match_v2"]["threshold"] == 0.5
    assert written["criteria"]["final_response_match_v2"]["judge_model_options"]["num_samples"] == 5
    assert parse_config(written) == config
    assert (
        default_config().model_dump(mode="json")["criteria"]
        == (adk_eval_config._DEFAULT_EVAL_CONFIG.model_dump(mode="json")["criteria"])
    )


def test_a_bare_threshold_changed_in_code_is_written_back_as_an_object() -> None:
    judge = criterion("final_response_match_v2", 0.8)
    assert isinstance(judge, LlmAsAJudgeCriterion)
    options = judge.judge_model_options.model_copy(update={"num_samples": 1})
    changed = judge.model_copy(update={"judge_model_options": options})
    config = EvalConfig.model_validate({"criteria": {"final_response_match_v2": 0.8}})

    config = config.model_copy(update={"criteria": {"final_response_match_v2": changed}})

    written = config.criteria_as_written()["final_response_match_v2"]
    assert written["judge_model_options"]["num_samples"] == 1
    assert written["threshold"] == 0.8


def test_keys_a_criterion_ignores_are_kept_as_adk_keeps_them_and_unknown_top_level_ones_are_not() -> (
    None
):
    data = {
        "criteria": {
            "safety_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
            "tool_trajectory_avg_score": {"threshold": 1, "matchType": "IN_ORDER", "note": "x"},
        },
        "user_simulator_config": {"model": "gemini-2.5-flash", "temperature": 0.3},
        "live_model_config": {"timeout_seconds": 60, "retries": 2},
        "version": 2,
    }
    adk = adk_eval_config.EvalConfig.model_validate(data)

    config = check_config(data, "c.json")
    written = config.model_dump(mode="json")

    adk_written = adk.model_dump(mode="json")
    assert written["criteria"]["safety_v1"] == adk_written["criteria"]["safety_v1"]
    assert config.criteria["safety_v1"].ignored_keys == {"judge_model_options": {"num_samples": 1}}
    assert not hasattr(config.criteria["safety_v1"], "judge_model_options")
    assert written["criteria"]["tool_trajectory_avg_score"]["note"] == "x"
    assert written["criteria"]["tool_trajectory_avg_score"]["match_type"] == 1
    assert config.user_simulator_config is not None
    assert config.user_simulator_config.model_extra == {"temperature": 0.3}
    assert written["user_simulator_config"]["temperature"] == 0.3
    assert (
        written["live_model_config"] == adk_written["live_model_config"] == {"timeout_seconds": 60}
    )
    assert "version" not in written and "version" not in adk_written
    assert sorted(w.path for w in config.warnings) == [
        "criteria.safety_v1.judge_model_options",
        "criteria.tool_trajectory_avg_score.note",
        "live_model_config.retries",
        "user_simulator_config.temperature",
        "version",
    ]
    assert check_config(written, "again.json").model_dump(mode="json") == written


def test_a_custom_metric_named_like_a_built_in_one_takes_its_criterion_as_adk_does() -> None:
    data = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": 1, "match_type": "bogus", "k": 3},
            "token_usage_v1": 0.5,
        },
        "custom_metrics": {
            "tool_trajectory_avg_score": {"code_config": {"name": "pkg.fn"}},
            "token_usage_v1": {"code_config": {"name": "pkg.tokens"}},
        },
    }

    config = check_config(data, "c.json")

    shadowed = config.criteria["tool_trajectory_avg_score"]
    assert type(shadowed) is BaseCriterion  # its function reads it, as ADK's custom evaluator
    assert shadowed.ignored_keys == {"match_type": "bogus", "k": 3}
    assert config.warnings == ()  # the keys are the function's to read: none is ignored
    assert config.criteria["token_usage_v1"].threshold == 0.5


# --- files ------------------------------------------------------------------------------------


def test_load_config_reads_a_json_file(tmp_path: Path) -> None:
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": {"response_match_score": 0.4}}), encoding="utf-8")

    assert load_config(path).criteria["response_match_score"].threshold == 0.4


def test_load_config_reads_a_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text(
        "criteria:\n"
        "  response_match_score: 0.4\n"
        "  tool_trajectory_avg_score:\n"
        "    threshold: 1.0\n"
        "    match_type: any order\n",
        encoding="utf-8",
    )

    config = load_config(path)

    assert config.criteria["response_match_score"].threshold == 0.4
    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert isinstance(trajectory, ToolTrajectoryCriterion)
    assert trajectory.match_type is MatchType.ANY_ORDER


def test_load_config_reads_the_travel_examples_config() -> None:
    config = load_config(EXAMPLE_CONFIG)

    trajectory = config.criteria["tool_trajectory_avg_score"]
    assert isinstance(trajectory, ToolTrajectoryCriterion)
    assert trajectory.match_type is MatchType.IN_ORDER
    assert config.criteria["response_match_score"].threshold == 0.6


def test_a_typo_in_a_config_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "test_config.json"
    path.write_text('{"criteria": {"respons_match_score": 0.8}}', encoding="utf-8")

    with pytest.raises(ConfigError) as info:
        load_config(path)

    [problem] = info.value.problems
    assert (problem.file, problem.path) == (str(path), "criteria.respons_match_score")


def test_malformed_json_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "test_config.json"
    path.write_text('{"criteria": {"response_match_score": 0.8,}}', encoding="utf-8")

    with pytest.raises(ConfigError) as info:
        load_config(path)

    [problem] = info.value.problems
    assert problem.file == str(path)
    assert problem.message.startswith("malformed JSON")
    assert str(path) in str(info.value)


def test_a_missing_config_file_is_a_config_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"

    with pytest.raises(ConfigError) as info:
        load_config(path)

    assert str(info.value) == f"{path}: file not found"


# --- the CLI prints the warnings --------------------------------------------------------------


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_assay_validate_shows_a_configs_warnings_and_passes(
    run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / "test_config.json"
    path.write_text(
        json.dumps({"criteria": {"safety_v1": {"threshold": 0.5, "judge_model_options": {}}}}),
        encoding="utf-8",
    )

    run = run_cli("validate", path)

    assert run.code == 0, run.output
    out = _flat(run.out)
    assert f"ok {path}: config with 1 criteria (safety_v1)" in out
    assert (
        f"warning: {path}: criteria.safety_v1.judge_model_options: "
        "unknown key 'judge_model_options' ignored, as ADK does"
    ) in out
    assert "ConfigWarning" not in run.output


def test_assay_eval_prints_a_shared_configs_warnings_once(
    run_cli: RunCli, example: Example, tmp_path: Path
) -> None:
    first = Path(shutil.copy(example.evalset, tmp_path / "one.evalset.json"))
    second = Path(shutil.copy(example.evalset, tmp_path / "two.evalset.json"))
    config = tmp_path / "test_config.json"
    config.write_text(
        json.dumps({"criteria": {"response_match_score": {"threshold": 0.5, "treshold": 0.9}}}),
        encoding="utf-8",
    )

    run = run_cli("eval", first, second, "--traces", example.traces, "--no-history")

    warning = (
        f"warning: {config}: criteria.response_match_score.treshold: unknown key 'treshold' "
        "ignored, as ADK does; did you mean 'threshold'?"
    )
    assert _flat(run.output).count(warning) == 1, run.output
    assert "ConfigWarning" not in run.output
    assert run.code in (0, 1)
