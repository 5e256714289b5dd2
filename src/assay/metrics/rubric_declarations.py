"""What the two single-turn rubric criteria are, declared beside their classes in
:mod:`assay.metrics.rubrics` (kept apart only so that module stays within the size rule)."""

from __future__ import annotations

from assay.config import RubricsBasedCriterion
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.rubrics import (
    FINAL_RESPONSE_QUALITY,
    TOOL_USE_QUALITY,
    RubricFinalResponseQualityMetric,
    RubricMetricBase,
    RubricToolUseQualityMetric,
)


def _rubric_declaration(metric: type[RubricMetricBase], rubric_type: str) -> MetricDeclaration:
    return MetricDeclaration(
        metric,
        criterion=RubricsBasedCriterion,
        prompts="rubrics",
        labelling=Labelling(
            labels=("yes", "no"),
            field="verdict",
            positive=("yes",),
            unit="rubric",
            rubric_type=rubric_type,
            prompts=("one_rubric_per_call",),
        ),
    )


FINAL_RESPONSE = _rubric_declaration(RubricFinalResponseQualityMetric, FINAL_RESPONSE_QUALITY)
"""What ``rubric_based_final_response_quality_v1`` is."""
TOOL_USE = _rubric_declaration(RubricToolUseQualityMetric, TOOL_USE_QUALITY)
"""What ``rubric_based_tool_use_quality_v1`` is."""
