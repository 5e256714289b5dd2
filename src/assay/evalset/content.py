"""Content, Part, FunctionCall and FunctionResponse in the JSON shape of ``google.genai.types``.

assay does not depend on google-genai: these models accept every key genai's own models accept
(so ADK files with explicit ``"video_metadata": null`` load), keep the values we do not interpret
as plain JSON, and reject keys genai would reject.

The genai objects kept as plain JSON (:data:`GenaiObject`: usage and grounding metadata, blobs,
file data, ...) are normalised as genai's models would give them: keys in snake_case, null
values left out (a null field of a genai model is an unset one). Free-form maps (``args``,
``response``, ``part_metadata``) are kept exactly as written.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field
from pydantic.alias_generators import to_snake

from assay.evalset._base import AssayModel

JsonObject = dict[str, Any]


def genai_json(value: Any) -> Any:
    """A genai object's JSON with snake_case keys and no null values, at every depth.

    ``{"mimeType": "image/png", "displayName": null}`` -> ``{"mime_type": "image/png"}``. Only for
    genai objects, whose keys are all field names: never for free-form maps.
    """
    if isinstance(value, dict):
        return {
            to_snake(k) if isinstance(k, str) else k: genai_json(v)
            for k, v in value.items()
            if v is not None
        }
    if isinstance(value, list):
        return [genai_json(item) for item in value]
    return value


GenaiObject = Annotated[JsonObject, AfterValidator(genai_json)]
"""A genai object kept as JSON (camelCase or snake_case keys in; snake_case, no nulls kept)."""


class FunctionCall(AssayModel):
    """A tool call made by the model. Only ``name`` and ``args`` take part in trajectory matching."""

    id: str | None = None
    name: str | None = None
    args: JsonObject | None = None
    partial_args: list[GenaiObject] | None = None
    will_continue: bool | None = None


class FunctionResponse(AssayModel):
    """A tool's answer to a :class:`FunctionCall` (matched to it by ``id``)."""

    id: str | None = None
    name: str | None = None
    response: JsonObject | None = None
    will_continue: bool | None = None
    scheduling: str | None = None
    parts: list[GenaiObject] | None = None


class Part(AssayModel):
    """One part of a message: text, a thought, a tool call, a tool response or opaque media."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: GenaiObject | None = None
    file_data: GenaiObject | None = None
    executable_code: GenaiObject | None = None
    code_execution_result: GenaiObject | None = None
    video_metadata: GenaiObject | None = None
    media_resolution: Annotated[Any, AfterValidator(genai_json)] = None
    tool_call: JsonObject | None = None
    tool_response: JsonObject | None = None
    part_metadata: JsonObject | None = None
    audio_transcription: GenaiObject | None = None
    media_processing: Any = None
    speech_metadata: GenaiObject | None = None


class Content(AssayModel):
    """A message: a role (``user`` or ``model``) and its parts."""

    role: str | None = None
    parts: list[Part] | None = Field(default=None)

    @classmethod
    def from_text(cls, text: str, role: str = "model") -> Content:
        """A one-part text message."""
        return cls(role=role, parts=[Part(text=text)])


def content_text(content: Content | None) -> str:
    """The text of every part that has non-empty text, joined with newlines (thoughts included).

    This is how ADK reads a response for ROUGE and the judges; no content gives ``""``.
    """
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)
