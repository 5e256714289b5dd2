"""``--agent http(s)://HOST[:PORT]/PATH``: an agent behind HTTP, spoken to in ``assay.agent/v1``.

Each user turn is one ``POST`` of a JSON object to the URL: the session's ids, the turn number
(1 for the first), the user's message as text and as ADK ``Content``, the session state, and the
turns so far (user text and final response text). The server answers with a JSON object in one of
three forms:

* the simple form: ``final_response`` (text) and ``tool_calls`` (name, args, response), the shape
  of :class:`~assay.agents.base.TurnResult`;
* the event form: ``events``, ADK-style ``{author, content}`` events; the last text-only event is
  the final response;
* ``tool_requests`` (``[{id, name, args}]``): the server asks assay to run these tools; assay
  answers them with ``session.call_tool`` (the recorded responses under ``--mock-tools``, an
  error result otherwise) and posts the turn again with ``tool_results``, until the server
  answers in one of the forms above. The requested calls and their results become the turn's
  first events.

Any form may also carry ``state`` (the session state from now on, replacing the old one) and
``app_details`` (ADK's ``{"agent_details": {...}}``, shown to the judges); ``error`` fails the
turn with the server's message. ``docs/agents.md`` is the protocol's full description.

Connection failures, 429 (after at least its ``Retry-After``) and 5xx are retried with
exponential backoff; other statuses, and a reply that is not JSON or not in the protocol's shape,
fail the turn at once with a message naming the status or the JSON path. Settings come from the
environment: ``ASSAY_AGENT_TOKEN`` (sent as ``Authorization: Bearer``), ``ASSAY_AGENT_HEADERS``
(a JSON object of extra headers), ``ASSAY_AGENT_NAME`` (the author of the agent's events),
``ASSAY_AGENT_HTTP_ATTEMPTS`` and ``ASSAY_AGENT_HTTP_BACKOFF`` (requests per POST, and the first
wait in seconds). The token and header values never appear in a message.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from http import HTTPStatus
from typing import Any

import httpx
from pydantic import Field, ValidationError, model_validator
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from assay._version import __version__
from assay.agents.base import (
    AgentError,
    AgentFactory,
    AgentTurn,
    CaseContext,
    Session,
    ToolCall,
    TurnResult,
    turn_from_events,
    turn_from_result,
)
from assay.agents.python import AgentLoadError
from assay.evalset._base import AssayModel
from assay.evalset.content import Content
from assay.evalset.invocation import AppDetails, Invocation, InvocationEvent
from assay.llm.connection import connect_reason
from assay.llm.redact import redact

logger = logging.getLogger(__name__)

PROTOCOL = "assay.agent/v1"
"""The protocol version assay sends, and the only one it accepts back."""

TOKEN_ENV = "ASSAY_AGENT_TOKEN"
HEADERS_ENV = "ASSAY_AGENT_HEADERS"
NAME_ENV = "ASSAY_AGENT_NAME"
ATTEMPTS_ENV = "ASSAY_AGENT_HTTP_ATTEMPTS"
BACKOFF_ENV = "ASSAY_AGENT_HTTP_BACKOFF"

DEFAULT_NAME = "http_agent"
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0
MAX_RETRY_AFTER_S = 60.0
CONNECT_TIMEOUT_S = 10.0
MAX_TOOL_ROUNDS = 20
EXCERPT_CHARS = 300


# -- the reply ------------------------------------------------------------------------------


class ToolRequest(AssayModel):
    """A tool the server asks assay to run for it."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class AgentReply(AssayModel):
    """One reply of the server, in one of the protocol's forms (see the module docstring)."""

    protocol: str | None = None
    final_response: str | None = None
    tool_calls: list[ToolCall] | None = None
    events: list[InvocationEvent] | None = None
    tool_requests: list[ToolRequest] | None = Field(default=None, min_length=1)
    state: dict[str, Any] | None = None
    app_details: AppDetails | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> AgentReply:
        if self.error is not None:
            return self
        simple = "final_response" in self.model_fields_set or self.tool_calls is not None
        events = self.events is not None
        requests = self.tool_requests is not None
        if simple and events:
            raise ValueError("give either events or final_response/tool_calls, not both")
        if requests and (simple or events):
            raise ValueError(
                "tool_requests is a reply of its own; send the final_response, tool_calls or "
                "events after assay answers them"
            )
        if not (simple or events or requests):
            raise ValueError(
                "expected final_response and/or tool_calls, or events, or tool_requests, or error"
            )
        return self


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HttpAgentSettings:
    """Where and how to reach the agent; ``secrets`` are masked in every message."""

    url: str
    name: str = DEFAULT_NAME
    headers: Mapping[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    attempts: int = DEFAULT_ATTEMPTS
    backoff_s: float = DEFAULT_BACKOFF_S


_HOST = re.compile(r"[A-Za-z0-9._:\-]+")  # a name, an IPv4 or an IPv6 address (unbracketed)


def _check_url(spec: str) -> str:
    expected = "expected http(s)://HOST[:PORT]/PATH"
    shown = redact(spec)  # a token in the query string stays out of the message
    try:
        url = httpx.URL(spec)
        port = url.port  # httpx checks the port's range lazily
    except (httpx.InvalidURL, ValueError) as exc:
        raise AgentLoadError(f"--agent {shown!r}: not a usable URL ({exc}); {expected}") from None
    if url.userinfo:  # the spec itself is not shown: it holds the credentials
        raise AgentLoadError(
            "--agent: the URL carries credentials (user:password@), which would show in logs; "
            f"put a token in {TOKEN_ENV} or headers in {HEADERS_ENV} instead"
        )
    if url.scheme not in ("http", "https"):
        raise AgentLoadError(f"--agent {shown!r}: the scheme must be http or https; {expected}")
    if not url.host:
        raise AgentLoadError(f"--agent {shown!r}: the URL has no host; {expected}")
    if not _HOST.fullmatch(url.raw_host.decode("ascii", "replace")):
        raise AgentLoadError(f"--agent {shown!r}: {url.host!r} is not a host name; {expected}")
    if port is not None and not 0 < port < 65536:
        raise AgentLoadError(f"--agent {shown!r}: the port must be 1 to 65535; {expected}")
    return str(url)


def _headers(env: Mapping[str, str]) -> dict[str, str]:
    raw = env.get(HEADERS_ENV, "").strip()
    if not raw:
        return {}
    problem = (
        f"{HEADERS_ENV} must be a JSON object of header names to string values, "
        'such as {"X-Api-Key": "..."}'
    )
    try:
        value = json.loads(raw)
    except ValueError:  # the value is not quoted back: it may hold a secret
        raise AgentLoadError(f"{problem}; it is not JSON") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) for k, v in value.items()
    ):
        raise AgentLoadError(problem)
    return value


