"""``openai:MODEL`` and ``ollama:MODEL``: a tool-calling chat model as the agent under evaluation.

The model stands in for the agent an eval set was recorded from, so a model or prompt change can
be tried on an ADK eval set without the agent's code. It is given, for each case:

* the instructions and tools of the case's recorded ``app_details`` (the first agent's
  instructions, every agent's tools, each name once); a case with none (a
  ``conversation_scenario``) takes them from the first case of the eval set that has some;
* with no ``app_details`` anywhere, no instructions, and the tools called anywhere in the eval
  set, their parameters typed from the recorded argument values.

Declarations may be ADK's (genai ``Tool``: ``function_declarations`` with genai-schema
``parameters`` or ``parameters_json_schema``), bare function declarations or OpenAI tools; they
are sent as OpenAI ``tools``. Tool calls are always answered from the case's recorded responses
(through the session's tool runner under ``--mock-tools``, else directly).

A turn sends the conversation so far (rebuilt from the session's history) and the user's message
to ``/chat/completions``, answers each reply's tool calls and sends again, until a reply without
tool calls (its text is the final response) or ``max_steps`` model calls (an ``AgentError``).
Each model call is one event with its tokens in ADK's ``usage_metadata`` fields.

Settings: ``OPENAI_BASE_URL`` (default OpenAI's API) and ``OPENAI_API_KEY`` (needed by OpenAI's own
API only); ``OLLAMA_HOST`` (default ``localhost:11434``; ``OLLAMA_BASE_URL``, a full ``.../v1``
URL as the judges read it, wins); ``ASSAY_AGENT_TEMPERATURE`` (default 0; ``none`` sends none)
and ``ASSAY_AGENT_MAX_STEPS`` (default 10).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_random_exponential

from assay.agents.base import AgentError, AgentFactory, AgentTurn, CaseContext, Session, ToolRunner
from assay.agents.declarations import declarations_from_calls, openai_tools
from assay.agents.mock_tools import mock_tool_runner
from assay.agents.python import AgentLoadError
from assay.evalset.case import EvalCase
from assay.evalset.content import Content, FunctionCall, FunctionResponse, Part, content_text
from assay.evalset.invocation import (
    AgentDetails,
    AppDetails,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)
from assay.llm.backends.openai_compat import OPENAI_BASE_URL, OpenAICompatBackend, message_text
from assay.llm.base import LlmError
from assay.llm.client import is_auth_failure
from assay.llm.connection import ServerUrlError, ollama_base_url, server_url
from assay.llm.redact import redact

logger = logging.getLogger(__name__)

UNPARSED_ARGUMENTS = "_unparsed_arguments"
"""The key a tool call's arguments are recorded under when they were not a JSON object."""

_MAX_RETRY_AFTER_S = 60.0
_JSON = dict[str, Any]


# ------------------------------------------------------------------------------ the server


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the model is served: the spec as written, ``openai`` or ``ollama``, the model name
    the server is sent, its base URL (ending in ``/v1``) and the API key (never shown)."""

    spec: str
    kind: str
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)


def _http_url(value: str, variable: str, spec: str) -> httpx.URL:
    try:
        return server_url(value, variable)
    except ServerUrlError as exc:
        raise AgentLoadError(f"--agent {spec}: {exc}") from None


def _ollama_url(env: Mapping[str, str], spec: str) -> str:
    """The Ollama server's base URL, read as the judges read it (:func:`ollama_base_url`)."""
    try:
        return ollama_base_url(env)
    except ServerUrlError as exc:
        raise AgentLoadError(f"--agent {spec}: {exc}") from None


