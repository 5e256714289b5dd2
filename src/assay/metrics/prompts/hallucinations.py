"""What ``hallucinations_v1`` asks its judge: the segmenter and the sentence validator.

Both prompts are assay's own wording. They give the judge the inputs ADK 2.13's
``HallucinationsV1Evaluator`` gives it (the answer to split; the context and the sentences to
label) and ask for the same fields, as JSON. The static instructions go in the system message and
the per-step inputs last, so a local server's prefix cache reuses the instructions between calls.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

LABELS = ("supported", "unsupported", "contradictory", "disputed", "not_applicable")
"""The labels the validator may give a sentence."""

_TEXT_LIMIT = 150  # characters, for the free-text fields of the validator's answer

SEGMENTER_INSTRUCTIONS = """\
Split an AI assistant's answer into sentences so that each one can be fact-checked on its own.
Rules:
1. Cover the whole answer. Copy every sentence exactly as written, punctuation included; never \
reword, merge or add text.
2. Each bullet or numbered item, and each sub-item, is a separate sentence; so is a lead-in such \
as "Prices:".
3. Keep a table whole, as one sentence.
4. Leave out pieces made only of symbols or markup.
Reply with JSON only: {"sentences": ["first sentence", "second sentence"]}"""

VALIDATOR_INSTRUCTIONS = """\
You fact-check the sentences of an AI agent's answer against the context the agent had: its \
instructions, its tool definitions, the user's message, and the tool calls it made with their \
outputs.
Give every sentence exactly one label:
- supported: an excerpt of the context fully backs the sentence; quote it.
- contradictory: the context shows the sentence is false; quote the conflicting excerpt.
- disputed: the context both backs and contradicts it; quote both excerpts.
- unsupported: the context neither backs nor refutes it.
- not_applicable: the sentence states no fact to check (an opinion, greeting, question, plan, \
disclaimer or calculation).
Be strict: without clear evidence in the context, choose unsupported. Use no outside knowledge \
beyond the obvious. Believe a tool output only when the call that produced it fits the request \
and the output shows no error. Sources under "Grounding metadata" back the sentences they are \
attributed to.
Reply with JSON only, one entry per sentence, in the order given:
{"sentences": [{"sentence": "<copied>", "label": "<label>", "rationale": "<one short reason>", \
"supporting_excerpt": "<quote>" or null, "contradicting_excerpt": "<quote>" or null}]}"""

SEGMENTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sentences": {"type": "array", "items": {"type": "string"}}},
    "required": ["sentences"],
    "additionalProperties": False,
}
"""The JSON schema of the segmenter's answer."""

_EXCERPT: dict[str, Any] = {"type": ["string", "null"], "maxLength": _TEXT_LIMIT}


def validator_schema(sentences: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of the validator's answer to ``sentences``: one entry per sentence, each
    naming one of them (as the rubric schema names rubric ids), so a constrained decoder labels
    the sentences it was given and never spends generated tokens copying them."""
    schema = copy.deepcopy(VALIDATOR_SCHEMA)
    listed = schema["properties"]["sentences"]
    listed["items"]["properties"]["sentence"]["enum"] = list(dict.fromkeys(sentences))
    listed["minItems"] = listed["maxItems"] = len(sentences)
    return schema


VALIDATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sentences": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "sentence": {"type": "string"},
                    "label": {"type": "string", "enum": list(LABELS)},
                    "rationale": {"type": "string", "maxLength": _TEXT_LIMIT},
                    "supporting_excerpt": _EXCERPT,
                    "contradicting_excerpt": _EXCERPT,
                },
                "required": [
                    "sentence",
                    "label",
                    "rationale",
                    "supporting_excerpt",
                    "contradicting_excerpt",
                ],
                "additionalProperties": False,
            },
        }
    },
    "required": ["sentences"],
    "additionalProperties": False,
}
"""The JSON schema of the validator's answer, for any sentences (see :func:`validator_schema`)."""


def segmenter_input(answer: str) -> str:
    """The per-step part of the segmenter prompt: the answer to split."""
    return f"<answer>\n{answer}\n</answer>"


def validator_input(context: str, sentences: Sequence[str]) -> str:
    """The per-step part of the validator prompt: the context, then the numbered sentences
    (JSON-quoted, so a sentence spanning lines stays one item)."""
    numbered = "\n".join(
        f"{i}. {json.dumps(sentence, ensure_ascii=False)}"
        for i, sentence in enumerate(sentences, 1)
    )
    return f"<context>\n{context}\n</context>\n\n<sentences>\n{numbered}\n</sentences>"
