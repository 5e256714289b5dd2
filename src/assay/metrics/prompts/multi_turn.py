"""The rubrics the three conversation-level metrics ADK hands to Vertex AI ask assay's judge
about: ``multi_turn_task_success_v1``, ``multi_turn_trajectory_quality_v1`` and
``multi_turn_tool_use_quality_v1``.

Vertex AI scores these metrics with adaptive rubrics: pass/fail tests its service writes for each
conversation, then judges; the score is the share that pass. Its rubric-writing prompts are not
published, and a small judge asked to write its own rubrics copies the examples it is shown, so
assay fixes one set of rubrics per metric, written after the metric's published definition
(ADK's and Vertex AI's descriptions), each one a yes/no test that holds or fails for any
conversation. The judge answers them as it answers every conversation rubric
(:mod:`assay.metrics.prompts.rubric_multi_turn`: the same system message, the agents, the whole
conversation, then the rubrics as ``[id: ID] text``; the answer
``{"verdicts": [{"id", "rationale", "verdict"}]}`` with the ids closed in the schema), so a prompt
cache that has read the conversation once reuses it for every conversation-level metric.
"""

from __future__ import annotations

from assay.evalset.rubric import Rubric, RubricContent


def _rubric(rubric_id: str, text: str) -> Rubric:
    return Rubric(rubric_id=rubric_id, rubric_content=RubricContent(text_property=text))


TASK_SUCCESS = (
    _rubric(
        "goals_achieved",
        "By the end of the conversation the agent achieved every goal the user pursued, in "
        "every turn and not only the last one.",
    ),
    _rubric(
        "nothing_left_undone",
        "No request of the user was left unanswered, unfinished or declined when the agent could "
        "have fulfilled it.",
    ),
    _rubric(
        "conditions_met",
        "What the agent delivered respects every condition the user set (dates, places, names, "
        "amounts, preferences).",
    ),
    _rubric(
        "outcome_real",
        "Whatever the agent says it found or did is backed by what its tools returned, not only "
        "claimed.",
    ),
    _rubric(
        "user_told",
        "The agent's replies give the user the outcome they need: the answer, or what was done "
        "with its details.",
    ),
)
"""Did the agent achieve the goal or goals of the conversation? (The outcome, not the path.)"""

TRAJECTORY_QUALITY = (
    _rubric(
        "steps_relevant",
        "Every step the agent took (tool calls and replies) served what the user was asking for "
        "at that point.",
    ),
    _rubric(
        "sensible_order",
        "The agent's steps came in a sensible order: it found out what it needed before acting "
        "on it.",
    ),
    _rubric(
        "no_wasted_steps",
        "The agent took no needless, repeated or circular steps and did not ask again for "
        "anything the user had already given.",
    ),
    _rubric(
        "context_kept",
        "The agent built on what earlier turns established (facts, choices, results) instead of "
        "ignoring or contradicting it.",
    ),
    _rubric(
        "instructions_followed",
        "The agent followed its instructions throughout the conversation.",
    ),
)
"""How good is the path the agent took to the goal: relevant, logical and efficient steps?"""

TOOL_USE_QUALITY = (
    _rubric(
        "tool_when_needed",
        "The agent called a tool whenever a request needed information or an action only a tool "
        "could provide, instead of guessing or answering from memory.",
    ),
    _rubric(
        "right_tool",
        "Every tool the agent called was the right one for its purpose among the tools available.",
    ),
    _rubric(
        "right_arguments",
        "Every tool call had correct and complete arguments, taken from the conversation or from "
        "earlier tool results.",
    ),
    _rubric(
        "no_needless_calls",
        "The agent made no unnecessary or repeated tool calls.",
    ),
    _rubric(
        "results_used",
        "The agent used what its tools returned correctly, without misreading or ignoring it.",
    ),
)
"""How well does the agent select and call its tools, and use their results?"""

RUBRICS: dict[str, tuple[Rubric, ...]] = {
    "multi_turn_task_success_v1": TASK_SUCCESS,
    "multi_turn_trajectory_quality_v1": TRAJECTORY_QUALITY,
    "multi_turn_tool_use_quality_v1": TOOL_USE_QUALITY,
}
"""Each metric's rubrics, in the order the judge answers them."""
