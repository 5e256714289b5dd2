"""Results in ADK's ``EvalSetResult`` JSON shape, plus an ``assay`` section ADK ignores.

google-adk 2.13.0's ``EvalSetResult`` model loads these files as they are: the reasons a metric
was not evaluated, timings and the run summary go in ``assay`` keys at the case and set level,
where ADK's models ignore unknown keys (its metric-level models forbid them, so nothing is added
there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, field_serializer

from assay.evalset._base import AssayModel
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import RubricScore
from assay.llm.base import TokenUsage
from assay.metrics.base import EvalStatus
from assay.metrics.notes import MetricNotes


class EvalMetricResultDetails(AssayModel):
    """Per-metric details: rubric verdicts and efficiency breakdowns."""

    rubric_scores: list[RubricScore] | None = None
    token_usage_details: dict[str, Any] | None = None
    duration_details: dict[str, Any] | None = None


class EvalMetricResult(AssayModel):
    """One metric's score and status (for a case, or for one invocation)."""

    metric_name: str
    threshold: float | None = None
    criterion: dict[str, Any] | None = None
    custom_function_path: str | None = None
    score: float | None = None
    eval_status: EvalStatus
    details: EvalMetricResultDetails = Field(default_factory=EvalMetricResultDetails)


def trusted_row(
    metric_name: str,
    threshold: float | None,
    criterion: dict[str, Any] | None,
    custom_function_path: str | None,
    score: float | None,
    eval_status: EvalStatus,
    details: EvalMetricResultDetails,
) -> EvalMetricResult:
    """An :class:`EvalMetricResult` of values assay made itself, each already of its field's
    type, built without validation: what ``model_construct`` gives with every field passed, in
    a tenth of its time (a run of 5,000 cases makes some 120,000 rows)."""
    row = _new(EvalMetricResult)
    _set(
        row,
        "__dict__",
        {
            "metric_name": metric_name,
            "threshold": threshold,
            "criterion": criterion,
            "custom_function_path": custom_function_path,
            "score": score,
            "eval_status": eval_status,
            "details": details,
        },
    )
    _set(row, "__pydantic_fields_set__", set(_ROW_FIELDS))
    _set(row, "__pydantic_extra__", None)
    _set(row, "__pydantic_private__", None)
    return row


_new = object.__new__
_set = object.__setattr__
_ROW_FIELDS = frozenset(EvalMetricResult.model_fields)


def trusted_breakdowns(breakdowns: dict[str, dict[str, Any]]) -> EvalMetricResultDetails:
    """The :class:`EvalMetricResultDetails` that validating ``{"rubric_scores": None,
    **breakdowns}`` gives, built without validation: ``breakdowns`` holds only
    ``token_usage_details`` and ``duration_details``, each a dict with string keys (which the
    details share instead of copying). Some 40,000 rows of a 5,000-case run have them."""
    details = _new(EvalMetricResultDetails)
    _set(
        details,
        "__dict__",
        {
            "rubric_scores": None,
            "token_usage_details": breakdowns.get("token_usage_details"),
            "duration_details": breakdowns.get("duration_details"),
        },
    )
    _set(details, "__pydantic_fields_set__", {"rubric_scores", *breakdowns})
    _set(details, "__pydantic_extra__", None)
    _set(details, "__pydantic_private__", None)
    return details


class EvalMetricResultPerInvocation(AssayModel):
    """Every metric's result on one actual invocation, beside the expected one."""

    actual_invocation: Invocation
    expected_invocation: Invocation | None = None
    eval_metric_results: list[EvalMetricResult] = Field(default_factory=list)


class CaseNotes(AssayModel):
    """assay's additions to a case result: why metrics were not evaluated, and timing."""

    reason: str | None = None
    metric_reasons: dict[str, str] = Field(default_factory=dict)
    not_applicable: list[str] = Field(default_factory=list)
    """Metrics that do not apply to this kind of case (NOT_EVALUATED in ADK's fields, and
    not counted against the run)."""
    run: int = 1
    """Which run of the case this is (``--num-runs``)."""
    simulator_usage: TokenUsage | None = None
    """The simulated user's LLM calls and tokens, for a ``conversation_scenario`` case."""
    duration_s: float = 0.0
    metrics: dict[str, MetricNotes] = Field(default_factory=dict)


