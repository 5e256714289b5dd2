"""EvalCase and EvalSet: what is evaluated, in ADK's ``.evalset.json`` shape."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from assay.evalset._base import AssayModel
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric

SessionState = dict[str, Any]


class SessionInput(AssayModel):
    """How to seed the agent's session: app, user, optional fixed session id and initial state."""

    app_name: str
    user_id: str
    session_id: str | None = None
    state: SessionState = Field(default_factory=dict)


class UserBehavior(AssayModel):
    """One behaviour of a simulated user persona."""

    name: str
    description: str = ""
    behavior_instructions: list[str] = Field(default_factory=list)
    violation_rubrics: list[str] = Field(default_factory=list)


class UserPersona(AssayModel):
    """A persona the user simulator adopts."""

    id: str
    description: str = ""
    behaviors: list[UserBehavior] = Field(default_factory=list)


class ConversationScenario(AssayModel):
    """A conversation for a user simulator to play: the first message and the plan to follow.

    ``user_persona`` is a persona object or the id of a built-in persona.
    """

    starting_prompt: str
    conversation_plan: str
    user_persona: UserPersona | str | None = None


class ConversationScenarios(AssayModel):
    """A file of scenarios (ADK's ``--scenarios_file``)."""

    scenarios: list[ConversationScenario] = Field(default_factory=list)


class EvalCase(AssayModel):
    """One case: either a static ``conversation`` or a ``conversation_scenario``, never both."""

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: SessionState | None = Field(default_factory=dict)

    @model_validator(mode="after")
    def _exactly_one_conversation_kind(self) -> EvalCase:
        if self.conversation is not None and self.conversation_scenario is not None:
            raise ValueError(
                "has both 'conversation' and 'conversation_scenario'; give exactly one "
                "(a static conversation, or a scenario for the user simulator)"
            )
        if self.conversation is None and self.conversation_scenario is None:
            raise ValueError(
                "has neither 'conversation' nor 'conversation_scenario'; give exactly one "
                "(a static conversation, or a scenario for the user simulator)"
            )
        return self


class EvalSet(AssayModel):
    """A named set of eval cases."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0

    def case(self, eval_id: str) -> EvalCase | None:
        """The case with this id, or None."""
        return next((c for c in self.eval_cases if c.eval_id == eval_id), None)
