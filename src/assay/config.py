"""EvalConfig: which criteria to score and how, in ADK's ``test_config.json`` shape.

``criteria`` maps a metric name to a number (its threshold) or to the metric's criterion object.
Unlike ADK, every criterion is validated against its own metric's model when the file is loaded,
so a typo in any key (``num_sample``) or metric name is an error naming the key, not a metric that
silently turns NOT_EVALUATED twenty minutes into a run.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    SerializeAsAny,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from assay._files import load_data, type_name
from assay.errors import (
    ConfigError,
    Problem,
    format_path,
    keys_at,
    problems_from_validation,
    short_value,
)
from assay.evalset._base import AssayModel
from assay.evalset.rubric import Rubric
from assay.simulator_config import UserSimulatorConfig

DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"


class JudgeModelOptions(AssayModel):
    """Which LLM judges a metric, with what settings, how many times per invocation."""

    judge_model: str = DEFAULT_JUDGE_MODEL
    judge_model_config: dict[str, Any] | None = None
    num_samples: int = Field(default=5, ge=1)
    parallelism_limit: int = Field(default=1, ge=1)


class MatchType(enum.Enum):
    """How expected tool calls are matched against actual ones."""

    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2


class BaseCriterion(AssayModel):
    """A threshold: a metric passes when its score is ``>=`` it."""

    threshold: float
    include_intermediate_responses_in_final: bool = False

    @field_validator("threshold", mode="before")
    @classmethod
    def _no_boolean_threshold(cls, value: Any) -> Any:
        # Stricter than ADK, which reads ``true`` as 1.0: a boolean threshold is a mistake.
        if isinstance(value, bool):
            raise ValueError(f"expected a number; got {str(value).lower()}")
        return value


class ToolTrajectoryCriterion(BaseCriterion):
    """``tool_trajectory_avg_score``: match type, and whether arguments are compared at all."""

    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="wrap")
    @classmethod
    def _coerce_match_type(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        # As ADK: names are trimmed, upper-cased, '-' and ' ' become '_'; 0/1/2 are the values.
        # What ADK rejects is rejected here too, with the accepted values in the message.
        if isinstance(value, str):
            name = value.strip().upper().replace("-", "_").replace(" ", "_")
            value = MatchType[name] if name in MatchType.__members__ else value
        try:
            return handler(value)
        except ValidationError:
            raise ValueError(
                f"expected one of {', '.join(MatchType.__members__)} (or 0, 1, 2); "
                f"got {short_value(value)}"
            ) from None


class LlmAsAJudgeCriterion(BaseCriterion):
    """A threshold plus the judge's options."""

    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsBasedCriterion(LlmAsAJudgeCriterion):
    """A judge checks the response (or tool use) against yes/no rubrics."""

    rubrics: list[Rubric] = Field(default_factory=list)


class HallucinationsCriterion(LlmAsAJudgeCriterion):
    """A judge labels each sentence of the response against its context."""

    evaluate_intermediate_nl_responses: bool = False


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    """A judge checks each simulated user turn against the conversation plan."""

    stop_signal: str = "</finished>"


CRITERION_TYPES: Mapping[str, type[BaseCriterion]] = {
    "tool_trajectory_avg_score": ToolTrajectoryCriterion,
    "response_match_score": BaseCriterion,
    "response_evaluation_score": BaseCriterion,
    "safety_v1": BaseCriterion,
    "final_response_match_v2": LlmAsAJudgeCriterion,
    "rubric_based_final_response_quality_v1": RubricsBasedCriterion,
    "rubric_based_tool_use_quality_v1": RubricsBasedCriterion,
    "hallucinations_v1": HallucinationsCriterion,
    "per_turn_user_simulator_quality_v1": LlmBackedUserSimulatorCriterion,
    # ADK 2.13's multi-turn metrics (Vertex-backed, and one rubric-based): known, not yet scored.
    "multi_turn_task_success_v1": BaseCriterion,
    "multi_turn_trajectory_quality_v1": BaseCriterion,
    "multi_turn_tool_use_quality_v1": BaseCriterion,
    "rubric_based_multi_turn_trajectory_quality_v1": RubricsBasedCriterion,
}
"""Every metric a config may name, and the criterion model its entry is validated against."""

INFORMATIONAL_METRICS = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)
"""Efficiency metrics ADK 2.13 reports on every run; they take no threshold and never fail."""

DEFAULT_CRITERIA: Mapping[str, float] = {
    "tool_trajectory_avg_score": 1.0,
    "response_match_score": 0.8,
}


class CodeConfig(AssayModel):
    """Where a custom metric's function lives (``package.module.function``)."""

    name: str
    args: list[Any] | None = None


class CustomMetricConfig(AssayModel):
    """A custom metric declared in the config."""

    code_config: CodeConfig
    metric_info: dict[str, Any] | None = None
    description: str = ""


