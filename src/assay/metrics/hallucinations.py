"""``hallucinations_v1``: is every sentence of the agent's answers backed by what the agent knew?

Scores are those of google-adk 2.13.0's ``HallucinationsV1Evaluator``:

* **Steps.** Each actual invocation gives one step for its final response text and, when
  ``evaluate_intermediate_nl_responses`` is set, one step per text part of each intermediate
  event (in order). A step's *context* is the agents' developer instructions, the user prompt,
  the tool declarations, the grounding metadata, then the text, tool calls and tool outputs of
  the events before it (all of them for the final response).
* **Two judge calls per step**: a segmenter splits the text into sentences, then a validator
  labels each sentence against the context. ``num_samples`` is ignored, as in ADK: one call each.
* **Scores.** ``supported`` and ``not_applicable`` count 1, ``unsupported``, ``contradictory``
  and ``disputed`` count 0, any other label is ignored. A step scores the mean of its sentences,
  an invocation the mean of its scored steps, the case the mean of its scored invocations
  (``statistics.mean`` at every level, as ADK, so floats agree to the last bit).

For the events shape the context has ADK's sections with ADK's content (compact JSON, stable
sections first: see :func:`build_context`), which ``tests/metrics/test_hallucinations.py`` checks
against ADK itself. Steps and invocations are
judged concurrently; a criterion's ``parallelism_limit``, when the config sets it, caps the
calls of a whole case (ADK makes them one at a time).

Departures from ADK:

* With ADK's static intermediate-data shape (``tool_uses`` / ``tool_responses`` /
  ``intermediate_responses``), ADK builds no context from the tool calls, so the judge never sees
  the tool outputs and labels true statements ``unsupported``. Here they are context: the tool
  calls and outputs first (the static shape does not say when they happened), then each
  intermediate response as an event of its own.
* A step whose judge call fails or whose answer cannot be parsed is skipped, as in ADK, but the
  reason is recorded (ADK drops it silently); an invocation with no scored step is NOT_EVALUATED
  with those reasons.

The judge is asked for JSON (:mod:`assay.metrics.prompts.hallucinations`); ADK's own answer
formats (``<sentence>`` tags; five-line ``sentence:`` / ``label:`` blocks) are read too.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

import pydantic_core

from assay.config import HallucinationsCriterion
from assay.evalset.case import EvalCase
from assay.evalset.content import FunctionCall, FunctionResponse, JsonObject, Part, content_text
from assay.evalset.invocation import AppDetails, Invocation, InvocationEvents
from assay.llm.base import LlmRequest, TokenUsage
from assay.llm.judge import Judge
from assay.metrics.base import (
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    paired_expected,
    status_for,
)
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import (
    Parsed,
    SampleOutcome,
    ask_samples,
    gather_in_order,
    json_objects,
    judge_request,
    sample_limit,
)
from assay.metrics.notes import InvocationNotes, JudgeSample, MetricNotes
from assay.metrics.prompts import hallucinations as prompts

POSITIVE_LABELS = frozenset({"supported", "not_applicable"})
"""Labels that count 1."""
NEGATIVE_LABELS = frozenset({"unsupported", "contradictory", "disputed"})
"""Labels that count 0."""

StepKind = Literal["intermediate", "final"]
T = TypeVar("T")

# --------------------------------------------------------------------------- steps and context


@dataclass(frozen=True)
class Step:
    """One text to check and the context it is checked against."""

    kind: StepKind
    text: str
    context: str


@dataclass(frozen=True)
class _Event:
    """An intermediate event as the context sees it (either intermediate-data shape)."""

    parts: Sequence[Part] = ()
    grounding: JsonObject | None = None
    author: str | None = None


def _events(invocation: Invocation) -> list[_Event]:
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, InvocationEvents):
        return [
            _Event(
                parts=(event.content.parts or []) if event.content is not None else [],
                grounding=event.grounding_metadata,
                author=event.author,
            )
            for event in data.invocation_events
        ]
    tool_parts = [Part(function_call=call) for call in data.tool_uses]
    tool_parts += [Part(function_response=response) for response in data.tool_responses]
    events = [_Event(parts=tool_parts)] if tool_parts else []
    events += [_Event(parts=parts, author=author) for author, parts in data.intermediate_responses]
    return events


def _developer_instructions(app: AppDetails | None) -> str:
    if app is None:
        return ""
    return "\n\n".join(
        f"{name}:\n{agent.instructions}"
        for name, agent in app.agent_details.items()
        if agent.instructions
    )


def _tool_declarations(app: AppDetails | None) -> str:
    if app is None:
        return "Agent has no tools."
    by_agent = {name: agent.tool_declarations for name, agent in app.agent_details.items()}
    return pydantic_core.to_json({"tool_declarations": by_agent}).decode()


def _grounding(events: Sequence[_Event]) -> str:
    entries: list[dict[str, Any]] = []
    for step, event in enumerate(events):
        if event.grounding is not None:
            entry: dict[str, Any] = {"step": step}
            if event.author is not None:
                entry["author"] = event.author
            entry["grounding_metadata"] = event.grounding
            entries.append(entry)
    if not entries:
        return "No grounding metadata was provided."
    return pydantic_core.to_json({"grounding_metadata": entries}).decode()


# Key order of google-genai's models, so the JSON the judge reads is the JSON ADK sends.
_CALL_KEYS = ("id", "args", "name", "partial_args", "will_continue")
_RESPONSE_KEYS = ("will_continue", "scheduling", "parts", "id", "name", "response")


def _dump(item: FunctionCall | FunctionResponse, keys: Sequence[str]) -> dict[str, Any]:
    dumped = item.model_dump(exclude_none=True)
    return {key: dumped[key] for key in keys if key in dumped}


def _event_lines(event: _Event) -> list[str]:
    texts = [part.text for part in event.parts if part.text]
    calls = [_dump(p.function_call, _CALL_KEYS) for p in event.parts if p.function_call]
    outputs = [
        _dump(p.function_response, _RESPONSE_KEYS) for p in event.parts if p.function_response
    ]
    lines = []
    if texts:
        lines.append("\n".join(texts) + "\n")
    if calls:
        lines += ["tool_calls:", json.dumps(calls) + "\n"]
    if outputs:
        lines += ["tool_outputs:", json.dumps(outputs) + "\n"]
    return lines


def build_context(invocation: Invocation, events: Sequence[_Event]) -> str:
    """The context a step is checked against: instructions, tool declarations, grounding
    metadata and user prompt, then each earlier event's text, tool calls and tool outputs.

    ADK's sections with ADK's content, in an order of our own: what is the same for every case
    of an agent (its instructions and tools) comes first, so a local judge's prompt cache reuses
    it from case to case, and JSON is written compact (ADK indents it, which cost the embedded
    judge about a quarter of its prompt tokens in whitespace)."""
    app = invocation.app_details
    lines = [
        f"Developer instructions:\n{_developer_instructions(app)}\n",
        "Tool definitions:",
        f"{_tool_declarations(app)}\n",
        "Grounding metadata:",
        f"{_grounding(events)}\n",
        f"User prompt:\n{content_text(invocation.user_content)}\n",
    ]
    for event in events:
        lines += _event_lines(event)
    return "\n".join(lines)


def steps_for(invocation: Invocation, *, intermediate: bool) -> list[Step]:
    """The texts of one invocation to check, in order, each with its context."""
    events = _events(invocation)
    steps: list[Step] = []
    if intermediate:
        earlier: list[_Event] = []
        for event in events:
            texts = [part.text for part in event.parts if part.text]
            if texts:
                # An event's own grounding metadata is context for its own text.
                seen = [*earlier, _Event(grounding=event.grounding, author=event.author)]
                context = build_context(
                    invocation, seen if event.grounding is not None else earlier
                )
                steps += [Step("intermediate", text, context) for text in texts]
            earlier.append(event)
    final_text = content_text(invocation.final_response)
    if final_text:
        steps.append(Step("final", final_text, build_context(invocation, events)))
    return steps


# --------------------------------------------------------------------------- parsing


_SENTENCE_TAG = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
# ADK's validator format: five fields, in this order, each on its own line; a block runs to the
# next line that starts with ``sentence:`` or to the end. The field names ignore case.
_LABEL_BLOCK = re.compile(
    r"sentence:(?P<sentence>.*?)\nlabel:(?P<label>.*?)\nrationale:(?P<rationale>.*?)"
    r"\nsupporting_excerpt:(?P<supporting>.*?)\ncontradicting_excerpt:(?P<contradicting>.*?)"
    r"(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)


@dataclass(frozen=True)
class SentenceLabel:
    """The validator's verdict on one sentence."""

    sentence: str
    label: str
    rationale: str = ""
    supporting_excerpt: str | None = None
    contradicting_excerpt: str | None = None


