"""Personas a simulated user can adopt: ADK 2.13's built-in ids, described in our own words.

A scenario's ``user_persona`` is a :class:`~assay.evalset.case.UserPersona` object or the id of a
built-in one: ``EXPERT``, ``NOVICE`` or ``EVALUATOR`` (case-sensitive, as in ADK's registry). Each
built-in persona combines behaviours of the same kinds as ADK's (how requests advance, which
questions get answers, whether the agent is corrected, when the conversation ends, the tone); the
wording here is ours. A behaviour's text may use ``{{ stop_signal }}``: it is rendered with the
stop signal the run uses.

Templates see a persona as a :class:`PersonaView`: ``{{ persona }}`` is a readable description,
and ``persona.description``, ``persona.behaviors``, ``b.name``, ``b.description``,
``b.get_behavior_instructions_str()`` and ``b.get_violation_rubrics_str()`` work as in ADK's
templates.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from assay.errors import UserSimulatorError
from assay.evalset.case import UserBehavior, UserPersona

_PRECISE_REQUESTS = UserBehavior(
    name="Move on with complete requests",
    description=(
        "Follows the Conversation Plan. Each new request states the goal together with every "
        "detail from the plan that the agent needs to carry it out."
    ),
    behavior_instructions=[
        "When the agent has done what you asked, make the next request in the Conversation Plan.",
        "Leave out requests the agent has already taken care of.",
        "Each new request names what you want done and gives all the details the plan provides "
        "for it.",
    ],
    violation_rubrics=[
        "The response asks again for a goal that earlier turns already completed.",
        "The response gives details for a goal that is already completed.",
        "The response accepts a change of topic, or a task the Conversation Plan does not hold.",
        "The response introduces a goal that is not in the Conversation Plan.",
        "The response makes up details (a phone number, an address) that the Conversation Plan "
        "does not give.",
        "The response states only the goal, so the agent has to ask for the details.",
        "The response pursues more than one goal in a single turn.",
    ],
)

_GOAL_FIRST = UserBehavior(
    name="Move on one goal at a time, details on request",
    description=(
        "Follows the Conversation Plan, leaving it only to answer the agent. Each request "
        "states just the goal; the agent is expected to ask for the details."
    ),
    behavior_instructions=[
        "When the agent has done what you asked, make the next request in the Conversation Plan.",
        "Leave out requests the agent has already taken care of.",
        "State only the goal you want to reach next.",
        "Give no details about that goal until the agent asks for them.",
    ],
    violation_rubrics=[
        "The response asks again for a goal that earlier turns already completed.",
        "The response gives details for a goal that is already completed.",
        "The response introduces a goal found neither in the Conversation Plan nor in the "
        "agent's messages.",
        "The response makes up details found neither in the Conversation Plan nor in the "
        "agent's messages.",
        "The response gives details of a goal (message text, addresses, phone numbers) before "
        "the agent asked for them.",
        "The response pursues more than one goal in a single turn.",
    ],
)

_RELEVANT_ANSWERS = UserBehavior(
    name="Answer only what serves the plan",
    description=(
        "Questions unrelated to the goals of the Conversation Plan (small talk such as 'how is "
        "your day?') go unanswered; when nothing the agent asked is relevant, the user steers "
        "back to the plan."
    ),
    behavior_instructions=[
        "Answer the agent's questions only with facts from the Conversation Plan.",
        "Give no information the agent did not ask for.",
        "If the plan does not hold what the agent asks for, say so; never make it up.",
        "Do not answer questions unrelated to the goals of the Conversation Plan.",
    ],
    violation_rubrics=[
        "The agent asked something unrelated to the goals and the response answers it.",
    ],
)

_ALL_ANSWERS = UserBehavior(
    name="Answer every question",
    description="Every question the agent asks gets a reply, small talk included.",
    behavior_instructions=[
        "Answer the agent's questions only with facts from the Conversation Plan.",
        "Give no information the agent did not ask for.",
        "If the plan does not hold what the agent asks for, say that you do not know; never "
        "make it up.",
    ],
    violation_rubrics=[
        "The agent asked one or more questions and the response leaves some unanswered.",
        "The agent asked for something the Conversation Plan does not hold and the response "
        "invents an answer instead of saying it does not know.",
    ],
)

_CORRECTS = UserBehavior(
    name="Correct the agent's mistakes",
    description="Notices what the agent gets wrong and corrects it.",
    behavior_instructions=[
        "Dispute statements of the agent that are wrong or make no sense.",
        "If the agent carried out an operation wrongly, ask for it to be fixed.",
    ],
    violation_rubrics=[
        "The agent gave wrong information and the response carries on as if it were right.",
        "The agent acted on a risky assumption (sending a message before asking what it should "
        "say, for example) and the response lets it pass.",
    ],
)

_NO_CORRECTIONS = UserBehavior(
    name="Do not correct the agent",
    description=(
        "When the agent says something wrong or illogical, the user ends the conversation "
        "instead of correcting it."
    ),
    behavior_instructions=[
        "If the agent says something wrong or illogical, end the conversation by writing "
        "{{ stop_signal }}.",
    ],
    violation_rubrics=[
        "The agent made a mistake or an assumption and the response corrects it.",
    ],
)

_ONE_RETRY = UserBehavior(
    name="Help the agent recover once",
    description=(
        "Troubleshooting, that is helping the agent after it fails an action (a wrong tool "
        "call, say) or fails to give what the plan expects, happens at most once per "
        "conversation. Answering the agent's clarifying questions is not troubleshooting. "
        "Count the agent's failures in the Conversation History."
    ),
    behavior_instructions=[
        "The first time the agent fails a request, help it recover.",
        "Troubleshoot only once in the whole conversation: if the Conversation History shows "
        "you already did, do not do it again.",
    ],
    violation_rubrics=[
        "The response ends the conversation right after the agent's first failure.",
        "After the agent's second failure, the response goes on without {{ stop_signal }}.",
    ],
)


def _ending(after: str, count_rule: str, late_rubrics: list[str]) -> UserBehavior:
    return UserBehavior(
        name="End at the right time",
        description=(
            "The conversation is over when any of these holds:\n"
            "- the agent confirmed that every goal of the Conversation Plan is done;\n"
            "- the agent handed the user over to a human (not to another AI agent);\n"
            f"- the agent failed {after}.\n"
            "A failure is an action the agent could not carry out (a wrong tool call, say) or a "
            "reply the plan did not lead to; a clarifying question is not a failure."
        ),
        behavior_instructions=[
            "End only when one of these conditions holds, never earlier.",
            "If you end because every goal is done, first wait for the agent to confirm all of "
            "them.",
            "To end, include {{ stop_signal }} in your message.",
            count_rule,
        ],
        violation_rubrics=[
            "A condition to end holds, but the response does not contain {{ stop_signal }}.",
            "The response contains {{ stop_signal }} though no condition to end holds.",
            *late_rubrics,
        ],
    )


_END_AFTER_SECOND_FAILURE = _ending(
    "twice",
    "Count the agent's failures in the Conversation History: the second one ends the conversation.",
    [],
)

_END_AFTER_FIRST_FAILURE = _ending(
    "once",
    "If the agent's last message reports a failure, end the conversation.",
    ["After the agent's first failure, the response goes on without {{ stop_signal }}."],
)


def _tone(name: str, description: str, instructions: list[str], flaw: str) -> UserBehavior:
    return UserBehavior(
        name=name,
        description=f"{description} Writing {{{{ stop_signal }}}} is always in keeping.",
        behavior_instructions=instructions,
        violation_rubrics=[
            flaw,
            "The response is a long block of text where a sentence or two would do.",
            "The response's tone differs from the user's earlier turns.",
        ],
    )


_PROFESSIONAL_TONE = _tone(
    "Formal, technical tone",
    "Plain, precise, technical language.",
    [
        "Write in clear, precise, technical language.",
        "No slang, shorthand, emojis, pleasantries or personal asides.",
    ],
    "The response uses slang, shorthand or emojis, or spends words on pleasantries and "
    "personal asides.",
)

_CASUAL_TONE = _tone(
    "Casual tone",
    "Sounds like a person chatting informally.",
    [
        "Write like someone in an everyday conversation.",
        "Avoid stiff, formal or over-polite wording.",
        "Avoid bare commands with nothing conversational around them.",
    ],
    "The response is a bare command, or stiff and over-polite.",
)

BUILTIN_PERSONAS: Mapping[str, UserPersona] = {
    "EXPERT": UserPersona(
        id="EXPERT",
        description=(
            "Knows exactly what they want and uses the agent as a tool to get it done as fast "
            "as possible; has no patience for small talk or needless questions."
        ),
        behaviors=[
            _PRECISE_REQUESTS,
            _RELEVANT_ANSWERS,
            _CORRECTS,
            _ONE_RETRY,
            _END_AFTER_SECOND_FAILURE,
            _PROFESSIONAL_TONE,
        ],
    ),
    "NOVICE": UserPersona(
        id="NOVICE",
        description=(
            "Has a problem they do not fully understand and leans on the agent for guidance; "
            "patient with the agent's questions, but can neither troubleshoot nor correct the "
            "agent's mistakes."
        ),
        behaviors=[
            _GOAL_FIRST,
            _NO_CORRECTIONS,
            _ALL_ANSWERS,
            _END_AFTER_FIRST_FAILURE,
            _CASUAL_TONE,
        ],
    ),
    "EVALUATOR": UserPersona(
        id="EVALUATOR",
        description="Checks whether the agent can help reach the goals of the Conversation Plan.",
        behaviors=[
            _PRECISE_REQUESTS,
            _RELEVANT_ANSWERS,
            _END_AFTER_FIRST_FAILURE,
            _NO_CORRECTIONS,
            _CASUAL_TONE,
        ],
    ),
}
"""ADK 2.13's built-in persona ids, with our descriptions and behaviours."""