class EvalCaseResult(AssayModel):
    """A case's verdict: final status, each metric overall and per invocation."""

    eval_set_file: str | None = None
    eval_set_id: str = ""
    eval_id: str = ""
    final_eval_status: EvalStatus
    eval_metric_results: list[Any] | None = None
    overall_eval_metric_results: list[EvalMetricResult] = Field(default_factory=list)
    eval_metric_result_per_invocation: list[EvalMetricResultPerInvocation] = Field(
        default_factory=list
    )
    session_id: str = ""
    session_details: dict[str, Any] | None = None
    user_id: str | None = None
    assay: CaseNotes = Field(default_factory=CaseNotes)

    def unevaluated_metrics(self) -> list[str]:
        """The configured metrics that apply to this case and have no verdict (informational
        metrics and those in ``assay.not_applicable`` do not count)."""
        return [
            row.metric_name
            for row in self.overall_eval_metric_results
            if row.eval_status is EvalStatus.NOT_EVALUATED
            and row.metric_name not in self.assay.not_applicable
        ]

    def passed_cleanly(self) -> bool:
        """PASSED, with every applicable metric evaluated: what a CI gate counts as passed."""
        return self.final_eval_status is EvalStatus.PASSED and not self.unevaluated_metrics()


class RunSummary(AssayModel):
    """How many cases passed, failed and were not evaluated."""

    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0

    @property
    def total(self) -> int:
        """All cases."""
        return self.passed + self.failed + self.not_evaluated


def summarize(results: Sequence[EvalCaseResult]) -> RunSummary:
    """Count passed, failed and not-evaluated cases."""
    statuses = [r.final_eval_status for r in results]
    return RunSummary(
        passed=statuses.count(EvalStatus.PASSED),
        failed=statuses.count(EvalStatus.FAILED),
        not_evaluated=len(statuses)
        - statuses.count(EvalStatus.PASSED)
        - statuses.count(EvalStatus.FAILED),
    )


SIMULATOR = "user_simulator"
"""The name the simulated user's LLM calls are counted under, beside the judged metrics'
(in :attr:`SetNotes.judges` and :attr:`SetNotes.usage`)."""


FEW_AGREEMENT_LABELS = 20
"""A judge card from fewer labels is shown with its interval and "too few labels", never as a
bare percentage, and never displaces a card from more labels."""


class JudgeAgreement(AssayModel):
    """How far a judge agrees with people on a criterion, as the newest judge card of that judge
    model, criterion and prompt version measured it (``assay judge agree``)."""

    labels: int
    """People's labels the card was measured on."""
    judged: int
    """Of those, the units the judge gave a label for."""
    agreement: float | None = None
    """The share of labels the judge gave too (a unit it gave no label for disagrees)."""
    kappa: float | None = None
    """Cohen's kappa over the judged units; None when undefined (one label throughout)."""
    kappa_interval: tuple[float, float] | None = None
    person_positive_rate: float | None = None
    judge_positive_rate: float | None = None
    prompt_version: str
    card_date: str
    """When the card was measured, ISO 8601 in UTC (``2026-03-01T12:00:00Z``)."""
    labels_file: str | None = None
    labels_sha256: str | None = None
    bundled: bool = False
    """The card shipped with assay (the embedded judge measured on the test half of
    ``benchmarks/judge_agreement``), not one from the run history."""

    @property
    def few(self) -> bool:
        """Measured on fewer than :data:`FEW_AGREEMENT_LABELS` labels: too few to tell."""
        return self.labels < FEW_AGREEMENT_LABELS