def _sentences_field(value: dict[str, Any]) -> list[Any] | None:
    items = value.get("sentences")
    return items if isinstance(items, list) else None


def parse_sentences(text: str) -> Parsed[list[str]]:
    """The segmenter's sentences: our JSON (``{"sentences": [...]}``) or ADK's
    ``<sentence>...</sentence>`` tags (kept verbatim)."""
    for value in json_objects(text):
        items = _sentences_field(value)
        if items is not None and all(isinstance(item, str) for item in items):
            return Parsed(items)
    tagged: list[str] = _SENTENCE_TAG.findall(text)
    if tagged:
        return Parsed(tagged)
    return Parsed(None, "no sentences found in the segmenter's answer")


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else "" if value is None else json.dumps(value)


def _excerpt(value: Any) -> str | None:
    text = _text(value)
    return None if not text or text.lower() == "null" else text


def _from_json(item: Any) -> SentenceLabel | None:
    if not isinstance(item, dict):
        return None
    return SentenceLabel(
        sentence=_text(item.get("sentence")),
        label=_text(item.get("label")),
        rationale=_text(item.get("rationale")),
        supporting_excerpt=_excerpt(item.get("supporting_excerpt")),
        contradicting_excerpt=_excerpt(item.get("contradicting_excerpt")),
    )


