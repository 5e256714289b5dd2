"""A fast check of actual invocations' and eval cases' JSON (msgspec), without building the
models.

A streamed traces file is checked in full as it is read, so that every problem is reported
before scoring starts, and each case's invocations are built into models when the case is
scored. Checking with pydantic would build every model twice; :func:`surely_invocations` builds
none (some 25 times faster). It checks against typed structs that are stricter than the models
(snake_case keys only, no strings taken for numbers or booleans, no ``null`` where a field is
not optional), so what it accepts the models accept; what it rejects is checked again by
pydantic, which accepts it (a camelCase key) or says what is wrong and where (file, JSON path).

Building the models from these structs instead of through pydantic was tried too, and was no
faster (some 0.25 ms a case either way on ``benchmarks/bench_scale.py``'s data).
"""

from __future__ import annotations

from typing import Any

import msgspec

_UNSET = msgspec.UNSET
Unset = msgspec.UnsetType
JsonObject = dict[str, Any]


class _Model(msgspec.Struct, forbid_unknown_fields=True):
    """Unknown keys rejected, as the models do; fields in the models' order."""


class _FunctionCall(_Model):
    id: str | None = None
    name: str | None = None
    args: JsonObject | None = None
    partial_args: list[JsonObject] | None = None
    will_continue: bool | None = None


class _FunctionResponse(_Model):
    id: str | None = None
    name: str | None = None
    response: JsonObject | None = None
    will_continue: bool | None = None
    scheduling: str | None = None
    parts: list[JsonObject] | None = None


class _Part(_Model):
    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: _FunctionCall | None = None
    function_response: _FunctionResponse | None = None
    inline_data: JsonObject | None = None
    file_data: JsonObject | None = None
    executable_code: JsonObject | None = None
    code_execution_result: JsonObject | None = None
    video_metadata: JsonObject | None = None
    media_resolution: Any = None
    tool_call: JsonObject | None = None
    tool_response: JsonObject | None = None
    part_metadata: JsonObject | None = None
    audio_transcription: JsonObject | None = None
    media_processing: Any = None
    speech_metadata: JsonObject | None = None


class _Content(_Model):
    role: str | None = None
    parts: list[_Part] | None = None


class _Event(_Model):
    author: str
    content: _Content | None = None
    grounding_metadata: JsonObject | None = None
    usage_metadata: JsonObject | None = None
    model_version: str | None = None
    invocation_index: Any = None  # written by ADK's web editor, dropped on load
    tool_use_index: Any = None


class _Steps(_Model):
    """Either shape of a turn's steps; :func:`_one_shape` rejects a mix of the two."""

    tool_uses: list[_FunctionCall] | Unset = _UNSET
    tool_responses: list[_FunctionResponse] | Unset = _UNSET
    intermediate_responses: list[tuple[str, list[_Part]]] | Unset = _UNSET
    invocation_events: list[_Event] | Unset = _UNSET


class _RubricContent(_Model):
    text_property: str | None = None


class _Rubric(_Model):
    rubric_id: str
    rubric_content: _RubricContent
    description: str | None = None
    type: str | None = None


class _AgentDetails(_Model):
    name: str
    instructions: str = ""
    tool_declarations: list[Any] = msgspec.field(default_factory=list)


class _AppDetails(_Model):
    agent_details: dict[str, _AgentDetails] = msgspec.field(default_factory=dict)


class _Invocation(_Model, kw_only=True):
    invocation_id: str = ""
    user_content: _Content
    final_response: _Content | None = None
    intermediate_data: _Steps | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[_Rubric] | None = None
    app_details: _AppDetails | None = None


_INVOCATIONS = list[_Invocation]


def _one_shape(steps: _Steps | None) -> bool:
    """Events alone, or the static fields alone (the models have no place for both)."""
    if steps is None or steps.invocation_events is _UNSET:
        return True
    static = (steps.tool_uses, steps.tool_responses, steps.intermediate_responses)
    return all(value is _UNSET for value in static)


_DECODER = msgspec.json.Decoder(_INVOCATIONS, strict=True)


def surely_invocations_json(body: bytes) -> bool:
    """:func:`surely_invocations` of the JSON text ``body``, decoded straight into the structs
    (no dicts built first); False for text msgspec refuses too."""
    try:
        checked = _DECODER.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return False
    return all(_one_shape(invocation.intermediate_data) for invocation in checked)


class _SessionInput(_Model):
    app_name: str
    user_id: str
    session_id: str | None = None
    state: JsonObject = msgspec.field(default_factory=dict)


class _StaticCase(_Model, kw_only=True):
    """An eval case with a static conversation (a scenario is left to the models)."""

    eval_id: str
    conversation: list[_Invocation]
    session_input: _SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[_Rubric] | None = None
    final_session_state: JsonObject | None = None


_CASE_DECODER = msgspec.json.Decoder(_StaticCase, strict=True)


def surely_case_json(body: bytes | str) -> tuple[str, str | None] | None:
    """The ``eval_id`` and app name of the case whose JSON text is ``body``, when the models
    surely accept it; None says only that pydantic must be asked. (A streamed eval set keeps no
    more of a case as it is read; the case is built when it is scored.)"""
    try:
        case = _CASE_DECODER.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    if not all(_one_shape(invocation.intermediate_data) for invocation in case.conversation):
        return None
    session = case.session_input
    return case.eval_id, session.app_name if session is not None else None


def surely_invocations(data: Any) -> bool:
    """Whether ``data`` (parsed JSON) is a list of invocations the models surely accept; False
    says only that pydantic must be asked."""
    try:
        checked = msgspec.convert(data, _INVOCATIONS, strict=True)
    except msgspec.ValidationError:
        return False
    return all(_one_shape(invocation.intermediate_data) for invocation in checked)
