"""Sessions out: ADK-format traces JSON (``{id: [Invocation, ...]}``) and a draft eval set."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assay.evalset.case import EvalCase, EvalSet, SessionInput
from assay.evalset.invocation import Invocation
from assay.traces.sessions import Session

DEFAULT_CASE_KEY = "gen_ai.conversation.id"
"""The attribute naming the eval case a session is scored as, unless another is named; a
session without it is keyed by its session id (or, with none, its first trace id)."""


def session_key(session: Session, attribute: str | None = None) -> str:
    """The case key of a session: the root spans' ``attribute`` (the default one when None),
    else the session id."""
    value = session.attributes.get(attribute or DEFAULT_CASE_KEY)
    return str(value) if isinstance(value, str | int) and str(value) else session.session_id


def invocation_json(invocation: Invocation) -> dict[str, Any]:
    """An invocation as ADK writes it (snake_case keys, no nulls)."""
    return invocation.model_dump(mode="json", exclude_none=True)


def traces_json(sessions: Iterable[Session], attribute: str | None = None) -> dict[str, Any]:
    """``{case key: [Invocation JSON, ...]}``, what ``assay eval --traces`` reads back."""
    return dict(_entries(sessions, attribute))


def _entries(sessions: Iterable[Session], attribute: str | None) -> Iterator[tuple[str, Any]]:
    seen: dict[str, int] = {}
    for session in sessions:
        key = session_key(session, attribute)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:  # two sessions with one key: the second kept apart, not as a run
            key = f"{key}~{seen[key]}"
        yield key, [invocation_json(i) for i in session.invocations]


def write_traces_json(
    sessions: Iterable[Session], out: str | Path, attribute: str | None = None
) -> int:
    """Write the traces JSON a session at a time (atomically); the number of sessions."""
    path = Path(out)
    handle, name = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent or ".")
    count = 0
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write("{")
            for key, invocations in _entries(sessions, attribute):
                file.write(",\n" if count else "\n")
                file.write(f"  {json.dumps(key, ensure_ascii=False)}: ")
                file.write(json.dumps(invocations, ensure_ascii=False))
                count += 1
            file.write("\n}\n")
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return count


def draft_case(session: Session, attribute: str | None = None) -> EvalCase:
    """A session as an eval case whose expected turns are what happened (durations dropped:
    they are measured, never expected)."""
    conversation = [
        i.model_copy(update={"duration": None, "model_duration": None, "tool_duration": None})
        for i in session.invocations
    ]
    app = str(session.attributes.get("gen_ai.agent.name") or "agent")
    return EvalCase(
        eval_id=session_key(session, attribute),
        conversation=conversation,
        session_input=SessionInput(app_name=app, user_id="user"),
        creation_timestamp=conversation[0].creation_timestamp if conversation else 0.0,
    )


def draft_evalset(
    sessions: Iterable[Session], eval_set_id: str, attribute: str | None = None
) -> EvalSet:
    """The sessions as a draft eval set: those with a problem, no invocations or no message
    content (no user message to replay) are left out."""
    cases: list[EvalCase] = []
    seen: set[str] = set()
    for session in sessions:
        if session.problem is not None or not session.invocations or session.content_missing:
            continue
        case = draft_case(session, attribute)
        if case.eval_id in seen:
            case.eval_id = f"{case.eval_id}~{len(seen)}"
        seen.add(case.eval_id)
        cases.append(case)
    return EvalSet(
        eval_set_id=eval_set_id,
        name=eval_set_id,
        description="Drafted by assay traces to-evalset from recorded sessions: expected = "
        "what happened. Review each case before relying on it.",
        eval_cases=cases,
    )