def resolve_persona(persona: UserPersona | str | None) -> UserPersona | None:
    """The persona a scenario names: the object itself, or the built-in persona with that id.

    An unknown id raises :class:`~assay.errors.UserSimulatorError` listing the ids.
    """
    if persona is None or isinstance(persona, UserPersona):
        return persona
    found = BUILTIN_PERSONAS.get(persona)
    if found is not None:
        return found.model_copy(deep=True)
    known = list(BUILTIN_PERSONAS)
    close = [k for k in known if k.lower() == persona.strip().lower()]
    close = close or difflib.get_close_matches(persona, known, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise UserSimulatorError(
        f"unknown user_persona id {persona!r}: {hint}the built-in personas are "
        f"{', '.join(known)} (or give a persona object with id, description and behaviors)"
    )


def _bullets(items: list[str]) -> str:
    return "\n".join(f"  - {item}" for item in items)


@dataclass(frozen=True)
class BehaviorView:
    """A behaviour as templates see it, its text already rendered."""

    name: str
    description: str
    behavior_instructions: list[str]
    violation_rubrics: list[str]

    def get_behavior_instructions_str(self) -> str:
        """The instructions as an indented bullet list."""
        return _bullets(self.behavior_instructions)

    def get_violation_rubrics_str(self) -> str:
        """The violation rubrics as an indented bullet list."""
        return _bullets(self.violation_rubrics)

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.description}".rstrip(": ")]
        if self.behavior_instructions:
            lines.append(self.get_behavior_instructions_str())
        return "\n".join(lines)