def _number(env: Mapping[str, str], name: str, default: float, *, least: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = least - 1
    if not value >= least:  # also catches nan
        raise AgentLoadError(f"{name} must be a number of at least {least:g}, got {raw!r}")
    return value


def _attempts(env: Mapping[str, str]) -> int:
    raw = env.get(ATTEMPTS_ENV, "").strip()
    if not raw:
        return DEFAULT_ATTEMPTS
    if not raw.isdigit() or int(raw) < 1:
        raise AgentLoadError(f"{ATTEMPTS_ENV} must be a whole number of at least 1, got {raw!r}")
    return int(raw)


def http_settings(url: str, env: Mapping[str, str]) -> HttpAgentSettings:
    """Check the URL and read the environment's settings; :class:`AgentLoadError` when either
    cannot be used."""
    checked = _check_url(url.strip())
    headers = {"User-Agent": f"assay/{__version__}", **_headers(env)}
    secrets = [v for k, v in headers.items() if k.lower() != "user-agent"]
    token = env.get(TOKEN_ENV, "").strip()
    if token:
        headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        headers["Authorization"] = f"Bearer {token}"
        secrets.append(token)
    return HttpAgentSettings(
        url=checked,
        name=env.get(NAME_ENV, "").strip() or DEFAULT_NAME,
        headers=headers,
        secrets=tuple(s for s in secrets if s),
        attempts=_attempts(env),
        backoff_s=_number(env, BACKOFF_ENV, DEFAULT_BACKOFF_S, least=0),
    )


def http_agent_factory(url: str, *, env: Mapping[str, str]) -> AgentFactory:
    """The factory for ``--agent URL``: checks the URL and settings now (without contacting
    the server) and makes a fresh :class:`HttpAgent` for each case and run."""
    settings = http_settings(url, env)

    def make(context: CaseContext) -> HttpAgent:
        return HttpAgent(settings)

    return make


# -- talking to the server ------------------------------------------------------------------


class _Retryable(AgentError):
    """A failure worth another request: no connection, 429, 5xx."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date), capped; None when absent or bad."""
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S) if seconds == seconds else None


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "..."


