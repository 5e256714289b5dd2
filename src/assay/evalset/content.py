"""Content, Part, FunctionCall and FunctionResponse in the JSON shape of ``google.genai.types``.

assay does not depend on google-genai: these models accept every key genai's own models accept
(so ADK files with explicit ``"video_metadata": null`` load), keep the values we do not interpret
as plain JSON, and reject keys genai would reject.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.evalset._base import AssayModel

JsonObject = dict[str, Any]


class FunctionCall(AssayModel):
    """A tool call made by the model. Only ``name`` and ``args`` take part in trajectory matching."""

    id: str | None = None
    name: str | None = None
    args: JsonObject | None = None
    partial_args: list[JsonObject] | None = None
    will_continue: bool | None = None


class FunctionResponse(AssayModel):
    """A tool's answer to a :class:`FunctionCall` (matched to it by ``id``)."""

    id: str | None = None
    name: str | None = None
    response: JsonObject | None = None
    will_continue: bool | None = None
    scheduling: str | None = None
    parts: list[JsonObject] | None = None


class Part(AssayModel):
    """One part of a message: text, a thought, a tool call, a tool response or opaque media."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
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