def parse_labels(text: str) -> Parsed[list[SentenceLabel]]:
    """The validator's labels: our JSON, or ADK's five-line blocks (``null`` excerpts -> None)."""
    for value in json_objects(text):
        items = _sentences_field(value)
        if items is not None:
            return _scored([label for item in items if (label := _from_json(item)) is not None])
    blocks = [
        SentenceLabel(
            sentence=match["sentence"].strip(),
            label=match["label"].strip(),
            rationale=match["rationale"].strip(),
            supporting_excerpt=_excerpt(match["supporting"]),
            contradicting_excerpt=_excerpt(match["contradicting"]),
        )
        for match in _LABEL_BLOCK.finditer(text.strip())
    ]
    if blocks:
        return _scored(blocks)
    return Parsed(None, "no sentence labels found in the validator's answer")


def _scored(labels: list[SentenceLabel]) -> Parsed[list[SentenceLabel]]:
    score = step_score(labels)
    return Parsed(labels, "no sentence got a known label" if score is None else None, score=score)


def label_score(label: str) -> int | None:
    """1 for a positive label, 0 for a negative one, None for anything else (ignored)."""
    normalised = label.strip().lower()
    if normalised in POSITIVE_LABELS:
        return 1
    if normalised in NEGATIVE_LABELS:
        return 0
    return None


def step_score(labels: Sequence[SentenceLabel]) -> float | None:
    """The mean of the sentences' scores; None when no sentence has a known label."""
    scores = [s for label in labels if (s := label_score(label.label)) is not None]
    return float(statistics.mean(scores)) if scores else None