def resolve_endpoint(spec: str, env: Mapping[str, str]) -> ModelEndpoint:
    """The server ``openai:MODEL`` or ``ollama:MODEL`` names, from ``env``; raises
    :class:`~assay.agents.python.AgentLoadError` saying what to set when it cannot be used."""
    spec = spec.strip()
    kind, _, model = spec.partition(":")
    model = model.strip()
    if kind not in ("openai", "ollama"):
        raise AgentLoadError(f"--agent {spec!r}: expected openai:MODEL or ollama:MODEL")
    if not model:
        example = "gpt-4o-mini" if kind == "openai" else "llama3.2"
        raise AgentLoadError(
            f"--agent {spec!r} names no model; write {kind}:MODEL, e.g. {kind}:{example}"
        )
    if kind == "ollama":
        return ModelEndpoint(spec, kind, model, _ollama_url(env, spec))
    base = (env.get("OPENAI_BASE_URL") or "").strip() or OPENAI_BASE_URL
    url = _http_url(base, "OPENAI_BASE_URL", spec)
    key = env.get("OPENAI_API_KEY") or None
    if key is None and url.host == "api.openai.com":
        raise AgentLoadError(
            f"--agent {spec}: OpenAI's API needs a key and OPENAI_API_KEY is not set; set "
            "OPENAI_API_KEY, or set OPENAI_BASE_URL to an OpenAI-compatible server (vLLM, "
            "llama.cpp, LM Studio, a gateway) that needs none"
        )
    return ModelEndpoint(spec, kind, model, base.rstrip("/"), key)


@dataclass(frozen=True)
class ModelAgentOptions:
    """How the model agent calls its model: model calls per turn, temperature (None sends none),
    seconds per HTTP request, attempts per call, and the backoff between attempts (full jitter,
    doubling from ``backoff_s`` up to ``max_backoff_s``; at least a ``Retry-After``)."""

    max_steps: int = 10
    temperature: float | None = 0.0
    timeout_s: float = 120.0
    attempts: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    def __post_init__(self) -> None:
        counts, delays = min(self.max_steps, self.attempts), min(self.backoff_s, self.max_backoff_s)
        if counts < 1 or delays < 0 or self.timeout_s <= 0:
            raise ValueError(f"steps and attempts must be at least 1, delays not negative: {self}")


def options_from_env(env: Mapping[str, str]) -> ModelAgentOptions:
    """The defaults, with ``ASSAY_AGENT_TEMPERATURE`` and ``ASSAY_AGENT_MAX_STEPS`` applied."""
    temperature: float | None = 0.0
    given = (env.get("ASSAY_AGENT_TEMPERATURE") or "").strip()
    if given.lower() == "none":
        temperature = None
    elif given:
        try:
            temperature = float(given)
        except ValueError:
            raise AgentLoadError(
                f"ASSAY_AGENT_TEMPERATURE={given!r} is not a number; "
                "give e.g. 0 or 0.7, or none to send no temperature"
            ) from None
    steps = (env.get("ASSAY_AGENT_MAX_STEPS") or "").strip()
    if steps and (not steps.isdigit() or int(steps) < 1):
        raise AgentLoadError(
            f"ASSAY_AGENT_MAX_STEPS={steps!r}: expected a whole number of model calls per "
            "turn, at least 1"
        )
    return ModelAgentOptions(temperature=temperature, max_steps=int(steps) if steps else 10)


# ------------------------------------------------------------------------------ what it is told


@dataclass(frozen=True)
class ModelBrief:
    """What the model is given: the name it answers as (its events' author), the system
    instructions, the tool declarations as recorded, and the same tools in OpenAI's form."""

    name: str
    instructions: str
    declarations: list[Any]
    tools: list[_JSON]


def _app_details(case: EvalCase) -> AppDetails | None:
    for invocation in case.conversation or []:
        if invocation.app_details is not None and invocation.app_details.agent_details:
            return invocation.app_details
    return None


