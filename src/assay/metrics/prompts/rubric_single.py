"""One rubric per question: the rubric judges' prompt for a small model, which a judge profile
turns on (``"prompt": "one_rubric_per_call"``).

A small model asked about several properties at once, after the agent's whole turn, answers
"yes" to nearly all of them. Asked about one property, right after a compact view of the turn
(the user's request, the tool calls in order with their results, the final answer when the
property is about it), it tells them apart better: on the fitting half of the project's labelled
set the embedded judge's probability of "yes" separated people's verdicts with an AUC of 0.70
(final answer) and 0.73 (tool use), against 0.49 and 0.64 with the shared prompt
(benchmarks/judge_agreement/README.md). The answer is ``{"verdict": "yes" | "no"}``.
"""

from __future__ import annotations

from typing import Any

SYSTEM = (
    "You grade an AI assistant's turn against one property. Read the user's request, the tool "
    'calls the assistant made and what they returned, and its final reply. Answer "yes" only '
    'if the property clearly holds; answer "no" if it does not hold or you cannot tell.'
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
SCHEMA_NAME = "rubric_verdict"
PROMPT = "one_rubric_per_call"
"""The name a judge profile gives this prompt."""


def render(*, user_prompt: str, tool_calls: str, final_answer: str | None, rubric: str) -> str:
    """The question about one property (``final_answer`` None for a tool-use property)."""
    sections = [
        f"<user_request>\n{user_prompt}\n</user_request>",
        f"<tool_calls_in_order>\n{tool_calls}\n</tool_calls_in_order>",
    ]
    if final_answer is not None:
        sections.append(f"<final_reply>\n{final_answer}\n</final_reply>")
    sections.append(f"<property>\n{rubric}\n</property>\nDoes the property hold?")
    return "\n".join(sections)
