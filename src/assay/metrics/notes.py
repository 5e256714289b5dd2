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


class AlignedChoice(AssayModel):
    """One closed choice of the judge's answer that a judge profile decided otherwise: where it
    sits (``is_the_agent_response_valid``, ``verdicts[1].verdict``), what the judge said there
    and its probability of that, and the option the profile's rule picked."""

    path: str
    judge_said: str
    probability: float
    decided: str


class Alignment(AssayModel):
    """How a judge profile decided a sample otherwise than the judge answered, and the rule, in
    plain words, that made it so. The metric counts this decision (``score``, ``verdict``); the
    sample's own fields keep what the judge said."""

    score: float | None = None
    verdict: str | None = None
    choices: list[AlignedChoice] = Field(default_factory=list)
    rule: str = ""
    """The rule in plain words (``the embedded judge's calibration asks P(yes) >= 0.96 on this
    criterion``)."""

    def words(self) -> str:
        """``judge said "yes" (P(yes) 0.94); aligned to "no": <rule>``, one clause per choice
        decided otherwise."""
        said = "; ".join(
            f'judge said "{c.judge_said}" (P({c.judge_said}) {c.probability:.2f})'
            f'{_where(c.path, len(self.choices))}; aligned to "{c.decided}"'
            for c in self.choices
        )
        return f"{said}: {self.rule}" if self.rule else said


def _where(path: str, count: int) -> str:
    """`` on verdicts[1]`` where an answer has several choices decided otherwise."""
    return f" on {path.rsplit('.', 1)[0]}" if count > 1 and "." in path else ""


class JudgeSample(AssayModel):
    """One judge call for one invocation.

    ``text``, ``verdict`` and ``score`` are the judge's own answer, as it wrote it, and
    ``probability`` its probability of that verdict where its backend gives one. ``score`` is
    None when the call failed (``error``) or its text could not be parsed (``reason``); ``text``
    is kept whenever there is one. ``choices`` are the answer's closed choices with the judge's
    probability of each option, where its backend gives them (what ``assay judge align`` fits a
    threshold on). ``aligned`` is set where a judge profile decided otherwise: the decision the
    metric counted and the rule (:attr:`counted_score`). Results written before ``aligned``
    existed hold the decided answer in ``text``.
    """

    sample: int
    score: float | None = None
    verdict: str | None = None
    probability: float | None = None
    text: str | None = None
    reason: str | None = None
    error: str | None = None
    cached: bool = False
    choices: list[Choice] | None = None
    aligned: Alignment | None = None

    @property
    def counted_score(self) -> float | None:
        """The score the metric counted: the profile's decision where it decided otherwise, else
        the judge's own."""
        return self.aligned.score if self.aligned is not None else self.score

    @property
    def counted_verdict(self) -> str | None:
        """The verdict the metric counted (as :attr:`counted_score`)."""
        return self.aligned.verdict if self.aligned is not None else self.verdict


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
