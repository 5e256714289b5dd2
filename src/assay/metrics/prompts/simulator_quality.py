"""``per_turn_user_simulator_quality_v1``: is a simulated user's next message a good next turn?

assay's own wording. The judge gets what ADK 2.13's ``PerTurnUserSimulatorQualityV1`` gives it:
the scenario's conversation plan, the conversation so far (``user: ...`` and ``model: ...``
lines, see :func:`conversation_history`), the simulated user's new message, the stop signal, and
the scenario's persona when it has one. It answers with ADK's fields:
``{"criteria": [{"name", "reasoning", "passes"}], "is_valid": true | false}``.

Without a persona the message is checked against seven fixed criteria (ADK's names); with a
persona, against the persona's behaviours instead, each with its violations, as ADK does. The
instructions (criteria, stop signal) go in the system message, which stays the same for every
turn of a case; the plan, history and message go in the user message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.evalset.case import UserPersona
from assay.evalset.content import content_text
from assay.evalset.invocation import Invocation

REASONING_MAX_LENGTH = 150
"""Characters in one criterion's reasoning (the embedded judge leaves bounded text empty)."""

SCHEMA_NAME = "user_simulator_verdict"


@dataclass(frozen=True)
class Criterion:
    """One thing the new message is checked for: a name, what it means, what breaks it."""

    name: str
    meaning: str
    violations: tuple[str, ...]


def default_criteria(stop: str) -> tuple[Criterion, ...]:
    """The seven criteria of a scenario without a persona, with the stop signal ``stop``."""
    return (
        Criterion(
            "CONVERSATION_PLAN_FOLLOWED",
            "The message keeps to the conversation plan.",
            (
                "It asks again for a goal that was already achieved, or gives details for one.",
                "It goes along with a change of subject, or a task that is not in the plan.",
                "It makes up a goal the plan does not have.",
                "It makes up a detail the plan does not give (a phone number, an address).",
            ),
        ),
        Criterion(
            "STOP_CONDITION_FOLLOWED",
            "The conversation ends exactly when it should.",
            (
                f"The conversation should end here, but the message does not contain {stop}.",
                f"The message contains {stop} while goals of the plan are still open and the "
                "agent has not failed.",
                "The agent handed the user over to a human or live agent, and the message "
                f"carries on instead of using {stop}.",
            ),
        ),
        Criterion(
            "USER_GOAL_ORIENTED",
            "The user pursues its goals as a person would, instead of pouring out data.",
            (
                "It gives the specifics of a goal (message text, addresses, phone numbers) "
                "before the agent asked for them.",
                "It pursues more than one goal of the plan in the same message.",
            ),
        ),
        Criterion(
            "LIMITED_TROUBLESHOOTING",
            "The user is patient with the agent's errors, but only so far. Count the agent's "
            "errors in the history.",
            (
                "It ends the conversation right after the agent's first error.",
                f"At the agent's second error it carries on without {stop}.",
                "After the agent's second error it keeps going, or keeps correcting the agent, "
                f"instead of using {stop}.",
            ),
        ),
        Criterion(
            "RESPONSIVENESS",
            "The user answers what the agent asked.",
            (
                "The agent asked one or more questions and the message leaves any of them "
                "unanswered.",
                "The agent asked for information the plan does not give, and the message "
                "invents an answer instead of saying the user does not know.",
            ),
        ),
        Criterion(
            "CORRECTS_AGENT",
            "The user notices the agent's mistakes.",
            (
                "The agent said something wrong and the message goes on as if it were right.",
                "The agent made a risky assumption (say, sending an email before asking what it "
                "should say) and the message lets it pass.",
            ),
        ),
        Criterion(
            "CONVERSATIONAL_TONE",
            "The user sounds like a person.",
            (
                "Convoluted sentences, or jargon where it does not belong.",
                "Bare commands with no conversational framing at all.",
                "Stiff, over-polite formality.",
                "A long block of text where a short sentence would do.",
            ),
        ),
    )


_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{{ name }}`` replaced by ``values[name]``.

    Persona texts may name ADK's template variables (``{{ stop_signal }}`` in the built-in
    personas), which ADK fills in; a name it does not know renders as nothing, as in Jinja.
    """
    return _PLACEHOLDER.sub(lambda match: values.get(match.group(1), ""), text)


def persona_criteria(persona: UserPersona, values: Mapping[str, str]) -> tuple[Criterion, ...]:
    """The persona's behaviours as criteria (names, descriptions and violations filled in)."""
    return tuple(
        Criterion(
            fill(behavior.name, values),
            fill(behavior.description, values),
            tuple(fill(violation, values) for violation in behavior.violation_rubrics),
        )
        for behavior in persona.behaviors
    )