def brief_for(context: CaseContext, fallback_name: str) -> ModelBrief:
    """What the model is told for ``context``'s case (see the module docstring)."""
    cases = [context.case, *(c for c in context.cases if c is not context.case)]
    app = next((found for c in cases if (found := _app_details(c)) is not None), None)
    if app is None:  # the same tools, in the same order, for every case of the eval set
        in_order = [*context.cases, *([] if context.case in context.cases else [context.case])]
        declarations = declarations_from_calls(in_order)
        return ModelBrief(fallback_name, "", declarations, openai_tools(declarations))
    name, first = next(iter(app.agent_details.items()))
    declarations = [d for agent in app.agent_details.values() for d in agent.tool_declarations]
    return ModelBrief(name, first.instructions, declarations, openai_tools(declarations))


# ------------------------------------------------------------------------------ chat messages


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_message(call_id: str, response: Any) -> _JSON:
    return {"role": "tool", "tool_call_id": call_id, "content": _json_text(response)}


def _step_contents(invocation: Invocation) -> list[Content]:
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, InvocationEvents):
        return [e.content for e in data.invocation_events if e.content and e.content.parts]
    calls = [Part(function_call=call) for call in data.tool_uses]
    responses = [Part(function_response=response) for response in data.tool_responses]
    return [Content(role="model", parts=calls), Content(role="user", parts=responses)]


def _step_messages(invocation: Invocation, turn: int) -> list[_JSON]:
    """A recorded turn's steps as chat messages: each call with its id (made up when it has
    none), each response answering its call's id (else the oldest unanswered call)."""
    messages: list[_JSON] = []
    pending: deque[str] = deque()
    number = 0
    for content in _step_contents(invocation):
        parts = content.parts or []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        calls = []
        for part in parts:
            if part.function_call is not None:
                call_id = part.function_call.id or f"call_{turn}_{number}"
                number += 1
                pending.append(call_id)
                args = part.function_call.args or {}
                raw = args.get(UNPARSED_ARGUMENTS) if list(args) == [UNPARSED_ARGUMENTS] else None
                arguments = raw if isinstance(raw, str) else _json_text(args)
                function = {"name": part.function_call.name or "", "arguments": arguments}
                calls.append({"id": call_id, "type": "function", "function": function})
        if calls:
            messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif text and content.role != "user":
            messages.append({"role": "assistant", "content": text})
        for part in parts:
            if (response := part.function_response) is not None:
                if response.id is not None and response.id in pending:
                    pending.remove(response.id)
                    call_id = response.id
                else:
                    call_id = pending.popleft() if pending else f"call_{turn}_{number}"
                messages.append(_tool_message(call_id, response.response or {}))
    return messages


def history_messages(history: Sequence[Invocation]) -> list[_JSON]:
    """The conversation so far as chat messages (no system message)."""
    messages: list[_JSON] = []
    for index, invocation in enumerate(history):
        messages.append({"role": "user", "content": content_text(invocation.user_content)})
        messages.extend(_step_messages(invocation, turn=index))
        # an empty answer too, so that user and assistant messages alternate
        messages.append({"role": "assistant", "content": content_text(invocation.final_response)})
    return messages


# ------------------------------------------------------------------------------ one reply


@dataclass(frozen=True)
class _Call:
    id: str
    name: str
    arguments: str  # as sent, for the assistant message that is sent back
    args: _JSON | None  # None: the arguments were not a JSON object


@dataclass(frozen=True)
class _Reply:
    text: str
    calls: list[_Call]
    usage: _JSON | None
    model: str


def _count(value: Any, name: str) -> int | None:
    number = value.get(name) if isinstance(value, Mapping) else None
    return number if isinstance(number, int) and number >= 0 else None


def usage_metadata(usage: Any) -> _JSON | None:
    """OpenAI's ``usage`` in genai's usage-metadata fields (reasoning tokens as thoughts, the
    rest of the completion as candidates; cached prompt tokens as cached content)."""
    prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    if prompt is None and completion is None:
        return None
    reasoning = _count(usage.get("completion_tokens_details"), "reasoning_tokens") or 0
    cached = _count(usage.get("prompt_tokens_details"), "cached_tokens")
    total = _count(usage, "total_tokens")
    out: _JSON = {
        "prompt_token_count": prompt or 0,
        "candidates_token_count": max(0, (completion or 0) - reasoning),
        "total_token_count": total if total is not None else (prompt or 0) + (completion or 0),
    }
    if reasoning:
        out["thoughts_token_count"] = reasoning
    if cached:
        out["cached_content_token_count"] = cached
    return out