class JudgeInfo(AssayModel):
    """Which LLM judged a metric (or played the simulated user) and why it was chosen, or why
    the metric had no judge.

    ``model`` is the model string as chosen (``local:``, ``openai:gpt-4o-mini``), ``source``
    where it came from (``--judge-model``, ``ASSAY_JUDGE_MODEL``, ``config``, ``default``,
    ``embedded``), ``backend`` the kind of backend that served it (``local``, ``openai``, ...),
    ``judge_model`` the string written into the metric's criteria in the ADK fields
    (``local:qwen2.5-coder-1.5b`` for ``local:``) and ``description`` the judge in words, with
    why it was chosen. Results written before these fields existed have only the first three.

    ``prompt_version`` names the judge's prompt and the options that change its verdicts
    (:func:`~assay.agreement.cards.prompt_version`), and ``agreement`` is how far this judge,
    with that prompt, agrees with people (the newest matching judge card); None when it was
    never measured. Results written before judge cards have neither. ``profile`` says how a
    judge profile decided the verdicts, where one did.
    """

    model: str | None = None
    source: str | None = None
    unavailable: str | None = None
    backend: str | None = None
    judge_model: str | None = None
    description: str | None = None
    prompt_version: str | None = None
    agreement: JudgeAgreement | None = None
    other_prompt_version: str | None = None
    """Where ``agreement`` is None because the judge's agreement was measured for another
    prompt version of this criterion (the embedded judge's bundled card, measured for the
    default prompt, not this configuration): that prompt version."""
    profile: str | None = None
    """How a judge profile decided this metric's verdicts, in words (``verdicts re-decided by the
    embedded judge's calibration (fitted to people's labels): "valid" needs the judge's P(valid)
    >= 0.84; ...``); None without one. Each sample keeps the judge's own answer beside the
    decision (:class:`~assay.metrics.notes.Alignment`)."""

    def describe(self) -> str | None:
        """The judge in words (``description``, or, for results written without one, made from
        ``model`` and ``source``); None when there was no judge."""
        if self.model is None:
            return None
        if self.description:
            return self.description
        from assay.llm.selection import JudgeChoice, describe_judge  # only for older results

        return describe_judge(JudgeChoice(self.model, self.source or ""))


class SetNotes(AssayModel):
    """assay's additions to an eval-set result: provenance, config, summary, timing, the judges
    and the tokens they used."""

    version: str
    eval_set_path: str | None = None
    config_source: str = "defaults"
    criteria: dict[str, Any] = Field(default_factory=dict)
    summary: RunSummary = Field(default_factory=RunSummary)
    duration_s: float = 0.0
    warnings: list[str] = Field(default_factory=list)
    judges: dict[str, JudgeInfo] = Field(default_factory=dict)
    usage: dict[str, TokenUsage] = Field(default_factory=dict)
    cost_usd: dict[str, float] = Field(default_factory=dict)
    """US dollars each metric's judge calls cost (beside :attr:`usage`), for the metrics whose
    judge's price was known (:mod:`assay.llm.prices`); empty in results written before."""
    max_cost_usd: float | None = None
    """The run's ``--max-cost``, when it had one."""


class EvalSetResult(AssayModel):
    """All case results of one eval set in one run."""

    eval_set_result_id: str
    eval_set_result_name: str | None = None
    eval_set_id: str
    eval_case_results: Sequence[EvalCaseResult] = Field(default_factory=list)
    """The case results in eval-set order: a list, or for a large run a sequence that reads
    them back from disk on each pass (:class:`~assay.results.collected.CaseResults`)."""
    creation_timestamp: float = 0.0
    assay: SetNotes | None = None

    @field_serializer("eval_case_results", mode="wrap")
    def _every_case(
        self, cases: Sequence[EvalCaseResult], serialize: SerializerFunctionWrapHandler
    ) -> Any:
        """A sequence read back from disk is dumped as the list it reads as (the results file
        is written a case at a time instead: :mod:`assay.results.output`)."""
        return serialize(cases if isinstance(cases, list) else list(cases))
