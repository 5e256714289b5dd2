"""The rubric judges: a yes/no verdict per rubric on the final answer, or on the tool use.

Rubrics are listed one per line as ``[id: ID] text``; the judge answers with
``{"verdicts": [{"id", "rationale", "verdict"}]}`` (the property is named by its id, not
copied: copying costs generated tokens), one entry per rubric. The schema
lists the ids, so a constrained decoder can only name rubrics that exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.evalset.rubric import Rubric

TEXT_MAX_LENGTH = 150  # characters; every generated token costs ~0.1 s on the embedded judge

_ANSWER_FORMAT = """\
Reply with only this JSON object, one entry per property, in the order given:
{"verdicts": [{"id": "<ID>", "rationale": "<one short sentence>", "verdict": "yes" or "no"}]}"""

RUBRIC_SYSTEM = f"""\
You check one turn of an AI agent against a list of properties, one verdict each.

The inputs: <developer_instructions> (the agent's instructions), <available_tools>, \
<user_prompt>, <response_steps> (the tool calls made, with their responses), then either \
<final_answer> and <final_answer_properties>, or <tool_use_properties>. Properties are listed one \
per line as "[id: ID] text". Judge each property on its own.

Final-answer properties:
- "yes": the final answer has the property, or the property does not apply here.
- "no": the property applies and the final answer lacks it, or what the answer claims for it \
cannot be confirmed from trusted evidence.
Trusted evidence is only the user's request, the output of tool calls that were made correctly \
(the right tool, with right and complete arguments, for a sensible purpose) and grounding \
metadata when given. What the agent itself says or reasons is never evidence. Check that the \
final answer agrees with the evidence: other wording or rounding is fine, other facts are not.

Tool-use properties: look at which tools were called, with which arguments, in which order, and \
what they returned, given the tools available and what the user asked.
- "yes": the agent's tool use has the property, or the property does not apply (for example, \
it is about a call that depends on an earlier step the agent never got to).
- "no": the property applies and the tool use lacks it.

{_ANSWER_FORMAT}"""
"""One system prompt for both rubric judges, and one shared start of their user message (the
turn up to its tool steps): a prompt cache that has read one judge's prompt reads only the
other's last lines."""


def properties_text(rubrics: Sequence[Rubric]) -> str:
    """One line per rubric: ``[id: ID] text``."""
    return "\n".join(
        f"[id: {rubric.rubric_id}] {rubric.rubric_content.text_property or ''}"
        for rubric in rubrics
    )


def _tagged(name: str, text: str) -> str:
    return f"<{name}>\n{text}\n</{name}>"


def _turn(
    developer_instructions: str, available_tools: str, user_prompt: str, response_steps: str
) -> list[str]:
    """What both rubric judges read first, in the same words."""
    return [
        _tagged("developer_instructions", developer_instructions or "(none)"),
        _tagged("available_tools", available_tools),
        _tagged("user_prompt", user_prompt),
        _tagged("response_steps", response_steps),
    ]


def render_final_response(
    *,
    developer_instructions: str,
    available_tools: str,
    user_prompt: str,
    response_steps: str,
    grounding_metadata: str | None,
    final_answer: str,
    rubrics: Sequence[Rubric],
) -> str:
    """The final-response judge's user message (grounding metadata only when there is some)."""
    sections = _turn(developer_instructions, available_tools, user_prompt, response_steps)
    if grounding_metadata is not None:
        sections.append(_tagged("grounding_metadata", grounding_metadata))
    sections.append(_tagged("final_answer", final_answer))
    sections.append(_tagged("final_answer_properties", properties_text(rubrics)))
    return "\n".join(sections)


def render_tool_use(
    *,
    developer_instructions: str,
    available_tools: str,
    user_prompt: str,
    response_steps: str,
    rubrics: Sequence[Rubric],
) -> str:
    """The tool-use judge's user message: the turn without its final answer."""
    sections = _turn(developer_instructions, available_tools, user_prompt, response_steps)
    sections.append(_tagged("tool_use_properties", properties_text(rubrics)))
    return "\n".join(sections)


def schema(rubrics: Sequence[Rubric]) -> dict[str, Any]:
    """The answer's JSON schema: exactly one verdict per rubric, ids from the list."""
    entry = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "enum": [r.rubric_id for r in rubrics]},
            "rationale": {"type": "string", "maxLength": TEXT_MAX_LENGTH},
            "verdict": {"type": "string", "enum": ["yes", "no"]},
        },
        "required": ["id", "rationale", "verdict"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": entry,
                "minItems": len(rubrics),
                "maxItems": len(rubrics),
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    }


SCHEMA_NAME = "rubric_verdicts"