def _call(raw: Any, where: str, index: int) -> _Call:
    function = raw.get("function") if isinstance(raw, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(name, str) or not name:
        raise AgentError(f"the model made a tool call with no function name: {raw!r:.200}")
    call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
    given = function.get("arguments")
    args: Any
    if isinstance(given, str):
        arguments = given
        try:
            args = json.loads(given) if given.strip() else {}
        except ValueError:
            args = None
    else:
        args = {} if given is None else given
        arguments = _json_text(args)
    return _Call(
        call_id or f"call_{where}_{index}",
        name,
        arguments,
        args if isinstance(args, dict) else None,
    )


def _reply(data: Any, where: str, fallback_model: str) -> _Reply | None:
    """The reply in a completion body; None when the body is not a completion."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return None
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        return None
    model = data.get("model")
    return _Reply(
        text=message_text(message.get("content")) or "",
        calls=[_call(raw, where, i) for i, raw in enumerate(raw_calls)],
        usage=usage_metadata(data.get("usage")),
        model=model if isinstance(model, str) and model else fallback_model,
    )


def _retryable(error: BaseException) -> bool:
    return isinstance(error, LlmError) and error.retryable


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    wait = state.next_action.sleep if state.next_action is not None else 0.0
    logger.debug("retrying the model in %.2f s: %s", wait, error)


# ------------------------------------------------------------------------------ the agent


class ModelAgent:
    """One case's model agent: one HTTP client (closed by :meth:`aclose`), the brief, and the
    case's recorded tool responses for tool calls when the session has no tool runner."""

    def __init__(
        self,
        endpoint: ModelEndpoint,
        brief: ModelBrief,
        recorded: ToolRunner,
        options: ModelAgentOptions | None = None,
    ) -> None:
        self._endpoint = endpoint
        self._brief = brief
        self._recorded = recorded
        self._options = options or ModelAgentOptions()
        self._backend = OpenAICompatBackend(
            endpoint.spec,
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            kind=endpoint.kind,
            timeout_s=self._options.timeout_s,
        )

    @property
    def name(self) -> str:
        """The recorded agent's name, else the model's: the author of the events."""
        return self._brief.name

    def app_details(self) -> AppDetails:
        """The instructions and tool declarations the model is given."""
        details = AgentDetails(
            name=self.name,
            instructions=self._brief.instructions,
            tool_declarations=list(self._brief.declarations),
        )
        return AppDetails(agent_details={self.name: details})

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._backend.aclose()

    async def turn(self, user: Content, session: Session) -> AgentTurn:
        """Call the model until it answers without tool calls (see the module docstring)."""
        messages = self._system() + history_messages(session.history)
        messages.append({"role": "user", "content": content_text(user)})
        events: list[InvocationEvent] = []
        for step in range(self._options.max_steps):
            reply = await self._complete(messages, f"{len(session.history)}_{step}")
            if not reply.calls:
                events.append(self._event(None, reply))
                final = Content.from_text(reply.text) if reply.text else None
                return AgentTurn(events=events, final_response=final)
            messages.append(_assistant_message(reply))
            events.append(self._event(_call_content(reply), reply))
            responses: list[Part] = []
            for call in reply.calls:
                result = await self._run_tool(call, session)
                messages.append(_tool_message(call.id, result))
                answer = FunctionResponse(id=call.id, name=call.name, response=result)
                responses.append(Part(function_response=answer))
            events.append(
                InvocationEvent(author=self.name, content=Content(role="user", parts=responses))
            )
        raise AgentError(
            f"{self._endpoint.spec} asked for tools in each of its {self._options.max_steps} "
            "model calls this turn and never answered; that is the limit per turn "
            "(ASSAY_AGENT_MAX_STEPS)"
        )

    def _system(self) -> list[_JSON]:
        text = self._brief.instructions
        return [{"role": "system", "content": text}] if text else []

    def _event(self, content: Content | None, reply: _Reply) -> InvocationEvent:
        return InvocationEvent(
            author=self.name, content=content, usage_metadata=reply.usage, model_version=reply.model
        )

    async def _run_tool(self, call: _Call, session: Session) -> _JSON:
        if call.args is None:
            return {
                "error": f"the arguments of {call.name} are not a JSON object: "
                f"{call.arguments[:200]!r}; send them as a JSON object"
            }
        if session.tool_runner is not None:
            result = await session.call_tool(call.name, call.args, None)
        else:
            result = await self._recorded(call.name, dict(call.args), None)
        return result if isinstance(result, dict) else {"result": result}

    def _body(self, messages: list[_JSON]) -> _JSON:
        body: _JSON = {"model": self._endpoint.model, "messages": messages}
        if self._brief.tools:
            body["tools"] = self._brief.tools
        if self._options.temperature is not None:
            body["temperature"] = self._options.temperature
        return body

    async def _complete(self, messages: list[_JSON], where: str) -> _Reply:
        """One model call, retried on connection errors, 429 and 5xx; an
        :class:`AgentError` when it fails for good."""
        options = self._options
        retrying = AsyncRetrying(
            stop=stop_after_attempt(options.attempts),
            wait=self._wait,
            retry=retry_if_exception(_retryable),
            before_sleep=_log_retry,
            reraise=True,
        )
        try:
            return await retrying(self._complete_once, self._body(messages), where)
        except LlmError as error:
            attempts = int(retrying.statistics.get("attempt_number", 1))
            tries = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
            secrets = [self._endpoint.api_key] if self._endpoint.api_key else []
            message = redact(f"{self._endpoint.spec}: {error}{tries}", secrets)
            raise AgentError(message, retryable=not is_auth_failure(error)) from None

    def _wait(self, state: RetryCallState) -> float:
        """The backoff, or longer when the server asked for it with ``Retry-After`` (capped)."""
        options = self._options
        wait = wait_random_exponential(multiplier=options.backoff_s, max=options.max_backoff_s)
        error = state.outcome.exception() if state.outcome is not None else None
        asked = error.retry_after if isinstance(error, LlmError) else None
        return max(wait(state), min(asked or 0.0, _MAX_RETRY_AFTER_S))

    async def _complete_once(self, body: _JSON, where: str) -> _Reply:
        return await self._backend.post_chat(
            body, lambda data: _reply(data, where, self._endpoint.model)
        )


def _assistant_message(reply: _Reply) -> _JSON:
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in reply.calls
    ]
    return {"role": "assistant", "content": reply.text or None, "tool_calls": calls}


def _call_content(reply: _Reply) -> Content:
    parts = [Part(text=reply.text)] if reply.text else []
    for call in reply.calls:
        args = call.args if call.args is not None else {UNPARSED_ARGUMENTS: call.arguments}
        parts.append(Part(function_call=FunctionCall(id=call.id, name=call.name, args=args)))
    return Content(role="model", parts=parts)


def model_agent_factory(
    spec: str, *, env: Mapping[str, str], options: ModelAgentOptions | None = None
) -> AgentFactory:
    """The factory for ``openai:MODEL`` / ``ollama:MODEL``: the server and settings are checked
    now (a missing key or a bad URL is an :class:`~assay.agents.python.AgentLoadError`); each
    case and run then gets a fresh :class:`ModelAgent` told what the case's recorded agent was
    told. ``options`` replaces the settings read from ``env``."""
    endpoint = resolve_endpoint(spec, env)
    settings = options if options is not None else options_from_env(env)

    def make(context: CaseContext) -> ModelAgent:
        brief = brief_for(context, fallback_name=endpoint.model)
        return ModelAgent(endpoint, brief, mock_tool_runner(context.case), settings)

    return make