_INTRO = """\
You review one message written by a user simulator: a program that plays a person talking to an \
AI agent, following a conversation plan. Decide whether the new message is a good next turn for \
that person, given the plan and the conversation so far.

The inputs:
- <conversation_plan>: the goals the simulated user must reach, in order, and the facts it may \
use to reach them.{plan_note}
- <conversation_history>: the conversation so far, one turn per paragraph ("user: ..." for the \
simulated user, "model: ..." for the agent). It may stop midway; the user may have had to push \
back on wrong or unhelpful replies of the agent to keep to the plan.{persona_input}
- <new_user_message>: the message to review, written after the history.

The conversation is over only when the simulated user writes the stop signal {stop}. Until \
then, more turns may follow.

Check the new message against each criterion below. A criterion passes unless one of its \
violations happens; the message is valid only if every criterion passes."""

_PERSONA_INPUT = """
- <persona>: how the simulated user is meant to behave (behaviours, not goals). Where the \
persona and the plan disagree, the plan wins."""

_ANSWER = """\
Reply with only this JSON object, one entry per criterion, in the order above:
{"criteria": [{"name": "<criterion>", "reasoning": "<one short sentence>", "passes": true or \
false}], "is_valid": true if every criterion passes, else false}"""


def _criterion_text(criterion: Criterion) -> str:
    lines = [f"{criterion.name}: {criterion.meaning}".rstrip(), "Violations:"]
    lines.extend(f"- {violation}" for violation in criterion.violations)
    return "\n".join(lines)


def system(criteria: Sequence[Criterion], *, stop_signal: str, persona: bool) -> str:
    """The static instructions: the task, the criteria, the stop signal, the answer format."""
    intro = _INTRO.format(
        stop=f"`{stop_signal}`",
        plan_note=" The plan is a guide, not a script." if persona else "",
        persona_input=_PERSONA_INPUT if persona else "",
    )
    body = "\n\n".join(_criterion_text(criterion) for criterion in criteria)
    return f"{intro}\n\n{body}\n\n{_ANSWER}"


def conversation_history(invocations: Sequence[Invocation]) -> str:
    """The conversation so far as ADK renders it: per invocation, ``user: <text>`` when the user
    message has parts, then ``<role>: <text>`` of the final response when there is one, all
    joined by blank lines. A final response without a role is written as ``model``."""
    turns: list[str] = []
    for invocation in invocations:
        if invocation.user_content.parts:
            turns.append(f"user: {content_text(invocation.user_content)}")
        response = invocation.final_response
        if response is not None:
            turns.append(f"{response.role or 'model'}: {content_text(response)}")
    return "\n\n".join(turns)


def _tagged(name: str, text: str) -> str:
    return f"<{name}>\n{text}\n</{name}>"


def render(
    *,
    conversation_plan: str,
    conversation_history: str,
    new_user_message: str,
    persona_description: str | None = None,
) -> str:
    """The user message: the plan, the history, the persona (if any), the new message last."""
    sections = [
        _tagged("conversation_plan", conversation_plan),
        _tagged("conversation_history", conversation_history),
    ]
    if persona_description is not None:
        sections.append(_tagged("persona", persona_description))
    sections.append(_tagged("new_user_message", new_user_message))
    return "\n".join(sections)


def schema(criteria: Sequence[Criterion]) -> dict[str, Any]:
    """The answer's JSON schema: one entry per criterion (names from the list), then the verdict."""
    names = list(dict.fromkeys(criterion.name for criterion in criteria))
    name: dict[str, Any] = (
        {"type": "string", "enum": names}
        if names
        else {"type": "string", "maxLength": REASONING_MAX_LENGTH}
    )
    entry = {
        "type": "object",
        "properties": {
            "name": name,
            "reasoning": {"type": "string", "maxLength": REASONING_MAX_LENGTH},
            "passes": {"type": "boolean"},
        },
        "required": ["name", "reasoning", "passes"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "items": entry,
                "minItems": len(criteria),
                "maxItems": len(criteria),
            },
            "is_valid": {"type": "boolean"},
        },
        "required": ["criteria", "is_valid"],
        "additionalProperties": False,
    }
