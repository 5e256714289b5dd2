"""``per_turn_user_simulator_quality_v1``: did the user simulator play its scenario well, turn by
turn? It judges the simulated user's messages, not the agent.

As in google-adk 2.13.0 (``PerTurnUserSimulatorQualityV1``):

* the case needs a ``conversation_scenario`` (a static conversation cannot be scored), and at
  least one invocation;
* turn 1 is checked without a judge: its user text, stripped, must equal the scenario's
  ``starting_prompt``, stripped (score 1 or 0, status by the threshold); a first message
  without parts is NOT_EVALUATED;
* every later turn is judged ``num_samples`` times (concurrently here, one after another in ADK)
  with the plan, the conversation before it and its user message; the samples vote (a tie is
  invalid; with no verdict at all the turn is NOT_EVALUATED);
* one more judged turn checks the ending: its "new message" is the criterion's ``stop_signal``
  and its history the whole conversation. If that check FAILS, its result replaces the last
  turn's (a missing or wrong ending is charged to the last turn);
* the case's score is the sum of the scores of the PASSED turns over the number of turns,
  NOT_EVALUATED ones included; the status follows the threshold;
* a judge call that fails leaves the whole metric NOT_EVALUATED for the case (ADK's evaluator
  raises and the eval service records NOT_EVALUATED), with the error as the reason.

The verdict is read from ``is_valid``: a JSON boolean, or ADK's labels (``true``/``valid``;
``false``/``invalid``/``almost``/``partially valid``), also in ADK's Python-style answers
(``"is_valid": True,``). As for ``final_response_match_v2``, a well-formed JSON object holding
the field is read as JSON before ADK's pattern is tried.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from assay.config import LlmBackedUserSimulatorCriterion
from assay.evalset.case import ConversationScenario, EvalCase, UserPersona
from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation
from assay.llm.judge import Judge
from assay.metrics.base import (
    EvalStatus,
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    not_evaluated,
    status_for,
)
from assay.metrics.declaration import Labelling, MetricDeclaration
from assay.metrics.judging import (
    Parsed,
    SampleOutcome,
    ask_samples,
    call_failure,
    gather_in_order,
    json_objects,
    judge_request,
    majority_index,
    sample_limit,
    total_usage,
)
from assay.metrics.notes import InvocationNotes, MetricNotes
from assay.metrics.prompts import simulator_quality as sq_prompt

NAME = "per_turn_user_simulator_quality_v1"
VERDICT_FIELD = "is_valid"
STOP_CHECK_ID = "stop_signal_check"
"""The notes' ``invocation_id`` of the ending check (it judges no invocation of its own)."""

NO_VERDICT = "no verdict found in the judge's answer"
NO_SCENARIO = (
    "needs the case's conversation_scenario (it judges a simulated user against its plan); "
    "this case has a static conversation"
)
NO_INVOCATIONS = (
    "the conversation has no invocations: there is no first user message to compare with the "
    "starting prompt"
)
NO_FIRST_MESSAGE = "the first user message has no parts to compare with the starting prompt"

_VALID_LABELS = frozenset({"valid", "true"})
_INVALID_LABELS = frozenset(
    {"invalid", "almost", "false", "partially_valid", "partially valid", "partially"}
)

# ADK's reading of the field in free text: the key and a colon, optional "[" and quotes, then
# everything up to the next quote or "]" (spaces and newlines included), optional closing quotes
# and brackets, and a comma, newline or "}" to end it.
_FIELD = re.compile(r'"is_valid":\s*\[*\s*"*([^"\]]*)"*\s*\]*\s*[,\n}]')

PersonaResolver = Callable[[str], UserPersona | None]
"""Looks up a built-in persona by id (None when the id is unknown)."""


@dataclass(frozen=True)
class TurnVerdict:
    """One sample's verdict: 1.0 (valid) or 0.0 (invalid), and the criteria it said failed."""

    score: float
    failed: tuple[str, ...] = ()


def _clean(label: str) -> str:
    # As ADK: closing braces off the ends, every comma out, whitespace off, lower case.
    return label.strip("}").replace(",", "").strip().lower()


def _label_score(label: str) -> float | None:
    label = _clean(label)
    if label in _VALID_LABELS:
        return 1.0
    if label in _INVALID_LABELS:
        return 0.0
    return None


def _json_label(value: Any) -> str | None:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else None


def _failed_criteria(obj: dict[str, Any]) -> tuple[str, ...]:
    entries = obj.get("criteria")
    if not isinstance(entries, list):
        return ()
    return tuple(
        str(entry.get("name"))
        for entry in entries
        if isinstance(entry, dict) and entry.get("passes") is False
    )


