"""Agent turns traced through the real OpenTelemetry SDK with each convention's attributes
(the span names and attributes google-adk 2.13, GenAI instrumentations and OpenInference set)."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer

Tool = tuple[str, str, dict[str, Any], Any]
"""A tool call: (call id, name, args, result); a result that is an Exception fails the tool."""


def _msgs(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def adk_default_turn(
    tracer: Tracer,
    session: str,
    user: str,
    answer: str,
    tools: list[Tool] = (),  # type: ignore[assignment]
    *,
    content: bool = True,
    invocation: str = "e-1",
) -> None:
    """ADK 2.13's default schema: invoke_workflow > invoke_agent > generate_content / execute_tool."""
    common = {"gen_ai.conversation.id": session, "gcp.vertex.agent.invocation_id": invocation}
    with tracer.start_as_current_span(
        "invoke_workflow", attributes={"gen_ai.operation.name": "invoke_workflow", **common}
    ):
        agent_attrs = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "helper",
            **common,
        }
        with tracer.start_as_current_span("invoke_agent helper", attributes=agent_attrs):
            history = [_msgs("user", {"type": "text", "content": user})]
            calls = [
                {"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a, _ in tools
            ]
            if tools:
                _generate(
                    tracer,
                    common,
                    history if content else None,
                    [_msgs("assistant", *calls)] if content else None,
                    10,
                    5,
                )
                for call_id, name, args, result in tools:
                    _adk_tool(tracer, call_id, name, args, result, content)
                history = [*history, _msgs("assistant", *calls)]
            final = [_msgs("assistant", {"type": "text", "content": answer})]
            _generate(
                tracer, common, history if content else None, final if content else None, 20, 7
            )


def _generate(
    tracer: Tracer, common: dict[str, Any], given: Any, out: Any, tokens_in: int, tokens_out: int
) -> None:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "generate_content",
        "gen_ai.request.model": "gemini-2.5-flash",
        "gen_ai.usage.input_tokens": tokens_in,
        "gen_ai.usage.output_tokens": tokens_out,
        **common,
    }
    if given is not None:
        attrs["gen_ai.input.messages"] = json.dumps(given)
    if out is not None:
        attrs["gen_ai.output.messages"] = json.dumps(out)
    with tracer.start_as_current_span("generate_content gemini-2.5-flash", attributes=attrs):
        pass


def _adk_tool(
    tracer: Tracer, call_id: str, name: str, args: dict[str, Any], result: Any, content: bool
) -> None:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }
    if content:
        attrs["gen_ai.tool.call.arguments"] = json.dumps(args)
        if not isinstance(result, Exception):
            attrs["gen_ai.tool.call.result"] = json.dumps(result)
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes=attrs,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if isinstance(result, Exception):
            span.set_attribute("error.type", type(result).__name__)
            span.set_status(Status(StatusCode.ERROR, str(result)))


def adk_legacy_turn(
    tracer: Tracer, session: str, user: str, answer: str, tools: list[Tool] = ()
) -> None:  # type: ignore[assignment]
    """ADK's legacy schema: invocation > invoke_agent > call_llm (llm_request/response) + execute_tool."""
    ids = {"gcp.vertex.agent.session_id": session, "gcp.vertex.agent.invocation_id": "e-legacy"}
    with (
        tracer.start_as_current_span("invocation"),
        tracer.start_as_current_span(
            "invoke_agent helper",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "helper",
                "gen_ai.conversation.id": session,
            },
        ),
    ):
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": user}]}]
        if tools:
            calls = [{"function_call": {"id": i, "name": n, "args": a}} for i, n, a, _ in tools]
            _call_llm(tracer, ids, contents, {"role": "model", "parts": calls})
            for call_id, name, args, result in tools:
                attrs = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call_id,
                    "gcp.vertex.agent.tool_call_args": json.dumps(args),
                    "gcp.vertex.agent.tool_response": json.dumps(
                        result if isinstance(result, dict) else {"result": result}
                    ),
                }
                with tracer.start_as_current_span(f"execute_tool {name}", attributes=attrs):
                    pass
            contents.append({"role": "model", "parts": calls})
        _call_llm(tracer, ids, contents, {"role": "model", "parts": [{"text": answer}]})


def _call_llm(
    tracer: Tracer, ids: dict[str, Any], contents: list[dict[str, Any]], reply: dict[str, Any]
) -> None:
    attrs = {
        "gen_ai.system": "gcp.vertex.agent",
        "gen_ai.request.model": "gemini-2.5-flash",
        "gcp.vertex.agent.llm_request": json.dumps(
            {"model": "gemini-2.5-flash", "contents": contents, "config": {}}
        ),
        "gcp.vertex.agent.llm_response": json.dumps(
            {
                "content": reply,
                "usage_metadata": {
                    "prompt_token_count": 9,
                    "candidates_token_count": 4,
                    "total_token_count": 13,
                },
            }
        ),
        **ids,
    }
    with tracer.start_as_current_span("call_llm", attributes=attrs):
        pass


def openinference_turn(
    tracer: Tracer, session: str | None, user: str, answer: str, tools: list[Tool] = ()
) -> None:  # type: ignore[assignment]
    """OpenInference (as the OpenAI Agents instrumentation writes): AGENT > LLM / TOOL."""
    sess = {"session.id": session} if session else {}
    with (
        tracer.start_as_current_span(
            "Agent workflow", attributes={"openinference.span.kind": "CHAIN", **sess}
        ),
        tracer.start_as_current_span(
            "helper",
            attributes={
                "openinference.span.kind": "AGENT",
                "agent.name": "helper",
                "input.value": user,
                "output.value": answer,
                **sess,
            },
        ),
    ):
        attrs: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": user,
            "llm.token_count.prompt": 11,
            "llm.token_count.completion": 3,
            "llm.token_count.total": 14,
        }
        for j, (call_id, name, args, _) in enumerate(tools):
            pre = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
            attrs[pre + "id"] = call_id
            attrs[pre + "function.name"] = name
            attrs[pre + "function.arguments"] = json.dumps(args)
        attrs["llm.output_messages.0.message.role"] = "assistant"
        with tracer.start_as_current_span("response", attributes=attrs):
            pass
        for _call_id, name, args, result in tools:
            tool_attrs = {
                "openinference.span.kind": "TOOL",
                "tool.name": name,
                "input.value": json.dumps(args),
                "output.value": json.dumps(result),
            }
            with tracer.start_as_current_span(name, attributes=tool_attrs):
                pass
        final = {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": user,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": answer,
        }
        with tracer.start_as_current_span("response", attributes=final):
            pass


def old_genai_turn(tracer: Tracer, user: str, answer: str) -> None:
    """An older GenAI instrumentation: one chat span with indexed gen_ai.prompt/completion."""
    attrs = {
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "be brief",
        "gen_ai.prompt.1.role": "user",
        "gen_ai.prompt.1.content": user,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": answer,
        "gen_ai.usage.prompt_tokens": 8,
        "gen_ai.usage.completion_tokens": 2,
    }
    with tracer.start_as_current_span(
        "openai.chat", attributes={**attrs, "gen_ai.operation.name": "chat"}
    ):
        pass