def _criterion_problems(
    name: str, value: Any, custom: Iterable[str], file: str
) -> tuple[BaseCriterion | None, list[Problem]]:
    path = format_path(["criteria", name])
    if name in INFORMATIONAL_METRICS:
        return None, [
            Problem(
                file,
                path,
                "this metric takes no threshold: it is reported on every run and never fails; "
                "remove it from 'criteria'",
            )
        ]
    criterion_type = CRITERION_TYPES.get(name)
    if criterion_type is None and name not in custom:
        hint = difflib.get_close_matches(name, list(CRITERION_TYPES), n=1)
        suggestion = f"did you mean '{hint[0]}'? " if hint else ""
        return None, [
            Problem(
                file,
                path,
                f"unknown metric; {suggestion}known metrics: {', '.join(CRITERION_TYPES)} "
                "(or declare it under 'custom_metrics')",
            )
        ]
    criterion_type = criterion_type or BaseCriterion
    if isinstance(value, BaseCriterion):
        value = value.model_dump()
    elif isinstance(value, bool) or not isinstance(value, int | float | str | dict):
        return None, [
            Problem(
                file,
                path,
                f"expected a threshold number or a criterion object; got {type_name(value)}",
            )
        ]
    bare = not isinstance(value, dict)
    data = {"threshold": value} if bare else value
    try:
        return criterion_type.model_validate(data), []
    except ValidationError as exc:
        problems = problems_from_validation(
            exc, file, data, ["criteria", name], lambda loc: keys_at(criterion_type, loc)
        )
    if bare:  # a bare threshold is reported where it was written, not at '.threshold'
        problems = [Problem(p.file, path, p.message) for p in problems]
    return None, problems


def _declared_custom_names(data: Mapping[str, Any]) -> list[str]:
    """The metric names declared under ``custom_metrics`` (either spelling), valid or not."""
    raw = data.get("custom_metrics", data.get("customMetrics"))
    return [str(name) for name in raw] if isinstance(raw, dict) else []


class EvalConfig(AssayModel):
    """What to score: ``criteria`` (metric name -> threshold or criterion) and related settings."""

    criteria: dict[str, SerializeAsAny[BaseCriterion]] = Field(default_factory=dict)
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: UserSimulatorConfig | None = None
    live_model_config: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _validate_each_criterion(cls, data: Any) -> Any:
        # A model validator, not a field one: the criteria may name metrics declared under
        # 'custom_metrics', which comes after 'criteria'.
        if not isinstance(data, dict) or not isinstance(data.get("criteria"), dict):
            return data
        custom = _declared_custom_names(data)
        out: dict[str, BaseCriterion] = {}
        problems: list[Problem] = []
        for name, entry in data["criteria"].items():
            criterion, found = _criterion_problems(str(name), entry, custom, "<config>")
            problems.extend(found)
            if criterion is not None:
                out[str(name)] = criterion
        if problems:
            raise ValueError("; ".join(f"{p.path}: {p.message}" for p in problems))
        return {**data, "criteria": out}

    def criterion(self, metric_name: str) -> BaseCriterion:
        """The criterion configured for a metric."""
        return self.criteria[metric_name]


DEFAULT_CONFIG_DATA: Mapping[str, Any] = {"criteria": dict(DEFAULT_CRITERIA)}


def default_config() -> EvalConfig:
    """ADK's default: ``tool_trajectory_avg_score`` 1.0 and ``response_match_score`` 0.8."""
    return EvalConfig.model_validate(DEFAULT_CONFIG_DATA)


_CUSTOM = TypeAdapter(dict[str, CustomMetricConfig])


def parse_config(data: Any, file: str = "<config>") -> EvalConfig:
    """Validate config data, reporting every problem with its JSON path."""
    if not isinstance(data, dict):
        raise ConfigError(
            [Problem(file, "", f"expected an object with 'criteria'; got {type_name(data)}")]
        )
    problems: list[Problem] = []
    custom: dict[str, CustomMetricConfig] = {}
    raw_custom = data.get("custom_metrics", data.get("customMetrics"))
    if raw_custom is not None:
        try:
            custom = _CUSTOM.validate_python(raw_custom)
        except ValidationError as exc:
            problems += problems_from_validation(
                exc,
                file,
                raw_custom,
                ["custom_metrics"],
                lambda loc: keys_at(dict[str, CustomMetricConfig], loc),
            )
    raw_criteria = data.get("criteria", {})
    criteria: dict[str, BaseCriterion] = {}
    if isinstance(raw_criteria, dict):
        declared = _declared_custom_names(data)  # an invalid declaration is reported once
        for name, entry in raw_criteria.items():
            criterion, found = _criterion_problems(str(name), entry, declared, file)
            problems += found
            if criterion is not None:
                criteria[str(name)] = criterion
    rest = {
        k: v for k, v in data.items() if k not in {"criteria", "custom_metrics", "customMetrics"}
    }
    try:
        config = EvalConfig.model_validate(
            {**rest, "criteria": {}, "custom_metrics": raw_custom and custom}
        )
    except ValidationError as exc:
        problems += problems_from_validation(
            exc, file, data, known_keys=lambda loc: keys_at(EvalConfig, loc)
        )
        config = None
    if not isinstance(raw_criteria, dict):
        problems.append(
            Problem(
                file,
                "criteria",
                f"expected an object mapping metric names to criteria; got {type_name(raw_criteria)}",
            )
        )
    if problems or config is None:
        raise ConfigError(problems)
    return config.model_copy(update={"criteria": criteria})


def load_config(path: str | Path) -> EvalConfig:
    """Load an EvalConfig from a JSON or YAML file, or raise :class:`ConfigError`."""
    path = Path(path)
    return parse_config(load_data(path, ConfigError), str(path))