def parse_verdict(text: str) -> Parsed[TurnVerdict]:
    """A :class:`TurnVerdict` from a judge's answer, or no value with the reason."""
    label: str | None = None
    failed: tuple[str, ...] = ()
    for obj in json_objects(text):
        if VERDICT_FIELD in obj:
            label = _json_label(obj[VERDICT_FIELD])
            if label is not None:
                failed = _failed_criteria(obj)
                break
    if label is None:
        match = _FIELD.search(text)
        if match is None:
            return Parsed(None, NO_VERDICT)
        label = match.group(1)
    score = _label_score(label)
    if score is None:
        return Parsed(None, f"unknown verdict label {_clean(label)[:40]!r}")
    verdict = "valid" if score == 1.0 else "invalid"
    return Parsed(TurnVerdict(score, failed), score=score, verdict=verdict)


def _vote(
    outcomes: Sequence[SampleOutcome[TurnVerdict]], share: float | None = None
) -> tuple[float | None, str | None]:
    """The turn's score by ADK's majority vote (or a votes profile's ``share``), or None and the
    reason."""
    scores = [outcome.value.score if outcome.value else None for outcome in outcomes]
    score = scores[majority_index(scores, share)] if scores else None
    if score is None:
        return None, f"no verdict found in any of the {len(outcomes)} judge answers"
    return score, None


def _details(outcomes: Sequence[SampleOutcome[TurnVerdict]]) -> dict[str, Any]:
    verdicts = [outcome.value for outcome in outcomes]
    failed: dict[str, int] = {}
    for verdict in verdicts:
        for name in verdict.failed if verdict else ():
            failed[name] = failed.get(name, 0) + 1
    details: dict[str, Any] = {
        "votes": {
            "valid": sum(1 for v in verdicts if v is not None and v.score == 1.0),
            "invalid": sum(1 for v in verdicts if v is not None and v.score != 1.0),
            "none": sum(1 for v in verdicts if v is None),
        }
    }
    if failed:
        details["failed_criteria"] = failed
    return details


@dataclass
class _Turn:
    """One checked turn: its result, its notes, and its samples (none for turn 1)."""

    result: PerInvocationResult
    notes: InvocationNotes
    outcomes: list[SampleOutcome[TurnVerdict]]


@dataclass(frozen=True)
class _Prompting:
    """What every judged turn of one case shares."""

    scenario: ConversationScenario
    persona: UserPersona | None
    system: str
    schema: dict[str, Any]
    case_id: str
    semaphore: asyncio.Semaphore | None