@dataclass(frozen=True)
class PersonaView:
    """A persona as templates see it; ``{{ persona }}`` prints its description and behaviours."""

    id: str
    description: str
    behaviors: list[BehaviorView]

    def __str__(self) -> str:
        head = f"{self.id}: {self.description}".rstrip(": ")
        if not self.behaviors:
            return head
        body = "\n\n".join(str(b) for b in self.behaviors)
        return f"{head}\n\nHow this persona behaves:\n\n{body}"


def persona_texts(persona: UserPersona) -> list[tuple[str, str]]:
    """Every text of a persona that is rendered as a template, with where it is (for errors)."""
    texts = [("description", persona.description)]
    for i, behavior in enumerate(persona.behaviors):
        where = f"behaviors[{i}]"
        texts += [(f"{where}.name", behavior.name), (f"{where}.description", behavior.description)]
        texts += [
            (f"{where}.behavior_instructions[{j}]", text)
            for j, text in enumerate(behavior.behavior_instructions)
        ]
        texts += [
            (f"{where}.violation_rubrics[{j}]", text)
            for j, text in enumerate(behavior.violation_rubrics)
        ]
    return texts


def persona_view(persona: UserPersona, render: Callable[[str], str]) -> PersonaView:
    """The persona with every text passed through ``render`` (which fills ``{{ stop_signal }}``
    and the other placeholders)."""
    return PersonaView(
        id=persona.id,
        description=render(persona.description),
        behaviors=[
            BehaviorView(
                name=render(b.name),
                description=render(b.description),
                behavior_instructions=[render(t) for t in b.behavior_instructions],
                violation_rubrics=[render(t) for t in b.violation_rubrics],
            )
            for b in persona.behaviors
        ],
    )
