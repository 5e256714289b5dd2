"""What a judged metric records beside its scores: which judge, every sample, the raw text.

ADK's metric-level result models forbid unknown keys, so these notes travel in the case result's
``assay`` section (``assay.metrics[<metric name>]``), where ADK ignores them. Reports read them to
show every judge sample's verdict and rationale, rubric tables and hallucination labels.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.evalset._base import AssayModel
from assay.llm.base import Choice, TokenUsage


class JudgeSample(AssayModel):
    """One judge call for one invocation.

    ``score`` is None when the call failed (``error``) or its text could not be parsed
    (``reason``); ``text`` is the judge's raw answer, kept whenever there is one. ``choices``
    are the answer's closed choices with the judge's probability of each option, where its
    backend gives them (what ``assay judge align`` fits a threshold on).
    """

    sample: int
    score: float | None = None
    verdict: str | None = None
    text: str | None = None
    reason: str | None = None
    error: str | None = None
    cached: bool = False
    choices: list[Choice] | None = None


class InvocationNotes(AssayModel):
    """A judged metric's record of one invocation: its samples, and metric-specific details
    (rubric verdicts, hallucination sentence labels) under ``details``."""

    invocation_id: str = ""
    samples: list[JudgeSample] = Field(default_factory=list)
    reason: str | None = None
    details: dict[str, Any] | None = None


class MetricNotes(AssayModel):
    """A judged metric's record of one case: the judge, its token usage, each invocation."""

    judge_model: str | None = None
    judge_source: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    per_invocation: list[InvocationNotes] = Field(default_factory=list)
