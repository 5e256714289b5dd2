"""Real ADK spans: an ADK agent with a scripted model, run by ADK's Runner, traced by ADK's own
telemetry code through the real OpenTelemetry SDK.

The session has two user turns. Turn one: the model asks for two tools at once (parallel calls in
one model turn): ``get_weather`` and ``fetch_report`` (whose result is many KB); then answers.
Turn two: the model calls ``get_weather`` for a city it does not know, the tool raises, the agent's
``on_tool_error_callback`` turns the error into a result, and the model answers.

ADK reads its telemetry settings per call (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN`` in
``google/adk/telemetry/_schema_version.py``, the content settings when a ``TelemetryConfig`` is
built, once per invocation), so one process can produce both schemas.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.cli.utils.evals import convert_session_to_eval_invocations
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from opentelemetry.sdk.trace import ReadableSpan

from ._otlp import environment, global_capture

APP_NAME = "weather_app"
AGENT_NAME = "weather_agent"
USER_ID = "user-1"
TURNS = (
    "What is the weather in Paris, and what does report q3 say?",
    "And the weather in Atlantis?",
)
REPORT_KB = 10

SCHEMA_ENV = "ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
LEGACY_CAPTURE_ENV = "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"


def get_weather(city: str) -> dict[str, Any]:
    """The weather in ``city``; raises for a city it does not know."""
    if city == "Atlantis":
        raise ValueError(f"no weather station in {city}")
    return {"city": city, "forecast": "sunny", "celsius": 21}


def fetch_report(report_id: str) -> dict[str, Any]:
    """A report of many KB (a tool result larger than attribute limits usually are)."""
    line = f"report {report_id}: revenue grew in every region; details follow. "
    body = (line * (REPORT_KB * 1024 // len(line) + 1))[: REPORT_KB * 1024]
    return {"report_id": report_id, "text": body}


async def _tool_error_as_result(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, error: Exception
) -> dict[str, Any]:
    """What the model is told when a tool raises (otherwise ADK ends the invocation)."""
    return {"error": f"{type(error).__name__}: {error}"}


def _call(name: str, call_id: str | None, **args: Any) -> types.Part:
    """A function call; without an id (as Gemini sends them) ADK gives it an ``adk-`` one."""
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))


class ScriptedWeatherModel(BaseLlm):
    """Answers from the shape of the request: tool calls for a new question, text after results."""

    model: str = "scripted-weather-1"

    def _reply(self, request: LlmRequest) -> list[types.Part]:
        last = request.contents[-1] if request.contents else types.Content(parts=[])
        results = [p.function_response for p in last.parts or [] if p.function_response]
        if results:
            names = sorted(r.name or "" for r in results)
            if names == ["fetch_report", "get_weather"]:
                return [types.Part(text="Paris is sunny at 21°C; report q3 says revenue grew.")]
            return [types.Part(text="I could not get the weather in Atlantis: no station there.")]
        text = " ".join(p.text or "" for p in last.parts or [])
        if "Atlantis" in text:
            return [_call("get_weather", None, city="Atlantis")]
        return [
            _call("get_weather", "call-paris", city="Paris"),
            _call("fetch_report", "call-q3", report_id="q3"),
        ]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = self._reply(llm_request)
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=100 + 10 * len(llm_request.contents),
            candidates_token_count=7 * len(parts),
            total_token_count=100 + 10 * len(llm_request.contents) + 7 * len(parts),
        )
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=usage,
            model_version="scripted-weather-1",
        )


def build_agent() -> LlmAgent:
    """The agent: the scripted model and the two tools."""
    return LlmAgent(
        name=AGENT_NAME,
        model=ScriptedWeatherModel(),
        instruction="You answer questions about the weather and reports, using the tools.",
        description="Answers weather and report questions.",
        tools=[get_weather, fetch_report],
        on_tool_error_callback=_tool_error_as_result,
    )


@dataclass
class AdkRun:
    """What one ADK run produced: its spans and ADK's own record of each session."""

    schema: str
    capture: str | None
    spans: list[ReadableSpan]
    invocations: dict[str, list[AdkInvocation]]

    def adk_record(self) -> dict[str, list[dict[str, Any]]]:
        """ADK's invocations as ADK's JSON (``{session id: [Invocation, ...]}``)."""
        return {
            session_id: [
                inv.model_dump(mode="json", by_alias=True, exclude_none=True) for inv in invocations
            ]
            for session_id, invocations in self.invocations.items()
        }


async def _run_session(
    runner: Runner, service: InMemorySessionService, session_id: str
) -> list[AdkInvocation]:
    await service.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=session_id)
    for text in TURNS:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _event in runner.run_async(
            user_id=USER_ID, session_id=session_id, new_message=message
        ):
            pass
    session = await service.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=session_id)
    assert session is not None
    return convert_session_to_eval_invocations(session)


async def _run_sessions(session_ids: tuple[str, ...]) -> dict[str, list[AdkInvocation]]:
    """The sessions run concurrently (their spans interleave), by one Runner."""
    service = InMemorySessionService()
    runner = Runner(app_name=APP_NAME, agent=build_agent(), session_service=service)
    try:
        records = await asyncio.gather(*(_run_session(runner, service, s) for s in session_ids))
    finally:
        await runner.close()
    return dict(zip(session_ids, records, strict=True))


def run_adk(
    schema: str = "default",
    capture: str | None = None,
    session_ids: tuple[str, ...] = ("adk-s1",),
    legacy_content: bool = True,
) -> AdkRun:
    """Run the two-turn session once per id in ``session_ids`` (concurrently) and return the
    spans and ADK's record of each session.

    ``schema``: ``"default"`` (ADK 2.13's GenAI-semconv-aligned spans) or ``"legacy"``
    (``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``: ``call_llm`` spans, ``gcp.vertex.agent.*``).
    ``capture``: the value of ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (None: unset);
    ``SPAN_ONLY`` or ``SPAN_AND_EVENT`` put message content on the default schema's spans.
    ``legacy_content``: False sets ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false`` (the legacy
    schema's own content switch, on by default).
    """
    if schema not in ("default", "legacy"):
        raise ValueError(f"unknown ADK schema {schema!r}")
    env: dict[str, str | None] = {
        SCHEMA_ENV: "1" if schema == "legacy" else None,
        CAPTURE_ENV: capture,
        LEGACY_CAPTURE_ENV: None if legacy_content else "false",
    }
    with environment(env), global_capture() as exporter:
        invocations = asyncio.run(_run_sessions(session_ids))
        spans = list(exporter.get_finished_spans())
    return AdkRun(schema, capture, spans, invocations)
