"""ADK agents (``assay[adk]``): an ADK agent run through ADK's own ``Runner``, as ``adk eval`` runs it.

Each conversation gets a fresh runner with in-memory session, artifact and memory services, and
one ADK session created from the case's ``session_input`` (app name, user id, session id, state)
and kept for every turn. Each user message is one ``run_async`` call; its events become the turn
the way ADK 2.13's evaluation generator turns them into an ``Invocation``:

* events written by ``user`` are skipped;
* the final response is the last event ``Event.is_final_response()`` accepts (one with text
  wins over one without);
* every event with a tool call, a tool response, text or inline data (or grounding metadata)
  is a step, with its own author (sub-agents and ``transfer_to_agent`` included); the final
  response's own event stays in the steps without its content, as ADK records it;
* ``app_details`` lists, for each agent that called its model in the turn, the system
  instruction and tool declarations of the request it sent, read from the first such call.

A tool that is itself an agent (``AgentTool``) is recorded as ADK records it: the outer call
and its response. Its agent runs in a runner of its own that ADK does not report; with
``ASSAY_ADK_NESTED_EVENTS=1`` (or ``nested_events=True``) its events are recorded too, with
the inner agent as author, between the call and the response. They are off by default because
their tool calls would count in the tool trajectory, which ADK's does not.

With ``--mock-tools`` every tool call except ADK's own control tools (``transfer_to_agent``,
``exit_loop``, ...) is answered by the session's tool runner (the responses recorded in the
case) and the tool does not run; an ``AgentTool`` is answered the same way, so its agent does
not run either. This is done by a runner plugin: the user's agent objects are not changed.

ADK's log messages are kept quiet while ADK agents run (``google_adk`` logger at CRITICAL,
restored afterwards) unless ``ASSAY_DEBUG`` is set or that logger already has a level.
Failures inside ADK (a model error, a tool that raises) propagate; the inference stage makes
the case NOT_EVALUATED with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pydantic_core

from assay.agents.base import (
    Agent,
    AgentError,
    AgentFactory,
    AgentTurn,
    CaseContext,
    Session,
    ToolRunner,
)
from assay.agents.python import AgentLoadError
from assay.evalset.content import Content
from assay.evalset.invocation import AgentDetails, AppDetails, InvocationEvent
from assay.llm.redact import redact

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events.event import Event
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import Runner
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types

NESTED_EVENTS_ENV = "ASSAY_ADK_NESTED_EVENTS"
"""Set to 1 to record the events of agents run as tools (``AgentTool``)."""

REQUEST_ID_KEY = "__llm_request_key__"
"""Where ADK's evaluation keeps the id of the model request in flight: in the session state
(so the agent sees the same state as under ``adk eval``), then on the response's metadata."""

CONTROL_TOOLS = frozenset(
    {
        "transfer_to_agent",
        "exit_loop",
        "set_model_response",
        "finish_task",
        "task_completed",
        "adk_request_confirmation",
        "adk_request_credential",
        "adk_request_input",
    }
)
"""ADK's own tools, which steer the run: never mocked."""

_USER_AUTHOR = "user"
_DEFAULT_AUTHOR = "agent"
_PLUGIN_NAME = "assay_eval"
_RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)
_ADK_LOGGER = "google_adk"


def _require_adk(source: str) -> None:
    try:
        import google.adk  # noqa: F401
    except ImportError:
        raise AgentLoadError(
            f"--agent {source!r} is an ADK agent, but google-adk is not installed: "
            "pip install 'assay[adk]'"
        ) from None


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def adk_agent_factory(
    root_agent: Any,
    *,
    source: str,
    app: Any = None,
    reset: Callable[[], object] | None = None,
    nested_events: bool | None = None,
) -> AgentFactory:
    """The factory for an ADK agent: a fresh :class:`AdkAgent` (runner, session) per conversation.

    ``source`` names the agent in messages. ``app`` is the ``google.adk.apps.App`` the agent's
    module exposes, if any: its plugins and settings then take part, as in ``adk eval``.
    ``reset`` is the module's ``reset_data``, called before each conversation as ADK does.
    ``nested_events`` records the events of agents used as tools (default: the
    ``ASSAY_ADK_NESTED_EVENTS`` environment variable).
    """
    _require_adk(source)
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps.app import App

    if not isinstance(root_agent, BaseAgent):
        raise AgentLoadError(
            f"--agent {source!r}: {type(root_agent).__name__} is not an ADK agent "
            "(expected a google.adk.agents.BaseAgent such as an LlmAgent)"
        )
    if app is not None and not isinstance(app, App):
        raise AgentLoadError(
            f"--agent {source!r}: app is a {type(app).__name__}, expected a google.adk App"
        )
    keep_nested = _env_flag(NESTED_EVENTS_ENV) if nested_events is None else nested_events

    def make(context: CaseContext) -> Agent:
        if reset is not None:
            reset()
        return AdkAgent(root_agent, app=app, nested_events=keep_nested)

    return make


