"""What ``response_evaluation_score`` asks its judge: how coherent is the reply, from 1 to 5?

assay's own prompt, after the criteria and 1-5 rating rubric Vertex AI publishes for its
pointwise COHERENCE metric (the judge is given the user's prompt and the reply, not the
reference). The static instructions go in the system message and the prompt and reply last, so a
local server's prefix cache reuses the instructions between calls.
"""

from __future__ import annotations

from typing import Any

RATINGS = {
    5: "completely coherent",
    4: "mostly coherent",
    3: "somewhat coherent",
    2: "somewhat incoherent",
    1: "incoherent",
}
"""Each rating and its name."""

TEXT_MAX_LENGTH = 200  # characters of the explanation

INSTRUCTIONS = """\
You rate how coherent an AI assistant's reply to a user's message is, from 1 to 5.

A coherent reply presents its ideas clearly and in a logical order: each idea leads to the next \
with a clear transition, everything stays relevant to the point of the user's message, the reply \
has a recognisable structure that guides the reader, and its sentences hold together (word \
choice, sentence structure and references such as "it" or "this" make the links between ideas \
plain and unambiguous).

Ratings:
5 (completely coherent): ideas flow from one to the next without a break; the organisation is \
excellent and every part is tied to the rest.
4 (mostly coherent): the flow is logical and the structure clear; the parts are well connected, \
with at most small lapses.
3 (somewhat coherent): the flow can mostly be followed and a structure is visible, but some \
links between ideas are weak.
2 (somewhat incoherent): no clear line of thought; the structure is weak and the links between \
ideas are inconsistent or confusing.
1 (incoherent): illogical and unorganised; the parts barely connect.

Think about what the user wanted and who the reply is for; the overall progression of the \
reply; how its sentences and paragraphs connect; whether repetitions and parallels help or \
confuse; whether every reference is clear. Rate how the reply is organised and connected, not \
whether its facts are right. A short reply can be completely coherent.
Reply with JSON only: {"explanation": "<one short sentence>", "rating": "1" to "5"}"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string", "maxLength": TEXT_MAX_LENGTH},
        "rating": {"type": "string", "enum": [str(n) for n in sorted(RATINGS)]},
    },
    "required": ["explanation", "rating"],
    "additionalProperties": False,
}
"""The JSON schema of the judge's answer (the explanation first, then the rating)."""

SCHEMA_NAME = "coherence_rating"


def judge_input(prompt: str, reply: str) -> str:
    """The per-invocation part of the prompt: the user's message and the agent's reply."""
    return f"<user_message>\n{prompt}\n</user_message>\n\n<reply>\n{reply}\n</reply>"
