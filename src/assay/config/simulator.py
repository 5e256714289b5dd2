"""``user_simulator_config``: how the simulated user of a ``conversation_scenario`` is played.

ADK 2.13's ``LlmBackedUserSimulatorConfig``, field for field: ``type`` (the discriminator,
``"llm_backed"``, the default when missing as in ADK), ``model``, ``model_configuration``,
``max_allowed_invocations``, ``custom_instructions`` and ``include_function_calls``. Keys are
read in snake_case or camelCase.

As in ADK, unknown keys load (they are kept, and :mod:`assay.config` reports each as a warning),
and so does ADK's audio simulator (``"type": "llm_audio"``, :class:`AudioUserSimulatorConfig`),
which assay does not provide: a scenario case is then NOT_EVALUATED, with the reason.
``max_allowed_invocations`` is any integer, as in ADK: -1 is no limit, and a limit below 1 stops
the conversation before its first message (the config loader warns about it).

It lives beside :mod:`assay.config`, not in :mod:`assay.simulation`, because ``EvalConfig`` holds
it: the config is read below the LLM layer and the simulators that use it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, field_validator

from assay.config.simulator_templates import REQUIRED_PLACEHOLDERS, missing_placeholders
from assay.errors import short_value
from assay.evalset._base import AssayModel

DEFAULT_SIMULATOR_MODEL = "gemini-2.5-flash"
DEFAULT_AUDIO_MODEL = "cloud_tts"
DEFAULT_MAX_ALLOWED_INVOCATIONS = 20
NO_LIMIT = -1


SimulatorType = Literal["llm_backed", "llm_audio"]


class UserSimulatorConfig(AssayModel):
    """The LLM-backed user simulator's settings. Unknown keys are kept (as ADK keeps them)."""

    model_config = ConfigDict(extra="allow")

    type: SimulatorType = "llm_backed"
    """Which simulator: ADK's ``llm_backed`` (the only one assay has), or ``llm_audio``
    (:class:`AudioUserSimulatorConfig`, which loads but cannot play a scenario in assay)."""
    model: str = DEFAULT_SIMULATOR_MODEL
    """The model that plays the user (any model string a judge accepts)."""
    model_configuration: dict[str, Any] | None = None
    """Generation settings, as a criterion's ``judge_model_config``: ``temperature`` and
    ``max_output_tokens`` are read, the rest is passed to the backend. Unset: the backend's
    defaults (ADK's default asks Gemini for a 10240-token thinking budget)."""
    max_allowed_invocations: int = DEFAULT_MAX_ALLOWED_INVOCATIONS
    """The most user messages in one conversation, the starting prompt included; -1: no limit."""
    custom_instructions: str | None = None
    """A Jinja template replacing our instructions; it must use ``{{ stop_signal }}``,
    ``{{ conversation_plan }}`` and ``{{ conversation_history }}`` (and ``{{ persona }}`` when a
    scenario has a persona)."""
    include_function_calls: bool = False
    """Show the simulated user the agent's tool calls and their responses too."""

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, value: Any) -> Any:
        if value is None:  # ADK: a missing or null type is the legacy default
            return "llm_backed"
        if value not in ("llm_backed", "llm_audio"):
            raise ValueError(
                f"expected 'llm_backed' (the default) or 'llm_audio'; got {short_value(value)}"
            )
        return value

    @field_validator("custom_instructions")
    @classmethod
    def _usable_template(cls, value: str | None) -> str | None:
        if value is None:
            return value
        problem = missing_placeholders(value, REQUIRED_PLACEHOLDERS)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def limit(self) -> int | None:
        """``max_allowed_invocations``, or None for no limit (a limit below 1 allows no message,
        as in ADK)."""
        return None if self.max_allowed_invocations == NO_LIMIT else self.max_allowed_invocations


class AudioUserSimulatorConfig(UserSimulatorConfig):
    """ADK's ``llm_audio`` simulator's settings: the text simulator's, and the voice's. They are
    checked as ADK checks them, but assay cannot play the user's audio: a scenario case scored
    with this config is NOT_EVALUATED."""

    type: SimulatorType = "llm_audio"
    audio_model: str = DEFAULT_AUDIO_MODEL
    """The model that speaks the simulated user's messages."""
    audio_model_configuration: dict[str, Any] | None = None
    """The voice model's generation settings."""
    include_text_with_audio: bool = True
    """Send the message's text along with its audio."""