def _json_path(location: Sequence[int | str]) -> str:
    path = ""
    for key in location:
        path += f"[{key}]" if isinstance(key, int) else (f".{key}" if path else str(key))
    return path or "the top level"


def _shape_error(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return (
        f"the agent's reply does not follow {PROTOCOL}: at {_json_path(first['loc'])}: "
        f"{message}{more}"
    )


def _text(content: Content | None) -> str | None:
    if content is None or not content.parts:
        return None
    texts = [part.text for part in content.parts if part.text and not part.thought]
    return "\n".join(texts) if texts else None


def _history(turns: Sequence[Invocation]) -> list[dict[str, str | None]]:
    return [
        {"user": _text(turn.user_content) or "", "agent": _text(turn.final_response)}
        for turn in turns
    ]


def _tool_result(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "args": call.args, "response": call.response}


class HttpAgent:
    """One conversation with an agent server (see the module docstring); one HTTP client,
    closed by :meth:`aclose`."""

    def __init__(self, settings: HttpAgentSettings) -> None:
        self._settings = settings
        self._details: AppDetails | None = None
        self._client = httpx.AsyncClient(
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                **settings.headers,
            },
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S),  # --turn-timeout cuts turns
            follow_redirects=False,
        )

    @property
    def name(self) -> str:
        """``ASSAY_AGENT_NAME``, else ``http_agent``: the author of the agent's events."""
        return self._settings.name

    def app_details(self) -> AppDetails | None:
        """The latest ``app_details`` the server sent, if it sent any."""
        return self._details

    async def aclose(self) -> None:
        """Close the HTTP client and its connections."""
        await self._client.aclose()

    async def turn(self, user: Content, session: Session) -> AgentTurn:
        """POST the turn; run the tools the server asks for and POST again, until it answers."""
        request: dict[str, Any] = {
            "protocol": PROTOCOL,
            "app_name": session.app_name,
            "user_id": session.user_id,
            "session_id": session.session_id,
            "turn": len(session.history) + 1,
            "message": _text(user) or "",
            "user_content": user.model_dump(mode="json", exclude_none=True),
            "state": session.state,
            "history": _history(session.history),
        }
        exchanged: list[ToolCall] = []
        for _ in range(MAX_TOOL_ROUNDS + 1):
            reply = await self._post(request)
            self._absorb(reply, session)
            if reply.tool_requests is None:
                return self._assemble(reply, exchanged)
            for asked in reply.tool_requests:
                exchanged.append(await self._run_tool(asked, len(exchanged), session))
            request = {
                **request,
                "state": session.state,
                "tool_results": [_tool_result(call) for call in exchanged],
            }
        raise AgentError(f"the agent asked for tools more than {MAX_TOOL_ROUNDS} times in one turn")

    def _absorb(self, reply: AgentReply, session: Session) -> None:
        if reply.state is not None:
            session.state.clear()
            session.state.update(reply.state)
        if reply.app_details is not None:
            self._details = reply.app_details
        if reply.error is not None:
            raise AgentError(f"the agent reported an error: {self._redact(reply.error)}")

    def _assemble(self, reply: AgentReply, exchanged: list[ToolCall]) -> AgentTurn:
        if reply.events is not None:
            answered = turn_from_events(reply.events)
        else:
            result = TurnResult(
                final_response=reply.final_response, tool_calls=reply.tool_calls or []
            )
            answered = turn_from_result(result, self.name)
        if not exchanged:
            return answered
        steps = turn_from_result(TurnResult(tool_calls=exchanged), self.name).events
        return AgentTurn(events=steps + answered.events, final_response=answered.final_response)

    async def _run_tool(self, asked: ToolRequest, index: int, session: Session) -> ToolCall:
        call_id = asked.id or f"tool_request_{index}"
        if session.tool_runner is None:
            response: Any = {
                "error": f"assay does not run tool {asked.name!r} itself; it answers tool "
                "requests only with --mock-tools, from the eval case's recorded responses"
            }
        else:
            try:
                response = await session.call_tool(asked.name, asked.args)
            except Exception as exc:  # the runner's failure is the tool's result
                response = {"error": f"{type(exc).__name__}: {exc}"}
        if not isinstance(response, dict):
            response = {"result": response}
        return ToolCall(name=asked.name, args=asked.args, id=call_id, response=response)

    # -- HTTP --------------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return redact(text, self._settings.secrets)

    async def _post(self, request: dict[str, Any]) -> AgentReply:
        body = json.dumps(request, ensure_ascii=False, default=str).encode("utf-8")
        attempts = self._settings.attempts
        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts),
            wait=self._wait,
            retry=retry_if_exception_type(_Retryable),
            before_sleep=self._log_retry,
            reraise=True,
        )
        try:
            response: httpx.Response = await retrying(self._send, body)
        except _Retryable as exc:
            tries = f" (tried {attempts} times)" if attempts > 1 else ""
            raise AgentError(f"{exc}{tries}") from None
        return self._parse(response)

    def _wait(self, state: RetryCallState) -> float:
        backoff = wait_random_exponential(multiplier=self._settings.backoff_s, max=MAX_BACKOFF_S)
        error = state.outcome.exception() if state.outcome is not None else None
        asked = error.retry_after if isinstance(error, _Retryable) else None
        return max(backoff(state), asked or 0.0)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        logger.debug("retrying in %.2f s: %s", wait, error)

    async def _send(self, body: bytes) -> httpx.Response:
        url = self._settings.url
        try:
            response = await self._client.post(url, content=body)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            reason = connect_reason(exc)
            raise _Retryable(self._redact(f"cannot connect to {url}: {reason}")) from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            raise _Retryable(self._redact(f"{url} dropped the connection: {exc}")) from None
        except httpx.HTTPError as exc:
            raise AgentError(self._redact(f"POST {url} failed: {exc!r}")) from None
        status = response.status_code
        if 200 <= status < 300:
            return response
        problem = self._redact(
            f"{url} answered HTTP {status} {_phrase(status)}: {_excerpt(response.text)}"
        )
        if status == 429 or status >= 500:
            raise _Retryable(problem, _retry_after(response.headers.get("retry-after")))
        raise AgentError(problem)

    def _parse(self, response: httpx.Response) -> AgentReply:
        try:
            data = response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content type")
            raise AgentError(
                self._redact(
                    f"the agent's reply is not JSON (HTTP {response.status_code}, {kind}): "
                    f"{_excerpt(response.text)!r}"
                )
            ) from None
        if not isinstance(data, dict):
            raise AgentError(
                f"the agent's reply is a JSON {type(data).__name__}; expected an object "
                f"with final_response, tool_calls, events or tool_requests ({PROTOCOL})"
            )
        spoken = data.get("protocol", PROTOCOL)
        if spoken != PROTOCOL:  # checked first: another version's shape would mislead
            raise AgentError(
                self._redact(f"the agent speaks {spoken!r}; assay speaks {PROTOCOL!r}")
            )
        try:
            return AgentReply.model_validate(data)
        except ValidationError as exc:
            raise AgentError(self._redact(_shape_error(exc))) from None


def _phrase(status: int) -> str:
    try:
        return f"({HTTPStatus(status).phrase.lower()})"
    except ValueError:
        return ""
