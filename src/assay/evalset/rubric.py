"""Rubrics: yes/no properties an LLM judge checks a response or a tool use against."""

from __future__ import annotations

from assay.evalset._base import AssayModel


class RubricContent(AssayModel):
    """What the rubric tests, as a sentence (``text_property``)."""

    text_property: str | None = None


class Rubric(AssayModel):
    """One rubric. ``type`` (``FINAL_RESPONSE_QUALITY``, ``TOOL_USE_QUALITY``) picks the metric."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class RubricScore(AssayModel):
    """A judge's verdict on one rubric: a score (1.0 yes, 0.0 no) and its rationale."""

    rubric_id: str
    rationale: str | None = None
    score: float | None = None