@dataclass
class _Recorder:
    """What the runner plugin shares with the agent: the model requests of the turn (to build
    ``app_details``), the events of nested runs, and the tool runner of ``--mock-tools``."""

    keep_nested: bool
    session_ids: set[str] = field(default_factory=set)
    requests: dict[str, LlmRequest] = field(default_factory=dict)
    nested: list[Event] = field(default_factory=list)
    tool_runner: ToolRunner | None = None
    next_id: int = 0

    def before_model(self, state: Any, request: LlmRequest) -> None:
        """Keep the request under a new id, noted in the state; make sure it retries."""
        self.next_id += 1
        request_id = f"assay-request-{self.next_id}"
        self.requests[request_id] = request
        state[REQUEST_ID_KEY] = request_id
        _ensure_retry_options(request)

    def after_model(self, state: Any, response: LlmResponse) -> None:
        """Tag the response (hence its event) with the id of the request it answers."""
        if REQUEST_ID_KEY in state:
            if response.custom_metadata is None:
                response.custom_metadata = {}
            response.custom_metadata[REQUEST_ID_KEY] = state[REQUEST_ID_KEY]

    async def before_tool(self, name: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The recorded answer when tools are mocked, else ``None`` (the tool runs)."""
        if self.tool_runner is None or name in CONTROL_TOOLS:
            return None
        answer = await self.tool_runner(name, dict(args), None)
        return answer if isinstance(answer, dict) else {"result": answer}

    def on_event(self, session_id: str, event: Event) -> None:
        """Keep the events of runs in other sessions (agents run as tools), when asked to."""
        if self.keep_nested and session_id not in self.session_ids:
            self.nested.append(event)

    def request_of(self, event: Event) -> LlmRequest | None:
        """The model request an event answers, if it came from a model call."""
        metadata = event.custom_metadata or {}
        request_id = metadata.get(REQUEST_ID_KEY)
        return self.requests.get(request_id) if isinstance(request_id, str) else None


_AUTH_ERRORS = frozenset({"AuthenticationError", "PermissionDeniedError"})
"""LiteLLM's (and OpenAI's) exceptions for a missing or refused key, by class name."""
_MISSING_KEY = (
    "No API key was provided",
    "Missing key inputs argument",
    "API key not valid",
    "API_KEY_INVALID",
)
"""What google-genai and Google's API say of a missing or invalid key."""


def credentials_refused(exc: BaseException) -> str | None:
    """Why ``exc``, raised by an ADK agent's run, says its model's credentials are missing or
    refused (HTTP 401/403, a key google-genai or LiteLLM reports missing or invalid): a failure
    a fresh attempt cannot mend. None for any other failure."""
    code = getattr(exc, "code", None) or getattr(exc, "status_code", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc)
    if not (code in (401, 403) or names & _AUTH_ERRORS or any(m in text for m in _MISSING_KEY)):
        return None
    return redact(
        f"the agent's model has no usable credentials ({type(exc).__name__}: {text}); set "
        "the key its model reads (GOOGLE_API_KEY for Gemini) and run again; not retried"
    )


def _ensure_retry_options(request: LlmRequest) -> None:
    """Give the model call HTTP retries when the agent set none, as ADK's evaluation does."""
    from google.genai import types

    config = request.config or types.GenerateContentConfig()
    request.config = config
    config.http_options = config.http_options or types.HttpOptions()
    config.http_options.retry_options = config.http_options.retry_options or (
        types.HttpRetryOptions(
            attempts=7,
            initial_delay=5.0,
            max_delay=120,
            exp_base=2.0,
            http_status_codes=list(_RETRY_STATUS_CODES),
        )
    )


