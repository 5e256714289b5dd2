"""ADK's two legacy eval-data shapes, converted to :class:`EvalSet`.

* the per-turn list of ``*.test.json`` (``[{query, expected_tool_use, reference}, ...]``): one
  case for the whole file, its session from an ``initial.session.json`` beside it;
* the list of named cases (``[{name, data: [turns], initial_session}]``) that ``adk eval`` reads.

Unlike ADK, ids are deterministic (the file stem, ``<stem>-<n>`` per turn) rather than random
uuids, so results of two runs on the same file can be compared and traces keyed by ``eval_id``.

ADK reads these shapes key by key and ignores every other key; so do these models, and
:func:`ignored_keys` lists what was ignored so that a typo can be reported as a warning.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.errors import Problem, format_path
from assay.evalset.case import EvalCase, EvalSet, SessionInput
from assay.evalset.content import Content, FunctionCall, JsonObject, Part
from assay.evalset.invocation import IntermediateData, Invocation


class _Legacy(BaseModel):
    """Unknown keys are kept in ``model_extra`` (and reported), never used."""

    model_config = ConfigDict(extra="allow")


class LegacyToolUse(_Legacy):
    """``{"tool_name": ..., "tool_input": {...}}``; ``mock_tool_output`` is accepted and unused."""

    tool_name: str
    tool_input: JsonObject | None
    mock_tool_output: Any = None


class LegacyAgentResponse(_Legacy):
    """An expected intermediate response of a sub-agent."""

    author: str
    text: str | None


class LegacyTurn(_Legacy):
    """One turn of the legacy format."""

    query: str
    expected_tool_use: list[LegacyToolUse] = Field(default_factory=list)
    expected_intermediate_agent_responses: list[LegacyAgentResponse] = Field(default_factory=list)
    reference: str | None = ""


class LegacyInitialSession(_Legacy):
    """An ADK session (``initial.session.json``): only app, user and state are used.

    The other keys of ADK's ``Session`` (``id``, ``events``, ``last_update_time``) are ignored
    without a warning.
    """

    app_name: str = ""
    user_id: str = ""
    state: dict[str, Any] = Field(default_factory=dict)


class LegacyNamedCase(_Legacy):
    """``{"name": ..., "data": [turns], "initial_session": {...}}``."""

    name: str
    data: list[LegacyTurn]
    initial_session: LegacyInitialSession | None = None

    @field_validator("initial_session", mode="before")
    @classmethod
    def _empty_session_is_none(cls, value: Any) -> Any:
        return None if value == {} else value


def _invocation(turn: LegacyTurn, invocation_id: str) -> Invocation:
    return Invocation(
        invocation_id=invocation_id,
        user_content=Content(role="user", parts=[Part(text=turn.query)]),
        final_response=Content(role="model", parts=[Part(text=turn.reference)]),
        intermediate_data=IntermediateData(
            tool_uses=[
                FunctionCall(name=t.tool_name, args=t.tool_input) for t in turn.expected_tool_use
            ],
            intermediate_responses=[
                (r.author, [Part(text=r.text)]) for r in turn.expected_intermediate_agent_responses
            ],
        ),
    )


def _session(initial: LegacyInitialSession | None) -> SessionInput | None:
    if initial is None:
        return None
    return SessionInput(app_name=initial.app_name, user_id=initial.user_id, state=initial.state)


def case_from_turns(
    eval_id: str, turns: list[LegacyTurn], initial: LegacyInitialSession | None
) -> EvalCase:
    """One eval case from a list of legacy turns."""
    return EvalCase(
        eval_id=eval_id,
        conversation=[_invocation(turn, f"{eval_id}-{i}") for i, turn in enumerate(turns)],
        session_input=_session(initial),
    )


def eval_set_from_named_cases(eval_set_id: str, cases: list[LegacyNamedCase]) -> EvalSet:
    """An eval set from the list-of-named-cases shape."""
    return EvalSet(
        eval_set_id=eval_set_id,
        name=eval_set_id,
        eval_cases=[case_from_turns(c.name, c.data, c.initial_session) for c in cases],
    )


# Keys of ADK's Session that a legacy initial session may carry and that eval does not use.
_UNUSED_SESSION_KEYS = frozenset({"id", "events", "last_update_time", "lastUpdateTime"})


def ignored_keys(value: BaseModel | Sequence[BaseModel], file: str) -> list[Problem]:
    """A warning for every unknown key of a validated legacy model or top-level list of them."""
    if isinstance(value, BaseModel):
        paths = list(_unknown_paths(value, ()))
    else:
        paths = [path for i, item in enumerate(value) for path in _unknown_paths(item, (i,))]
    return [
        Problem(file, format_path(path), f"unknown key '{path[-1]}' ignored (ADK ignores it too)")
        for path in paths
    ]


def _unknown_paths(model: BaseModel, at: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    skip = _UNUSED_SESSION_KEYS if isinstance(model, LegacyInitialSession) else frozenset()
    for key in model.model_extra or {}:
        if key not in skip:
            yield (*at, key)
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _unknown_paths(value, (*at, name))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _unknown_paths(item, (*at, name, i))
