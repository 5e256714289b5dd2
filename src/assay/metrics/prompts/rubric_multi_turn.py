"""The multi-turn trajectory rubric judge: one yes/no verdict per rubric on the whole conversation.

The judge reads the agents' instructions and tools, then the conversation turn by turn (the
user's message, each tool call with its arguments, each tool result, the agent's text), and the
properties one per line as ``[id: ID] text``. It answers with the same JSON as the single-turn
rubric judges (:mod:`assay.metrics.prompts.rubrics`), so one parser reads both.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.evalset.rubric import Rubric
from assay.metrics.prompts.rubrics import properties_text

SYSTEM = """\
You check a whole multi-turn conversation between a user and an AI agent against a list of \
properties, one verdict each.

The inputs: <agent_instructions>, <agent_tools>, <conversation> (every turn in order, numbered: \
the user's message, the tool calls the agent made with their arguments, what each tool \
returned, and the agent's replies), then <properties>, listed one per line as "[id: ID] text".

Judge the agent's performance over ALL its turns together, not only the last one: a mistake in \
one turn that a later turn corrects counts as corrected; a mistake never corrected counts \
against the property. Look at what the agent said and at which tools it called, with which \
arguments, in which order, and what they returned.
- "yes": over the conversation the agent fulfilled the property, or the property does not apply.
- "no": the property applies and the agent did not fulfil it. Name the turn that failed it in the \
rationale.
Judge each property on its own, and use only the properties given.

Reply with only this JSON object, one entry per property, in the order given:
{"verdicts": [{"id": "<ID>", "rationale": "<one short sentence>", "verdict": "yes" or "no"}]}"""


def _tagged(name: str, text: str) -> str:
    return f"<{name}>\n{text}\n</{name}>"


def render(*, instructions: str, tools: str, conversation: str, rubrics: Sequence[Rubric]) -> str:
    """The judge's user message."""
    return "\n".join(
        [
            _tagged("agent_instructions", instructions or "(none)"),
            _tagged("agent_tools", tools or "(none)"),
            _tagged("conversation", conversation),
            _tagged("properties", properties_text(rubrics)),
        ]
    )