@functools.cache
def _plugin_type() -> Callable[[_Recorder], BasePlugin]:
    """The runner plugin class (made on first use, so this module imports without ADK)."""
    from google.adk.plugins.base_plugin import BasePlugin

    class AssayPlugin(BasePlugin):
        """Hands every callback assay needs to a :class:`_Recorder`."""

        def __init__(self, recorder: _Recorder) -> None:
            super().__init__(name=_PLUGIN_NAME)
            self.recorder = recorder

        async def before_model_callback(
            self, *, callback_context: CallbackContext, llm_request: LlmRequest
        ) -> LlmResponse | None:
            self.recorder.before_model(callback_context.state, llm_request)
            return None

        async def after_model_callback(
            self, *, callback_context: CallbackContext, llm_response: LlmResponse
        ) -> LlmResponse | None:
            self.recorder.after_model(callback_context.state, llm_response)
            return None

        async def before_tool_callback(
            self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
        ) -> dict[str, Any] | None:
            return await self.recorder.before_tool(tool.name, tool_args)

        async def on_event_callback(
            self, *, invocation_context: InvocationContext, event: Event
        ) -> Event | None:
            self.recorder.on_event(invocation_context.session.id, event)
            return None

    return AssayPlugin


class _QuietAdkLogs:
    """Raises the ``google_adk`` logger to CRITICAL while any ADK run is in progress and puts
    its level back after the last one, unless ``ASSAY_DEBUG`` is set or the logger has a level
    of its own (someone configured it)."""

    def __init__(self) -> None:
        self._depth = 0
        self._changed = False

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        logger = logging.getLogger(_ADK_LOGGER)
        if self._depth == 0:
            self._changed = logger.level == logging.NOTSET and not os.environ.get("ASSAY_DEBUG")
            if self._changed:
                logger.setLevel(logging.CRITICAL)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._changed:
                logger.setLevel(logging.NOTSET)
                self._changed = False


_quiet_adk_logs = _QuietAdkLogs()


def _json(value: Any) -> Any:
    """A genai object as plain JSON: snake_case keys, no nulls, bytes as base64."""
    return pydantic_core.to_jsonable_python(value, by_alias=False, exclude_none=True, fallback=str)


def _to_genai(content: Content) -> types.Content:
    from google.genai import types

    return types.Content.model_validate_json(content.model_dump_json(exclude_none=True))


def _from_genai(content: types.Content | None) -> Content | None:
    return None if content is None else Content.model_validate(_json(content))


def _is_user(event: Event) -> bool:
    return (event.author or _DEFAULT_AUTHOR).lower() == _USER_AUTHOR


def _has_step(event: Event) -> bool:
    parts = event.content.parts if event.content is not None else None
    if not parts:
        return event.grounding_metadata is not None
    return event.grounding_metadata is not None or any(
        p.function_call or p.function_response or p.text or p.inline_data for p in parts
    )


def _final_event(events: Sequence[Event]) -> Event | None:
    """The last final-response event; one with text is not replaced by one without."""
    final: Event | None = None
    for event in events:
        if _is_user(event) or event.content is None or not event.content.parts:
            continue
        if not event.is_final_response():
            continue
        has_text = any(p.text for p in event.content.parts)
        final_has_text = (
            final is not None
            and final.content is not None
            and any(p.text for p in final.content.parts or [])
        )
        if has_text or not final_has_text:
            final = event
    return final


def _step(event: Event, final: Event | None) -> InvocationEvent:
    keep_content = event is not final or bool(event.get_function_calls())
    return InvocationEvent(
        author=event.author,
        content=_from_genai(event.content) if keep_content else None,
        grounding_metadata=_json(event.grounding_metadata) if event.grounding_metadata else None,
        usage_metadata=_json(event.usage_metadata) if event.usage_metadata else None,
        model_version=getattr(event, "model_version", None),  # not on ADK 1.x events
    )


def turn_from_adk_events(events: Sequence[Event], nested: Sequence[Event] = ()) -> AgentTurn:
    """One turn's ADK events as ADK's evaluation records them (see the module docstring).

    ``nested`` are those of ``events`` that came from agents run as tools: they are steps,
    never the final response.
    """
    inner = {id(event) for event in nested}
    final = _final_event([e for e in events if id(e) not in inner])
    steps = [_step(e, final) for e in events if not _is_user(e) and _has_step(e)]
    return AgentTurn(events=steps, final_response=_from_genai(final.content) if final else None)


def _instructions(request: LlmRequest) -> str:
    instruction = request.config.system_instruction if request.config else None
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    parts = getattr(instruction, "parts", None)
    if parts is not None:
        return "\n".join(p.text for p in parts if getattr(p, "text", None))
    return str(instruction)


