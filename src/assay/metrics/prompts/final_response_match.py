"""``final_response_match_v2``: is the agent's final answer as right as the reference answer?"""

from __future__ import annotations

from typing import Any

VALID_FIELD = "is_the_agent_response_valid"
"""The verdict's key (ADK's own name, so ADK-style answers parse too)."""

REASONING_MAX_LENGTH = 150

SYSTEM = f"""\
You grade one answer of an AI agent. A person wrote a reference answer that is known to be \
right. Decide whether the agent's answer is valid: whether it gives the key facts and \
conclusions of the reference.

Rules:
- Only correctness counts. Wording, order, length and layout may differ (a list or prose, a \
table arranged differently, "TX" or "Texas", 1000000 or 1,000,000) unless the user asked for a \
particular format.
- More detail than the reference is fine when the reference's answer is in it.
- If the reference answers the question, an agent that says it cannot, or that it has no data, \
is invalid.
- Trust the reference for facts, tables, dates and arithmetic; do not redo calculations.
- Units must agree: 100 miles is not 100 km.
- Numbers: when the user set no precision, another rounding is fine if it suits the quantity \
(an accuracy of 0.798 may be 0.80, not 0.7).

Reply with only this JSON object:
{{"reasoning": "<one or two short sentences>", "{VALID_FIELD}": "valid" or "invalid"}}"""

_USER = """\
<user_prompt>
{prompt}
</user_prompt>
<agent_response>
{response}
</agent_response>
<reference_response>
{reference}
</reference_response>"""


def render(*, prompt: str, response: str, reference: str) -> str:
    """The user message: the user's prompt, the agent's answer and the reference answer."""
    return _USER.format(prompt=prompt, response=response, reference=reference)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "maxLength": REASONING_MAX_LENGTH},
        VALID_FIELD: {"type": "string", "enum": ["valid", "invalid"]},
    },
    "required": ["reasoning", VALID_FIELD],
    "additionalProperties": False,
}
"""The answer's JSON schema (sent as the request's ``response_schema``)."""

SCHEMA_NAME = "final_response_verdict"