# --------------------------------------------------------------------------- the metric


@dataclass
class _StepOutcome:
    step: Step
    score: float | None = None
    reason: str | None = None
    labels: list[SentenceLabel] = field(default_factory=list)
    calls: list[SampleOutcome[Any]] = field(default_factory=list)


@dataclass
class _InvocationOutcome:
    result: PerInvocationResult
    notes: InvocationNotes
    usage: TokenUsage


def _call_reason(role: str, outcome: SampleOutcome[Any]) -> str | None:
    if outcome.note.error is not None:
        return f"{role} call failed: {outcome.note.error}"
    if outcome.value is None:
        return outcome.note.reason or f"the {role}'s answer could not be read"
    return None


async def _ask_once(
    judge: Judge,
    request: LlmRequest,
    case_id: str,
    parse: Callable[[str], Parsed[T]],
    semaphore: asyncio.Semaphore | None,
) -> SampleOutcome[T]:
    # One call: ADK ignores num_samples for this metric.
    outcomes = await ask_samples(
        judge, request, num_samples=1, case_id=case_id, parse=parse, semaphore=semaphore
    )
    return outcomes[0]


class HallucinationsMetric:
    """Scores the share of the agent's sentences its context supports (or that need none)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="hallucinations_v1",
        description=(
            "Share of the response's sentences that an LLM judge finds supported by the "
            "context (instructions, user prompt, tool outputs) or that state no fact."
        ),
        needs_judge=True,
    )

    def __init__(self, criterion: HallucinationsCriterion, judge: Judge) -> None:
        self.criterion = criterion
        self.judge = judge

    def steps(self, invocation: Invocation) -> list[Step]:
        """The texts of ``invocation`` this metric checks, each with its context."""
        return steps_for(invocation, intermediate=self.criterion.evaluate_intermediate_nl_responses)

    def segmenter_request(self, text: str) -> LlmRequest:
        """The request that splits ``text`` into sentences."""
        return judge_request(
            self.criterion,
            system=prompts.SEGMENTER_INSTRUCTIONS,
            user=prompts.segmenter_input(text),
            schema=prompts.SEGMENTER_SCHEMA,
            schema_name="sentences",
        )

    def validator_request(self, context: str, sentences: Sequence[str]) -> LlmRequest:
        """The request that labels ``sentences`` against ``context``."""
        return judge_request(
            self.criterion,
            system=prompts.VALIDATOR_INSTRUCTIONS,
            user=prompts.validator_input(context, sentences),
            schema=prompts.validator_schema(sentences),
            schema_name="sentence_labels",
        )

    async def _check_step(
        self, step: Step, case_id: str, semaphore: asyncio.Semaphore | None
    ) -> _StepOutcome:
        out = _StepOutcome(step)
        request = self.segmenter_request(step.text)
        segmented = await _ask_once(self.judge, request, case_id, parse_sentences, semaphore)
        out.calls.append(segmented)
        out.reason = _call_reason("segmenter", segmented)
        if out.reason is not None:
            return out
        sentences: list[str] = segmented.value or []
        if not sentences:
            out.reason = "the segmenter found no sentences"
            return out
        request = self.validator_request(step.context, sentences)
        validated = await _ask_once(self.judge, request, case_id, parse_labels, semaphore)
        out.calls.append(validated)
        out.reason = _call_reason("validator", validated)
        if out.reason is not None:
            return out
        out.labels = validated.value or []
        out.score = validated.note.counted_score
        if out.score is None:
            out.reason = validated.note.reason or "no sentence got a known label"
        return out

    async def _check_invocation(
        self,
        invocation: Invocation,
        expected: Invocation | None,
        case_id: str,
        semaphore: asyncio.Semaphore | None,
    ) -> _InvocationOutcome:
        steps = self.steps(invocation)
        checked = await gather_in_order(
            [self._check_step(step, case_id, semaphore) for step in steps]
        )
        samples: list[JudgeSample] = []
        usage = TokenUsage()
        details: list[dict[str, Any]] = []
        for outcome in checked:
            first = len(samples)
            for call in outcome.calls:
                usage = usage + call.usage
                samples.append(call.note.model_copy(update={"sample": len(samples)}))
            details.append(_step_details(outcome, list(range(first, len(samples)))))
        scores = [outcome.score for outcome in checked if outcome.score is not None]
        score = float(statistics.mean(scores)) if scores else None
        reason = None if score is not None else _invocation_reason(self.criterion, checked)
        result = PerInvocationResult(
            invocation, expected, score, status_for(score, self.criterion.threshold)
        )
        notes = InvocationNotes(
            invocation_id=invocation.invocation_id,
            samples=samples,
            reason=reason,
            details={"steps": details},
        )
        return _InvocationOutcome(result, notes, usage)

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Check every invocation's texts (concurrently) and average the scores."""
        paired = paired_expected(actual, expected)
        limit = sample_limit(self.criterion)
        semaphore = asyncio.Semaphore(limit) if limit else None  # parallelism_limit, per case
        outcomes = await gather_in_order(
            [
                self._check_invocation(inv, paired[i] if paired else None, case.eval_id, semaphore)
                for i, inv in enumerate(actual)
            ]
        )
        usage = TokenUsage()
        for outcome in outcomes:
            usage = usage + outcome.usage
        notes = MetricNotes(
            judge_model=self.judge.model,
            judge_source=self.judge.source,
            usage=usage,
            per_invocation=[outcome.notes for outcome in outcomes],
        )
        per_invocation = [outcome.result for outcome in outcomes]
        scores = [r.score for r in per_invocation if r.score is not None]
        if not scores:
            return MetricResult(
                metric_name=self.info.name,
                criterion=self.criterion,
                per_invocation=per_invocation,
                reason=_case_reason(outcomes),
                notes=notes,
            )
        overall = float(statistics.mean(scores))
        return MetricResult(
            metric_name=self.info.name,
            criterion=self.criterion,
            score=overall,
            status=status_for(overall, self.criterion.threshold),
            per_invocation=per_invocation,
            notes=notes,
        )


