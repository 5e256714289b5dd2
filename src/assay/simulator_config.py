"""``user_simulator_config``: how the simulated user of a ``conversation_scenario`` is played.

ADK 2.13's ``LlmBackedUserSimulatorConfig``, field for field: ``type`` (the discriminator,
``"llm_backed"``, the default when missing as in ADK), ``model``, ``model_configuration``,
``max_allowed_invocations``, ``custom_instructions`` and ``include_function_calls``. Keys are
read in snake_case or camelCase.

Stricter than ADK, which allows unknown keys here: an unknown key is an error naming it, and so
are a ``max_allowed_invocations`` that is neither -1 (no limit) nor at least 1, and ADK's audio
simulator (``"type": "llm_audio"``), which assay does not provide.

It lives beside :mod:`assay.config`, not in :mod:`assay.simulation`, because ``EvalConfig`` holds
it: the config is read below the LLM layer and the simulators that use it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from assay.evalset._base import AssayModel
from assay.simulator_templates import REQUIRED_PLACEHOLDERS, missing_placeholders

DEFAULT_SIMULATOR_MODEL = "gemini-2.5-flash"
DEFAULT_MAX_ALLOWED_INVOCATIONS = 20
NO_LIMIT = -1


class UserSimulatorConfig(AssayModel):
    """The LLM-backed user simulator's settings."""

    type: Literal["llm_backed"] = "llm_backed"
    """Which simulator: ADK's ``llm_backed`` (the only one assay has)."""
    model: str = Field(default=DEFAULT_SIMULATOR_MODEL, min_length=1)
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
        if value == "llm_audio":
            raise ValueError(
                "ADK's audio user simulator ('llm_audio') is not available in assay; "
                "use 'llm_backed' (the default)"
            )
        if value != "llm_backed":
            raise ValueError(f"expected 'llm_backed' (the only user simulator); got {value!r}")
        return value

    @field_validator("max_allowed_invocations", mode="before")
    @classmethod
    def _no_boolean_limit(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic would read true as 1
            raise ValueError(f"expected an integer; got {str(value).lower()}")
        return value

    @field_validator("max_allowed_invocations")
    @classmethod
    def _a_limit_or_none(cls, value: int) -> int:
        if value != NO_LIMIT and value < 1:
            raise ValueError(
                f"expected -1 (no limit) or a number of user messages of at least 1; got {value}"
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
        """``max_allowed_invocations``, or None for no limit."""
        return None if self.max_allowed_invocations == NO_LIMIT else self.max_allowed_invocations
