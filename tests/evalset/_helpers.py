"""Helpers shared by the eval-set tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.errors import EvalSetError, Problem
from assay.evalset import load_eval_set

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "adk"

WriteFile = Callable[[str, Any], Path]
"""The ``write_file`` fixture: write text, or anything else as JSON, to a file in tmp_path."""


def load_problems(path: Path) -> list[Problem]:
    """The problems :func:`load_eval_set` reports for ``path`` (fails if it loads)."""
    with pytest.raises(EvalSetError) as info:
        load_eval_set(path)
    return info.value.problems


def paths_and_messages(path: Path) -> list[tuple[str, str]]:
    """``(json path, message)`` of every problem, after checking each names ``path``."""
    problems = load_problems(path)
    assert all(problem.file == str(path) for problem in problems)
    return [(problem.path, problem.message) for problem in problems]


def invocation(text: str = "hi", **extra: Any) -> dict[str, Any]:
    """A minimal invocation dict."""
    return {"user_content": {"role": "user", "parts": [{"text": text}]}, **extra}


def eval_set(*cases: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An eval set dict with the given cases."""
    return {"eval_set_id": "s", "eval_cases": list(cases), **extra}


def case(eval_id: str = "c", **extra: Any) -> dict[str, Any]:
    """An eval case dict: a one-turn conversation unless ``extra`` says otherwise."""
    return {"eval_id": eval_id, "conversation": [invocation()], **extra}


# An eval set using most of the schema: both intermediate-data shapes, a scenario case,
# None args next to {} args, a null final_session_state, rubrics and non-ASCII text.
RICH: dict[str, Any] = {
    "eval_set_id": "rich",
    "name": "Rich set",
    "description": 'Ünïcode, "quotes" and\nnewlines',
    "creation_timestamp": 1712345678.25,
    "eval_cases": [
        {
            "eval_id": "static",
            "session_input": {"app_name": "app", "user_id": "u", "state": {"k": [1, None]}},
            "final_session_state": None,
            "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": None}}],
            "conversation": [
                {
                    "invocation_id": "i-0",
                    "user_content": {"role": "user", "parts": [{"text": "yes"}]},
                    "final_response": {"role": "model", "parts": [{"text": None}, {"text": ""}]},
                    "intermediate_data": {
                        "tool_uses": [
                            {"name": "a", "args": None},
                            {"name": "b", "args": {}},
                            {"name": "c", "args": {"x": [1.5, "on", None, True]}},
                        ],
                        "intermediate_responses": [["sub", [{"text": "working"}]]],
                    },
                    "duration": 1.0,
                },
                {
                    "user_content": {"role": "user", "parts": [{"text": "null"}]},
                    "intermediate_data": {
                        "invocation_events": [
                            {
                                "author": "root",
                                "content": {"parts": [{"function_call": {"name": "d"}}]},
                                "usage_metadata": {"prompt_token_count": 4},
                            }
                        ]
                    },
                },
            ],
        },
        {
            "eval_id": "simulated",
            "conversation_scenario": {
                "starting_prompt": "hi",
                "conversation_plan": "plan",
                "user_persona": "EXPERT",
            },
        },
    ],
}