def _app_details(events: Sequence[Event], recorder: _Recorder) -> AppDetails:
    """Per author, the instructions and tool declarations of its first model request."""
    details: dict[str, AgentDetails] = {}
    for event in events:
        if event.author == _USER_AUTHOR or event.author in details:
            continue
        request = recorder.request_of(event)
        if request is None:
            continue
        tools = (request.config.tools if request.config else None) or []
        details[event.author] = AgentDetails(
            name=event.author,
            instructions=_instructions(request),
            tool_declarations=[_json(tool) for tool in tools],
        )
    return AppDetails(agent_details=details)


class AdkAgent:
    """One conversation with an ADK agent, through its own runner (see the module docstring)."""

    def __init__(self, root_agent: Any, *, app: Any = None, nested_events: bool = False) -> None:
        self._root = root_agent
        self._app = app
        self._recorder = _Recorder(keep_nested=nested_events)
        self._runner: Runner | None = None
        self._details: AppDetails | None = None

    @property
    def name(self) -> str:
        """The root agent's name."""
        return str(self._root.name)

    def app_details(self) -> AppDetails | None:
        """The last turn's agents: instructions and tool declarations, as ADK records them."""
        return self._details

    async def turn(self, user: Content, session: Session) -> AgentTurn:
        """Send the user's message with ``run_async`` and record the turn's events."""
        with _quiet_adk_logs():
            runner = await self._start(session)
            self._recorder.tool_runner = session.tool_runner
            try:
                events, nested = await self._run(runner, user, session)
            except Exception as exc:
                refused = credentials_refused(exc)
                if refused is None:
                    raise
                raise AgentError(refused, retryable=False) from None
            turn = turn_from_adk_events(events, nested)
            self._details = _app_details(events, self._recorder)
            self._recorder.requests.clear()
            await self._mirror_state(runner, session)
        return turn

    async def _run(
        self, runner: Runner, user: Content, session: Session
    ) -> tuple[list[Event], list[Event]]:
        """The turn's events in order, and which of them came from agents run as tools.

        Those run while their call is answered, so they go just before the outer event that
        carries the answer (or at the end, should no answer come)."""
        events: list[Event] = []
        nested: list[Event] = []
        pending = self._recorder.nested
        pending.clear()
        async with contextlib.aclosing(
            runner.run_async(
                user_id=session.user_id,
                session_id=session.session_id,
                new_message=_to_genai(user),
            )
        ) as stream:
            async for event in stream:
                if pending and event.get_function_responses():
                    nested.extend(pending)
                    events.extend(pending)
                    pending.clear()
                events.append(event)
        nested.extend(pending)
        events.extend(pending)
        pending.clear()
        return events, nested

    async def _start(self, session: Session) -> Runner:
        """The runner, made on the first turn; the ADK session for ``session``, made once."""
        from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
        from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
        from google.adk.runners import Runner
        from google.adk.sessions.in_memory_session_service import InMemorySessionService

        if self._runner is None:
            self._runner = Runner(
                app=self._app_with_plugin(session.app_name),
                session_service=InMemorySessionService(),
                artifact_service=InMemoryArtifactService(),
                memory_service=InMemoryMemoryService(),
            )
        if session.session_id not in self._recorder.session_ids:
            await self._runner.session_service.create_session(
                app_name=session.app_name,
                user_id=session.user_id,
                state=dict(session.state),
                session_id=session.session_id,
            )
            self._recorder.session_ids.add(session.session_id)
        return self._runner

    def _app_with_plugin(self, app_name: str) -> Any:
        """The App to run, named after the session's app: a copy of the module's own, or a bare
        one (unvalidated, as ADK's runner makes one from a bare agent), with assay's plugin
        added last."""
        from google.adk.apps.app import App

        plugin = _plugin_type()(self._recorder)
        if self._app is not None:
            return self._app.model_copy(
                update={
                    "name": app_name,
                    "plugins": [*self._app.plugins, plugin],
                    "root_agent": self._root,
                }
            )
        return App.model_construct(name=app_name, root_agent=self._root, plugins=[plugin])

    async def _mirror_state(self, runner: Runner, session: Session) -> None:
        """Our session's state becomes the ADK session's (less ADK's evaluation bookkeeping)."""
        adk_session = await runner.session_service.get_session(
            app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
        )
        if adk_session is not None:
            session.state.clear()
            session.state.update(
                {k: v for k, v in adk_session.state.items() if k != REQUEST_ID_KEY}
            )

    async def aclose(self) -> None:
        """Close the runner (its toolsets, plugins and session service)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            with _quiet_adk_logs():
                await runner.close()
