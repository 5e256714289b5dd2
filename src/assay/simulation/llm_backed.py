"""A simulated user played by an LLM, following a ``conversation_scenario``.

Behaviour of ADK 2.13's ``LlmBackedUserSimulator``:

* the first message is the scenario's ``starting_prompt``, verbatim, with no LLM call;
* once ``max_allowed_invocations`` messages have been produced (the starting prompt counts; -1
  means no limit) the answer is TURN_LIMIT_REACHED;
* every later message is asked of the LLM, with the plan, the conversation so far (see
  :mod:`assay.simulation.history`) and the stop signal;
* a reply that contains the stop signal (compared case-insensitively) is STOP_SIGNAL_DETECTED;
  any other non-empty reply is the next user message.

Where assay differs:

* **The stop signal is the run's.** ADK always uses ``</finished>`` and ignores the
  ``stop_signal`` of ``per_turn_user_simulator_quality_v1``, so a custom signal is never asked
  for, never detected, and then judged missing. Here the one ``stop_signal`` given is used in
  the instructions, in the persona texts and in detection.
* **No reply is a status, not a crash.** An empty (or blank) reply, or a call that failed after
  the client's retries, is NO_MESSAGE_GENERATED with a ``reason``; ADK raises and the inference
  of the case fails with a RuntimeError.
* **Set-up errors come first.** An unknown persona id, or ``custom_instructions`` that do not use
  ``{{ persona }}`` for a scenario with a persona, are errors when the simulator is built; ADK
  finds the latter only when it asks for the second message.
* **Our instructions**, as a system message and a user message (:mod:`assay.simulation.prompts`);
  ``custom_instructions`` are sent as one user message, as ADK sends all of its.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from assay.config.simulator import UserSimulatorConfig
from assay.config.simulator_templates import (
    PERSONA_PLACEHOLDER,
    REQUIRED_PLACEHOLDERS,
    missing_placeholders,
    placeholders,
    render,
)
from assay.errors import UserSimulatorError
from assay.evalset.case import ConversationScenario, UserPersona
from assay.evalset.content import Content, Part
from assay.evalset.invocation import Invocation
from assay.llm.base import LlmError, LlmRequest, Message, TokenUsage, generation_settings
from assay.llm.judge import LlmCaller
from assay.simulation.base import NextUserMessage, SimulatorStatus
from assay.simulation.history import render_history
from assay.simulation.personas import persona_texts, persona_view, resolve_persona
from assay.simulation.prompts import SYSTEM_TEMPLATE, USER_TEMPLATE


def _check_persona(persona: UserPersona) -> None:
    for where, text in persona_texts(persona):
        try:
            placeholders(text)
        except ValueError as exc:
            raise UserSimulatorError(f"user_persona.{where} {exc}") from None


class LlmBackedUserSimulator:
    """Plays the user of one scenario with an LLM; one instance per conversation.

    ``client`` is an :class:`~assay.llm.client.LlmClient` (or anything with its ``generate``),
    so the simulator's calls get the cache, the limits and the retries; ``sample`` is passed to
    it (give each run of a case its own, so runs do not share cached replies). ``agent_name`` is
    the author of the agent's final responses in the history the LLM reads.
    """

    def __init__(
        self,
        scenario: ConversationScenario,
        config: UserSimulatorConfig | None,
        client: LlmCaller,
        stop_signal: str,
        agent_name: str,
        *,
        sample: int = 0,
    ) -> None:
        if not stop_signal.strip():
            raise UserSimulatorError("the stop signal is empty: every reply would contain it")
        self._scenario = scenario
        self._config = config or UserSimulatorConfig()
        self._client = client
        self._stop_signal = stop_signal
        self._agent_name = agent_name
        self._sample = sample
        self._persona = resolve_persona(scenario.user_persona)
        self._messages = 0
        self._usage = TokenUsage()
        if self._persona is not None:
            _check_persona(self._persona)
        custom = self._config.custom_instructions
        if custom is not None:
            required = list(REQUIRED_PLACEHOLDERS)
            if self._persona is not None:
                required.append(PERSONA_PLACEHOLDER)
            problem = missing_placeholders(custom, required)
            if problem is not None:
                with_persona = " (the scenario has a user_persona)" if self._persona else ""
                raise UserSimulatorError(f"custom_instructions {problem}{with_persona}")

    @property
    def stop_signal(self) -> str:
        """What the simulated user writes to end the conversation."""
        return self._stop_signal

    @property
    def persona(self) -> UserPersona | None:
        """The persona the simulated user plays (a built-in one resolved from its id), if any."""
        return self._persona

    @property
    def usage(self) -> TokenUsage:
        """The tokens the simulator's LLM calls have cost so far."""
        return self._usage

    def request(self, history: Sequence[Invocation]) -> LlmRequest:
        """The request that asks for the user's next message after ``history``."""
        values: dict[str, Any] = {
            "stop_signal": self._stop_signal,
            "conversation_plan": self._scenario.conversation_plan,
            "conversation_history": render_history(
                history,
                self._agent_name,
                include_function_calls=self._config.include_function_calls,
            ),
        }
        if self._persona is not None:
            values["persona"] = persona_view(self._persona, partial(_render_text, values=values))
        settings = generation_settings(self._config.model_configuration)
        custom = self._config.custom_instructions
        if custom is not None:
            message = Message(role="user", content=render(custom, values))
            return LlmRequest(messages=(message,), **settings)
        return LlmRequest.user(
            render(USER_TEMPLATE, values), system=render(SYSTEM_TEMPLATE, values), **settings
        )

    async def next_message(self, history: Sequence[Invocation]) -> NextUserMessage:
        """The user's next message after ``history`` (the invocations completed so far)."""
        limit = self._config.limit
        if limit is not None and self._messages >= limit:
            return NextUserMessage.stopped(
                SimulatorStatus.TURN_LIMIT_REACHED,
                f"the simulated user reached max_allowed_invocations ({limit} messages)",
            )
        if self._messages == 0:
            text = self._scenario.starting_prompt
            empty = "the scenario's starting_prompt is empty"
        else:
            try:
                response = await self._client.generate(self.request(history), sample=self._sample)
            except LlmError as exc:
                return NextUserMessage.stopped(
                    SimulatorStatus.NO_MESSAGE_GENERATED,
                    f"the simulated user's model ({self._client.model}) failed: {exc}",
                )
            self._usage = self._usage + response.usage
            text = response.text
            empty = f"the simulated user's model ({self._client.model}) gave an empty reply"
        self._messages += 1
        if self._stop_signal.lower() in text.lower():
            return NextUserMessage.stopped(
                SimulatorStatus.STOP_SIGNAL_DETECTED,
                f"the simulated user wrote the stop signal {self._stop_signal!r}",
            )
        if not text.strip():
            return NextUserMessage.stopped(SimulatorStatus.NO_MESSAGE_GENERATED, empty)
        return NextUserMessage.success(Content(role="user", parts=[Part(text=text)]))


def _render_text(text: str, *, values: Mapping[str, Any]) -> str:
    return render(text, values) if text else ""
