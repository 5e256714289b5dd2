"""The rows of the HTML report (:mod:`assay.report.html`): what the page shows of each case, as
plain values. The page's templates read them, and :mod:`assay.report.case_json` turns an opened
case's body into the JSON the page's script builds it from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UsageRow:
    """Token usage of one LLM user (a judged metric, the simulator, the agent)."""

    who: str
    calls: str
    prompt_tokens: str
    completion_tokens: str
    cached: str


@dataclass(frozen=True)
class MetricRow:
    """A case's verdict on one metric."""

    name: str
    score: str
    threshold: str
    status: str
    note: str


@dataclass(frozen=True)
class CallRow:
    """One position of the trajectory: actual and expected call, and whether they agree."""

    actual: str | None
    expected: str | None
    match: bool


@dataclass(frozen=True)
class Turn:
    """One invocation: the user's message, the agent's steps and answer, the verdicts on it."""

    number: int
    invocation_id: str
    user: str
    agent: str
    expected: str | None
    steps: list[str]
    calls: list[CallRow]
    has_expected: bool
    verdicts: list[MetricRow]


@dataclass(frozen=True)
class Sample:
    """One judge call."""

    sample: int
    score: str
    verdict: str
    text: str
    problem: str
    cached: bool
    probability: str = ""
    """The judge's probability of its own verdict (``P(yes) 0.94``), where its backend gave one."""
    aligned: str = ""
    """Where a judge profile decided the verdict otherwise: what the judge said, the decision
    the metric counted and the rule, in words."""


@dataclass(frozen=True)
class JudgedInvocation:
    """A judged metric's record of one invocation."""

    invocation_id: str
    reason: str
    samples: list[Sample]
    rubrics: list[dict[str, Any]]
    sentences: list[dict[str, Any]]
    votes: str


@dataclass(frozen=True)
class Judged:
    """A judged metric's record of one case."""

    metric: str
    judge: str
    invocations: list[JudgedInvocation]


@dataclass(frozen=True)
class Case:
    """Everything the page shows of one case."""

    key: str
    eval_set_id: str
    eval_id: str
    run: int
    status: str
    reason: str
    duration: str
    search: str
    metrics: list[MetricRow]
    turns: list[Turn]
    judged: list[Judged]
    usage: list[UsageRow]
