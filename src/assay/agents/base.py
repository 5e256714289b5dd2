"""What assay evaluates: an agent that answers one user turn at a time.

An agent gets the user's message and the :class:`Session` (its id, its state, the turns so far)
and returns an :class:`AgentTurn`: the turn's events (tool calls, tool responses, text) and its
final response. The runner turns that into an ADK ``Invocation``.

Agents written in plain Python may return something simpler; :func:`to_turn` accepts

* a string: the final response, no tool calls;
* a :class:`TurnResult` (or a dict of its shape): the final response and the tool calls made,
  each with its arguments and, when known, its response;
* a list of events (:class:`~assay.evalset.invocation.InvocationEvent` or dicts of ADK's event
  shape): the last event whose content has text and no function call or response is the final
  response, as ADK's ``is_final_response`` picks it; the others are the turn's steps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, TypeAdapter, ValidationError

from assay.evalset._base import AssayModel
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, FunctionCall, FunctionResponse, Part
from assay.evalset.invocation import AppDetails, Invocation, InvocationEvent


class AgentError(Exception):
    """An agent failed a turn: it raised, timed out, or returned something unusable.
    ``retryable`` False says a fresh attempt cannot do better (its model's credentials are
    missing or refused), so the conversation is not run again."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class CaseContext:
    """What an agent factory is told about the conversation it makes an agent for: the case,
    every case of its eval set (an agent built from the eval set, such as a model given the
    recorded tool declarations, looks there), and which run of the case this is (1-based)."""

    case: EvalCase
    cases: Sequence[EvalCase] = ()
    run: int = 1


@dataclass
class Session:
    """One conversation's session, fresh for every case and run.

    ``state`` starts as the case's ``session_input.state`` (a copy) and is the agent's to change;
    ``history`` holds the turns completed so far. ``call_tool`` runs a tool the way the run is
    set up: the real function, or, with ``--mock-tools``, the response recorded in the eval case.
    """

    app_name: str
    user_id: str
    session_id: str
    state: dict[str, Any] = field(default_factory=dict)
    history: list[Invocation] = field(default_factory=list)
    tool_runner: ToolRunner | None = None

    async def call_tool(
        self, name: str, args: Mapping[str, Any], function: Callable[..., Any] | None = None
    ) -> Any:
        """Run tool ``name`` with ``args``: through the run's tool runner when there is one
        (mocked tools), else ``function(**args)`` (awaited when it is a coroutine)."""
        if self.tool_runner is not None:
            return await self.tool_runner(name, dict(args), function)
        if function is None:
            raise AgentError(f"tool {name!r} has no function and tools are not mocked")
        result = function(**args)
        return await result if isinstance(result, Awaitable) else result


ToolRunner = Callable[[str, dict[str, Any], Callable[..., Any] | None], Awaitable[Any]]


class ToolCall(AssayModel):
    """One tool call of a :class:`TurnResult`."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    response: Any = None


class TurnResult(AssayModel):
    """The simple answer to a turn: what the agent said and which tools it called."""

    final_response: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)


@dataclass
class AgentTurn:
    """One turn as the runner records it."""

    events: list[InvocationEvent] = field(default_factory=list)
    final_response: Content | None = None


@runtime_checkable
class Agent(Protocol):
    """An agent under evaluation."""

    @property
    def name(self) -> str:
        """The agent's name: the author of its events."""
        ...

    async def turn(self, user: Content, session: Session) -> AgentTurn:
        """Answer one user message."""
        ...

    def app_details(self) -> AppDetails | None:
        """The agent's instructions and tool declarations, when known (the judges use them)."""
        ...

    async def aclose(self) -> None:
        """Release what the agent holds."""
        ...


class WrappedAgent:
    """An agent that answers as the agent it wraps: subclasses change what closing it does."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def name(self) -> str:
        return self._agent.name

    async def turn(self, user: Content, session: Session) -> AgentTurn:
        return await self._agent.turn(user, session)

    def app_details(self) -> AppDetails | None:
        return self._agent.app_details()

    async def aclose(self) -> None:
        await self._agent.aclose()


AgentFactory = Callable[[CaseContext], "Agent | Awaitable[Agent]"]
"""Makes a fresh agent for one case and run (sync or async)."""


_EVENTS = TypeAdapter(list[InvocationEvent])


def _model_text(text: str) -> Content:
    return Content(role="model", parts=[Part(text=text)])


def _is_final(event: InvocationEvent) -> bool:
    parts = event.content.parts if event.content is not None else None
    if not parts:
        return False
    has_text = any(p.text and not p.thought for p in parts)
    has_calls = any(p.function_call is not None or p.function_response is not None for p in parts)
    return has_text and not has_calls


def turn_from_events(events: Sequence[InvocationEvent]) -> AgentTurn:
    """Split events into the steps and the final response (the last text-only event)."""
    finals = [i for i, event in enumerate(events) if _is_final(event)]
    if not finals:
        return AgentTurn(events=list(events))
    last = finals[-1]
    return AgentTurn(
        events=[event for i, event in enumerate(events) if i != last],
        final_response=events[last].content,
    )


def turn_from_result(result: TurnResult, author: str) -> AgentTurn:
    """A simple result as events: each call, then its response when the agent gave one."""
    events: list[InvocationEvent] = []
    for index, call in enumerate(result.tool_calls):
        call_id = call.id or f"call_{index}"
        events.append(
            InvocationEvent(
                author=author,
                content=Content(
                    role="model",
                    parts=[
                        Part(function_call=FunctionCall(id=call_id, name=call.name, args=call.args))
                    ],
                ),
            )
        )
        if call.response is not None:
            response = (
                call.response if isinstance(call.response, dict) else {"result": call.response}
            )
            events.append(
                InvocationEvent(
                    author=author,
                    content=Content(
                        role="user",
                        parts=[
                            Part(
                                function_response=FunctionResponse(
                                    id=call_id, name=call.name, response=response
                                )
                            )
                        ],
                    ),
                )
            )
    final = None if result.final_response is None else _model_text(result.final_response)
    return AgentTurn(events=events, final_response=final)


def to_turn(value: Any, author: str) -> AgentTurn:
    """Whatever a Python agent returned, as an :class:`AgentTurn` (see the module docstring)."""
    if isinstance(value, AgentTurn):
        return value
    if isinstance(value, str):
        return AgentTurn(final_response=_model_text(value))
    if isinstance(value, TurnResult):
        return turn_from_result(value, author)
    try:
        if isinstance(value, Mapping):
            return turn_from_result(TurnResult.model_validate(value), author)
        if isinstance(value, Sequence):
            return turn_from_events(_EVENTS.validate_python(list(value)))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the value"
        raise AgentError(
            f"the agent returned an unusable turn: at {where}: {first['msg']}"
        ) from None
    raise AgentError(
        "the agent returned "
        f"{type(value).__name__}; expected a string, a TurnResult (final_response, tool_calls) "
        "or a list of events"
    )
