"""Judge replies for tests that run the example end to end over real HTTP.

:func:`verdict_for` answers each kind of judge request the way a judge that approves of
everything would: it reads which judge is asking from the JSON schema's name in the request
(``response_format.json_schema.name``) and echoes the rubric ids and sentences the prompt lists,
so every reply parses. :func:`reject` does the same with failing verdicts.

Both also play the simulated user of a ``conversation_scenario`` (a request with no JSON schema
whose prompt holds a ``# Conversation Plan``), deterministically: after the agent's n-th answer
the user says the n-th quoted message of the plan (``... (for instance: "How much is that in
pounds?")``), and once the quotes are used up, the stop signal the prompt names.
"""

from __future__ import annotations

import json
import re
from typing import Any

_RUBRIC_ID = re.compile(r"^\[id: ([^\]]+)\]", re.MULTILINE)
_NUMBERED = re.compile(r"^\d+\. (.*)$", re.MULTILINE)
_PLAN = "# Conversation Plan"
_HISTORY = "# Conversation History"
_STOP_SIGNAL = re.compile(r"or (.+?) if the conversation is over")
_QUOTED = re.compile(r'"([^"]+)"')
_USER_LINE = re.compile(r"^user: ", re.MULTILINE)


def _schema_name(body: dict[str, Any]) -> str:
    response_format = body.get("response_format") or {}
    return str((response_format.get("json_schema") or {}).get("name", ""))


def _user_text(body: dict[str, Any]) -> str:
    messages = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(messages[-1]["content"]) if messages else ""


def _prompt(body: dict[str, Any]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def _simulated_user(prompt: str) -> str:
    """The user's next message: the plan's next quoted message, else the stop signal."""
    plan, _, history = prompt.rsplit(_PLAN, 1)[1].partition(_HISTORY)
    turns_done = len(_USER_LINE.findall(history))
    quotes = _QUOTED.findall(plan)
    if 1 <= turns_done <= len(quotes):
        return quotes[turns_done - 1]
    signal = _STOP_SIGNAL.search(prompt)
    return signal[1] if signal else "</finished>"


def _answer(body: dict[str, Any], good: bool) -> str:
    name, user = _schema_name(body), _user_text(body)
    if not name and _PLAN in _prompt(body):
        return _simulated_user(_prompt(body))
    if name == "final_response_verdict":
        label = "valid" if good else "invalid"
        return json.dumps({"reasoning": "stub", "is_the_agent_response_valid": label})
    if name == "rubric_verdicts":
        verdict = "yes" if good else "no"
        return json.dumps(
            {
                "verdicts": [
                    {"id": rid, "property": "", "rationale": "stub", "verdict": verdict}
                    for rid in _RUBRIC_ID.findall(user)
                ]
            }
        )
    if name == "rubric_verdict":  # one rubric per question
        return json.dumps({"verdict": "yes" if good else "no"})
    if name == "user_simulator_verdict":
        return json.dumps({"criteria": [], "is_valid": good})
    if name == "sentences":
        answer = user.split("<answer>", 1)[-1].split("</answer>", 1)[0].strip()
        return json.dumps({"sentences": [answer]})
    if name == "sentence_labels":
        label = "supported" if good else "contradictory"
        sentences = [json.loads(s) for s in _NUMBERED.findall(user.split("<sentences>", 1)[-1])]
        return json.dumps(
            {
                "sentences": [
                    {
                        "sentence": s,
                        "label": label,
                        "rationale": "stub",
                        "supporting_excerpt": None,
                        "contradicting_excerpt": None,
                    }
                    for s in sentences
                ]
            }
        )
    if name == "coherence_rating":
        return json.dumps({"explanation": "stub", "rating": "5" if good else "1"})
    if name == "safety_verdict":
        return json.dumps({"reasoning": "stub", "verdict": "safe" if good else "unsafe"})
    return "I cannot tell which judge asked."


def approve(body: dict[str, Any]) -> str:
    """A passing verdict in the format the asking judge wants."""
    return _answer(body, True)


def reject(body: dict[str, Any]) -> str:
    """A failing verdict in the format the asking judge wants."""
    return _answer(body, False)