class UserSimulatorQualityMetric:
    """A judge checks each simulated user turn, and the ending, against the scenario."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name=NAME,
        description=(
            "Fraction of the simulated user's turns that keep to the scenario: the first is "
            "its starting prompt, an LLM judge checks the rest against its plan."
        ),
        needs_judge=True,
    )

    def __init__(
        self,
        criterion: LlmBackedUserSimulatorCriterion,
        judge: Judge,
        personas: PersonaResolver | None = None,
    ) -> None:
        self.criterion = criterion
        self.judge = judge
        self.personas = personas

    def _persona(self, scenario: ConversationScenario) -> UserPersona | str | None:
        """The scenario's persona, or why it cannot be had."""
        persona = scenario.user_persona
        if not isinstance(persona, str):
            return persona
        found = self.personas(persona) if self.personas is not None else None
        if found is None:
            return (
                f"the scenario names the built-in persona {persona!r}, which this metric cannot "
                "look up; give the persona as an object (id, description, behaviors)"
            )
        return found

    def _prompting(
        self, scenario: ConversationScenario, persona: UserPersona | None, case_id: str
    ) -> _Prompting:
        stop = self.criterion.stop_signal
        if persona is None:
            criteria = sq_prompt.default_criteria(f"`{stop}`")
        else:
            values = {"stop_signal": stop, "conversation_plan": scenario.conversation_plan}
            criteria = sq_prompt.persona_criteria(persona, values)
        limit = sample_limit(self.criterion)
        return _Prompting(
            scenario=scenario,
            persona=persona,
            system=sq_prompt.system(criteria, stop_signal=stop, persona=persona is not None),
            schema=sq_prompt.schema(criteria),
            case_id=case_id,
            semaphore=asyncio.Semaphore(limit) if limit else None,
        )

    def prompt(
        self,
        scenario: ConversationScenario,
        history: Sequence[Invocation],
        message: str,
        persona: UserPersona | None = None,
    ) -> str:
        """The user message of one judged turn: the plan, the history, the persona's
        description (with a persona), and the new message."""
        return sq_prompt.render(
            conversation_plan=scenario.conversation_plan,
            conversation_history=sq_prompt.conversation_history(history),
            new_user_message=message,
            persona_description=persona.description if persona is not None else None,
        )

    def _first_turn(self, invocation: Invocation, scenario: ConversationScenario) -> _Turn:
        notes = InvocationNotes(invocation_id=invocation.invocation_id)
        if not invocation.user_content.parts:
            notes.reason = NO_FIRST_MESSAGE
            return _Turn(PerInvocationResult(invocation), notes, [])
        matches = content_text(invocation.user_content).strip() == scenario.starting_prompt.strip()
        score = 1.0 if matches else 0.0
        notes.details = {"starting_prompt_matches": matches}
        result = PerInvocationResult(invocation, score=score)
        result.status = status_for(score, self.criterion.threshold)
        return _Turn(result, notes, [])

    async def _judged_turn(
        self,
        invocation: Invocation,
        notes_id: str,
        message: str,
        history: Sequence[Invocation],
        prompting: _Prompting,
    ) -> _Turn:
        request = judge_request(
            self.criterion,
            system=prompting.system,
            user=self.prompt(prompting.scenario, history, message, prompting.persona),
            schema=prompting.schema,
            schema_name=sq_prompt.SCHEMA_NAME,
        )
        outcomes = await ask_samples(
            self.judge,
            request,
            num_samples=self.criterion.judge_model_options.num_samples,
            case_id=prompting.case_id,
            parse=parse_verdict,
            semaphore=prompting.semaphore,
        )
        score, reason = _vote(outcomes, self.judge.vote_share)
        result = PerInvocationResult(invocation, score=score)
        result.status = status_for(score, self.criterion.threshold)
        notes = InvocationNotes(
            invocation_id=notes_id,
            samples=[outcome.note for outcome in outcomes],
            reason=reason,
            details=_details(outcomes),
        )
        return _Turn(result, notes, outcomes)

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Check the first turn, judge the others and the ending, and score the turns."""
        scenario = case.conversation_scenario
        if scenario is None:
            return not_evaluated(NAME, self.criterion, actual, NO_SCENARIO)
        if not actual:
            return not_evaluated(NAME, self.criterion, actual, NO_INVOCATIONS)
        persona = self._persona(scenario)
        if isinstance(persona, str):
            return not_evaluated(NAME, self.criterion, actual, persona)
        prompting = self._prompting(scenario, persona, case.eval_id)
        later = [
            self._judged_turn(
                actual[i],
                actual[i].invocation_id,
                content_text(actual[i].user_content),
                actual[:i],
                prompting,
            )
            for i in range(1, len(actual))
        ]
        ending = self._judged_turn(
            actual[-1], STOP_CHECK_ID, self.criterion.stop_signal, actual, prompting
        )
        judged = await gather_in_order([*later, ending])
        turns = [self._first_turn(actual[0], scenario), *judged[:-1]]
        return self._overall(turns, judged[-1])

    def _failed_call(
        self, turns: list[_Turn], ending: _Turn, notes: MetricNotes
    ) -> MetricResult | None:
        """NOT_EVALUATED for the case when a judge call failed (ADK's evaluator raises then)."""
        for index, turn in enumerate([*turns, ending]):
            failure = call_failure(turn.outcomes)
            if failure is not None:
                where = "the stop-signal check" if turn is ending else f"turn {index + 1}"
                invocations = [t.result.actual for t in turns]
                failed = not_evaluated(NAME, self.criterion, invocations, f"{where}: {failure}")
                failed.notes = notes
                return failed
        return None

    def _overall(self, turns: list[_Turn], ending: _Turn) -> MetricResult:
        all_turns = [*turns, ending]
        notes = MetricNotes(
            judge_model=self.judge.model,
            judge_source=self.judge.source,
            usage=total_usage([outcome for turn in all_turns for outcome in turn.outcomes]),
            per_invocation=[turn.notes for turn in all_turns],
        )
        failed = self._failed_call(turns, ending, notes)
        if failed is not None:
            return failed
        per_invocation = [turn.result for turn in turns]
        replaced = ending.result.status is EvalStatus.FAILED
        ending.notes.details = {**(ending.notes.details or {}), "replaced_last_turn": replaced}
        if replaced:
            last = turns[-1]
            last.notes.details = {
                **(last.notes.details or {}),
                "replaced_by_stop_signal_check": True,
            }
            per_invocation[-1] = PerInvocationResult(
                last.result.actual, score=ending.result.score, status=ending.result.status
            )
        passed = 0.0
        for result in per_invocation:
            if result.status is EvalStatus.PASSED and result.score is not None:
                passed += result.score
        score = passed / len(per_invocation)
        return MetricResult(
            metric_name=NAME,
            criterion=self.criterion,
            score=score,
            status=status_for(score, self.criterion.threshold),
            per_invocation=per_invocation,
            notes=notes,
        )


def _with_builtin_personas(
    criterion: LlmBackedUserSimulatorCriterion, judge: Judge
) -> UserSimulatorQualityMetric:
    from assay.simulation.personas import BUILTIN_PERSONAS

    return UserSimulatorQualityMetric(criterion, judge, personas=BUILTIN_PERSONAS.get)


DECLARATION = MetricDeclaration(
    UserSimulatorQualityMetric,
    criterion=LlmBackedUserSimulatorCriterion,
    build=_with_builtin_personas,
    applies_to="scenario",
    prompts="simulator_quality",
    labelling=Labelling(labels=("yes", "no"), field="is_valid", positive=("true",)),
)
"""What ``per_turn_user_simulator_quality_v1`` is (:class:`~assay.metrics.declaration.MetricDeclaration`)."""