def _step_details(outcome: _StepOutcome, calls: list[int]) -> dict[str, Any]:
    return {
        "kind": outcome.step.kind,
        "text": outcome.step.text,
        "sentences": [asdict(label) for label in outcome.labels],
        "score": outcome.score,
        "reason": outcome.reason,
        "calls": calls,
    }


def _invocation_reason(criterion: HallucinationsCriterion, checked: Sequence[_StepOutcome]) -> str:
    if not checked:
        if criterion.evaluate_intermediate_nl_responses:
            return "nothing to check: no final response text and no intermediate text"
        return "nothing to check: the invocation has no final response text"
    failures = "; ".join(
        f"step {i} ({o.step.kind} text): {o.reason}" for i, o in enumerate(checked, 1)
    )
    return f"no text could be scored ({failures})"


def _case_reason(outcomes: Sequence[_InvocationOutcome]) -> str:
    if not outcomes:
        return "the case has no invocations"
    first = outcomes[0].notes
    label = f"invocation 1 ({first.invocation_id})" if first.invocation_id else "invocation 1"
    return f"no invocation was scored; {label}: {first.reason}"


DECLARATION = MetricDeclaration(
    HallucinationsMetric,
    criterion=HallucinationsCriterion,
    prompts="hallucinations",
    labelling=Labelling(
        labels=("supported", "unsupported", "contradictory", "disputed", "not_applicable"),
        field="label",
        positive=("supported", "not_applicable"),
        unit="sentence",
        answer_labels=("grounded", "ungrounded"),
    ),
)
"""What ``hallucinations_v1`` is (:class:`~assay.metrics.declaration.MetricDeclaration`)."""
