"""The criteria of ADK 2.13's metrics: a threshold, and what each metric's evaluator reads.

Each metric's entry in a config's ``criteria`` is validated as the model ADK's evaluator for that
metric validates it as (:data:`CRITERION_TYPES`). Keys a metric does not read are kept, as ADK
keeps them (:attr:`BaseCriterion.ignored_keys`); :mod:`assay.config` warns about each.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic_core import to_jsonable_python

from assay.errors import short_value
from assay.evalset._base import AssayModel
from assay.evalset.rubric import Rubric

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
    """A threshold: a metric passes when its score is ``>=`` it.

    Keys the metric does not know load, as in ADK, and are written back out unchanged
    (:attr:`ignored_keys`); a criterion written as a bare number is written back as one."""

    threshold: float
    include_intermediate_responses_in_final: bool = False

    _bare: bool = PrivateAttr(default=False)
    _ignored: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def ignored_keys(self) -> Mapping[str, Any]:
        """The keys of the criterion as written that its metric does not know, with their
        values: ADK keeps them and ignores them, and so does assay."""
        return self._ignored

    @property
    def written_bare(self) -> bool:
        """Whether the config gave this criterion as a bare threshold, and it is unchanged."""
        return self._bare and not self._ignored and self.model_fields_set <= {"threshold"}

    @model_serializer(mode="wrap")
    def _with_ignored_keys(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        data = handler(self)
        if self._ignored and isinstance(data, dict):
            kept = copy.deepcopy(self._ignored)
            if info.mode_is_json():
                kept = to_jsonable_python(kept)
            data.update({key: value for key, value in kept.items() if key not in data})
        return data


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


class CriterionTypes(Mapping[str, type[BaseCriterion]]):
    """Metric name -> the criterion model its config entry is validated as.

    It holds ADK 2.13's metrics (:data:`ADK_CRITERION_TYPES`) and the metrics registered since
    (:func:`assay.metrics.registry.register_metric` adds each from its declaration), so a config
    may name a metric of one's own; the config itself knows no metric module."""

    def __init__(self, builtin: Mapping[str, type[BaseCriterion]]) -> None:
        self._builtin = dict(builtin)
        self._types = dict(builtin)

    def __getitem__(self, name: str) -> type[BaseCriterion]:
        return self._types[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def add(self, name: str, kind: type[BaseCriterion]) -> None:
        """Let configs name the metric ``name``, validated as ``kind``; ADK's own names, and the
        informational ones, cannot be redefined."""
        if name in self._builtin or name in INFORMATIONAL_METRICS:
            raise ValueError(f"'{name}' is one of ADK's metrics; give the metric another name")
        if kind not in {*self._builtin.values(), BaseCriterion}:
            known = ", ".join(sorted({t.__name__ for t in self._builtin.values()}))
            raise ValueError(f"a criterion must be one of the config's models ({known})")
        self._types[name] = kind

    def remove(self, name: str) -> None:
        """Forget a metric added with :meth:`add` (ADK's own stay)."""
        if name not in self._builtin:
            self._types.pop(name, None)


ADK_CRITERION_TYPES: Mapping[str, type[BaseCriterion]] = {
    "tool_trajectory_avg_score": ToolTrajectoryCriterion,
    "response_match_score": BaseCriterion,
    "response_evaluation_score": BaseCriterion,
    "safety_v1": BaseCriterion,
    "final_response_match_v2": LlmAsAJudgeCriterion,
    "rubric_based_final_response_quality_v1": RubricsBasedCriterion,
    "rubric_based_tool_use_quality_v1": RubricsBasedCriterion,
    "hallucinations_v1": HallucinationsCriterion,
    "per_turn_user_simulator_quality_v1": LlmBackedUserSimulatorCriterion,
    # ADK 2.13's multi-turn metrics: scored by the judge, or by Vertex AI when opted in.
    "multi_turn_task_success_v1": BaseCriterion,
    "multi_turn_trajectory_quality_v1": BaseCriterion,
    "multi_turn_tool_use_quality_v1": BaseCriterion,
    "rubric_based_multi_turn_trajectory_quality_v1": RubricsBasedCriterion,
}
"""ADK 2.13's metrics, and the criterion model each one's entry is validated against."""


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

CRITERION_TYPES = CriterionTypes(ADK_CRITERION_TYPES)
"""Every metric a config may name, and the criterion model its entry is validated against:
ADK's, then those registered (:class:`CriterionTypes`)."""
