"""What a span says, in any of the three conventions, detected per span.

* OpenTelemetry GenAI semantic conventions: ``gen_ai.operation.name`` (``invoke_agent``,
  ``chat``/``generate_content``/``text_completion``, ``execute_tool``, ``invoke_workflow``),
  ``gen_ai.input.messages``/``output.messages`` (role + typed parts), ``gen_ai.tool.*``,
  ``gen_ai.usage.*``; and the older indexed ``gen_ai.prompt.N.*``/``gen_ai.completion.N.*``.
* google-adk's spans: the default schema (the GenAI names plus ``gcp.vertex.agent.*`` ids) and
  the legacy one (``call_llm`` spans with ``gcp.vertex.agent.llm_request``/``llm_response``,
  ``tool_call_args``/``tool_response``; an ``invocation`` root).
* OpenInference: ``openinference.span.kind``, ``llm.input_messages.N.message.*``,
  ``llm.output_messages.N.message.*``, ``tool.name``, ``input.value``/``output.value``,
  ``llm.token_count.*``, ``session.id``.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic.alias_generators import to_snake

from assay.evalset.content import FunctionCall, FunctionResponse, Part
from assay.traces.spans import Span

AGENT, WORKFLOW, LLM, TOOL, OTHER = "agent", "workflow", "llm", "tool", "other"
_LLM_OPS = {"chat", "generate_content", "text_completion", "completion", "embeddings"}
SESSION_KEYS = ("gen_ai.conversation.id", "gcp.vertex.agent.session_id", "session.id")
"""The attributes that name a session, first found wins."""
_INDEXED = re.compile(r"^(?P<i>[0-9]+)\.(?P<rest>.+)$")


MERGED_TOOLS = "(merged tools)"
"""ADK's extra tool span for parallel calls (its call id joins no call): not a tool call."""


def role(span: Span) -> str:
    """What the span is: an agent, a workflow (an ADK invocation root), a model call, a tool."""
    attrs = span.attributes
    if attrs.get("gen_ai.tool.name") == MERGED_TOOLS:
        return OTHER
    op = attrs.get("gen_ai.operation.name")
    oi = str(attrs.get("openinference.span.kind", "")).upper()
    name = span.name
    if op == "execute_tool" or oi == "TOOL" or name.startswith("execute_tool"):
        return TOOL
    if op in _LLM_OPS or oi == "LLM" or name == "call_llm":
        return LLM
    if op == "invoke_workflow" or name in ("invocation", "invoke_workflow"):
        return WORKFLOW
    if op in ("invoke_agent", "create_agent") or oi == "AGENT" or name.startswith("invoke_agent"):
        return AGENT
    return OTHER


def conventions(span: Span) -> set[str]:
    """The conventions the span's attributes follow (``genai``, ``adk``, ``adk-legacy``,
    ``openinference``)."""
    found: set[str] = set()
    attrs = span.attributes
    if any(k.startswith("gen_ai.") for k in attrs):
        found.add("genai")
    if span.scope == "gcp.vertex.agent" or any(k.startswith("gcp.vertex.agent.") for k in attrs):
        legacy = span.name == "call_llm" or "gcp.vertex.agent.llm_request" in attrs
        found.add("adk-legacy" if legacy or span.name == "invocation" else "adk")
    if "openinference.span.kind" in attrs:
        found.add("openinference")
    return found


def session_id(span: Span) -> str | None:
    for key in SESSION_KEYS:
        value = span.attributes.get(key)
        if isinstance(value, str | int) and str(value):
            return str(value)
    return None


def agent_name(span: Span) -> str | None:
    attrs = span.attributes
    name = attrs.get("gen_ai.agent.name") or attrs.get("agent.name")
    if isinstance(name, str) and name:
        return name
    if span.name.startswith("invoke_agent "):
        return span.name.removeprefix("invoke_agent ").strip() or None
    return None


# --------------------------------------------------------------------------- parsing helpers


def loads(value: Any) -> Any:
    """A JSON string's value (other values as they are; text that is not JSON as text)."""
    if isinstance(value, str) and value[:1] in ("{", "[", '"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def as_object(value: Any, wrap: str = "result") -> dict[str, Any] | None:
    """A tool's arguments or result as a JSON object (ADK wraps other values as ``{"result"}``)."""
    value = loads(value)
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    return {wrap: value}


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.0.a``, ``prefix.0.b``, ``prefix.1.a`` -> ``[{"a", "b"}, {"a"}]`` (by index)."""
    groups: dict[int, dict[str, Any]] = {}
    dotted = prefix + "."
    for key, value in attrs.items():
        if key.startswith(dotted):
            found = _INDEXED.match(key[len(dotted) :])
            if found:
                groups.setdefault(int(found["i"]), {})[found["rest"]] = value
    return [groups[i] for i in sorted(groups)]


def _role(value: Any) -> str:
    text = str(value or "").lower()
    if text in ("assistant", "model", "ai"):
        return "model"
    if text == "system":
        return "system"
    return "user"


_PART_KEYS = frozenset(Part.model_fields)
_CALL_KEYS = frozenset(FunctionCall.model_fields)
_RESPONSE_KEYS = frozenset(FunctionResponse.model_fields)

Msg = dict[str, Any]
"""A message as genai's ``Content`` JSON (``{"role", "parts": [...]}``): invocations are built
as JSON and validated once each, which is many times faster than building models part by part."""


def _genai_json_part(part: Any) -> Msg | None:
    """A part of ADK's genai JSON, keeping the keys genai's Part has (camelCase or snake)."""
    if not isinstance(part, dict):
        return None
    found: Msg = {}
    for key, value in part.items():
        name = to_snake(key)
        if name not in _PART_KEYS or value is None:
            continue
        if name == "function_call" and isinstance(value, dict):
            value = {to_snake(k): v for k, v in value.items() if to_snake(k) in _CALL_KEYS}
        elif name == "function_response" and isinstance(value, dict):
            value = {to_snake(k): v for k, v in value.items() if to_snake(k) in _RESPONSE_KEYS}
        found[name] = value
    return found or None


def _content(data: Any) -> Msg | None:
    """A message from ADK's genai JSON (None when it is not one)."""
    if not isinstance(data, dict):
        return None
    parts = [p for p in (_genai_json_part(x) for x in data.get("parts") or []) if p]
    return make_content(data.get("role"), parts)


# --------------------------------------------------------------------------- GenAI messages


def make_part(**fields: Any) -> Msg:
    """A part as JSON (null fields left out)."""
    return {k: v for k, v in fields.items() if v is not None}


def make_content(role: Any, parts: list[Msg]) -> Msg:
    return {"role": str(role) if role else None, "parts": parts}


def make_call(call_id: Any, name: Any, args: dict[str, Any] | None) -> Msg:
    return make_part(
        id=str(call_id) if call_id else None, name=str(name) if name else None, args=args
    )


def make_response(call_id: Any, name: Any, response: dict[str, Any] | None) -> Msg:
    return make_part(
        id=str(call_id) if call_id else None, name=str(name) if name else None, response=response
    )


def text_of(message: Msg | None) -> str:
    """The message's text parts (thoughts left out), joined."""
    parts = (message or {}).get("parts") or []
    return "\n".join(p["text"] for p in parts if p.get("text") and not p.get("thought"))


def calls_of(message: Msg | None) -> list[Msg]:
    """The message's function calls."""
    return [
        p["function_call"] for p in (message or {}).get("parts") or [] if p.get("function_call")
    ]


def _genai_part(part: Any) -> Msg | None:
    if not isinstance(part, dict):
        return make_part(text=str(part)) if isinstance(part, str) else None
    kind = part.get("type")
    if kind == "text":
        text = str(part.get("content", ""))
        call = repr_call(text)
        return make_part(function_call=call) if call else make_part(text=text)
    if kind == "reasoning":
        return make_part(text=str(part.get("content", "")), thought=True)
    if kind == "tool_call":
        args = as_object(part.get("arguments"), "value")
        return make_part(function_call=make_call(part.get("id"), part.get("name"), args))
    if kind == "tool_call_response":
        result = part.get("response", part.get("result"))
        return make_part(
            function_response=make_response(part.get("id"), part.get("name"), as_object(result))
        )
    return None


_REPR_FIELD = re.compile(r"""(\w+)=('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def repr_call(text: str) -> Msg | None:
    """A tool call the OpenAI Agents GenAI instrumentation wrote as a Python repr
    (``ResponseFunctionToolCall(arguments='{...}', call_id='c1', name='f', ...)``), or None."""
    if not text.startswith("ResponseFunctionToolCall("):
        return None
    fields: dict[str, Any] = {}
    for key, quoted in _REPR_FIELD.findall(text):
        if key not in fields:
            try:
                fields[key] = ast.literal_eval(quoted)
            except (ValueError, SyntaxError):
                continue
    if not isinstance(fields.get("name"), str):
        return None
    args = as_object(fields.get("arguments"), "value")
    return make_call(fields.get("call_id") or fields.get("id"), fields["name"], args)


def genai_messages(value: Any) -> list[Msg] | None:
    """``gen_ai.input.messages``/``output.messages`` (a JSON string or a list) as Contents."""
    value = loads(value)
    if not isinstance(value, list):
        return None
    found = []
    for message in value:
        if not isinstance(message, dict):
            continue
        parts = [p for p in (_genai_part(x) for x in message.get("parts") or []) if p is not None]
        if "content" in message and not parts and isinstance(message["content"], str):
            parts = [make_part(text=message["content"])]
        found.append(make_content(_role(message.get("role")), parts))
    return found


def _indexed_messages(attrs: dict[str, Any], prefix: str, inner: str) -> list[Msg] | None:
    """Older GenAI (``gen_ai.prompt.N.role``/``content``/``tool_calls.M.*``) or OpenInference
    (``llm.input_messages.N.message.role``...) indexed messages."""
    rows = indexed(attrs, prefix)
    if not rows:
        return None
    found = []
    for row in rows:
        row = {k.removeprefix(inner): v for k, v in row.items()}
        parts: list[Msg] = []
        text = row.get("content")
        if isinstance(text, str) and text:
            parts.append(make_part(text=text))
        for piece in [] if parts else indexed(row, "contents"):
            if isinstance(piece.get("message_content.text"), str):
                parts.append(make_part(text=piece["message_content.text"]))
        for call in indexed(row, "tool_calls"):
            call = {k.removeprefix("tool_call."): v for k, v in call.items()}
            name = call.get("function.name", call.get("name"))
            args = as_object(call.get("function.arguments", call.get("arguments")), "value")
            parts.append(make_part(function_call=make_call(call.get("id"), name, args)))
        call_id = row.get("tool_call_id")
        who = _role(row.get("role"))
        if str(row.get("role", "")).lower() == "tool":
            response = make_response(call_id, row.get("name"), as_object(text))
            parts = [make_part(function_response=response)]
        found.append(make_content(who, parts))
    return found


# --------------------------------------------------------------------------- model calls


def llm_input(span: Span) -> list[Msg] | None:
    """The messages a model call was given, or None when the span carries none."""
    attrs = span.attributes
    if "gen_ai.input.messages" in attrs:
        return genai_messages(attrs["gen_ai.input.messages"])
    request = loads(attrs.get("gcp.vertex.agent.llm_request"))
    if isinstance(request, dict) and request.get("contents"):
        return [c for c in (_content(x) for x in request["contents"]) if c is not None]
    for prefix, inner in (("llm.input_messages", "message."), ("gen_ai.prompt", "")):
        found = _indexed_messages(attrs, prefix, inner)
        if found:
            return found
    return None


_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")
_INDEXED_CONTENT = (
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
)


def has_content(span: Span) -> bool:
    """Whether a model span carries messages (ADK legacy: ``"{}"`` means not captured)."""
    attrs = span.attributes
    if any(key in attrs for key in _CONTENT_KEYS):
        return True
    for key in ("gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"):
        if attrs.get(key) not in _EMPTY:
            return True
    return any(key.startswith(_INDEXED_CONTENT) for key in attrs)


def llm_output(span: Span) -> Msg | None:
    """The model's answer (every output message's parts in one Content), or None."""
    attrs = span.attributes
    messages: list[Msg] | None = None
    if "gen_ai.output.messages" in attrs:
        messages = genai_messages(attrs["gen_ai.output.messages"])
    elif isinstance(response := loads(attrs.get("gcp.vertex.agent.llm_response")), dict):
        content = _content(response.get("content"))
        messages = [content] if content is not None else None
    else:
        for prefix, inner in (("llm.output_messages", "message."), ("gen_ai.completion", "")):
            messages = _indexed_messages(attrs, prefix, inner) or None
            if messages:
                break
    if not messages:
        return None
    parts = [p for m in messages for p in m.get("parts") or []]
    return make_content("model", parts)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage(span: Span) -> dict[str, Any] | None:
    """The call's token usage in genai's ``usage_metadata`` shape, or None."""
    attrs = span.attributes
    response = loads(attrs.get("gcp.vertex.agent.llm_response"))
    if isinstance(response, dict) and isinstance(response.get("usage_metadata"), dict):
        return {k: v for k, v in response["usage_metadata"].items() if v is not None}
    prompt = _int(
        attrs.get(
            "gen_ai.usage.input_tokens",
            attrs.get("gen_ai.usage.prompt_tokens", attrs.get("llm.token_count.prompt")),
        )
    )
    output = _int(
        attrs.get(
            "gen_ai.usage.output_tokens",
            attrs.get("gen_ai.usage.completion_tokens", attrs.get("llm.token_count.completion")),
        )
    )
    total = _int(attrs.get("llm.token_count.total", attrs.get("gen_ai.usage.total_tokens")))
    if prompt is None and output is None and total is None:
        return None
    found: dict[str, Any] = {}
    if prompt is not None:
        found["prompt_token_count"] = prompt
    if output is not None:
        found["candidates_token_count"] = output
    if total is None and prompt is not None and output is not None:
        total = prompt + output
    if total is not None:
        found["total_token_count"] = total
    return found


def model_version(span: Span) -> str | None:
    attrs = span.attributes
    value = (
        attrs.get("gen_ai.response.model")
        or attrs.get("gen_ai.request.model")
        or attrs.get("llm.model_name")
    )
    return str(value) if value else None


# --------------------------------------------------------------------------- tools and agents


@dataclass(slots=True)
class ToolInfo:
    """A tool span's call: name, id, arguments and result (None when not recorded)."""

    name: str
    call_id: str | None
    args: dict[str, Any] | None
    result: dict[str, Any] | None
    error: str | None


_EMPTY = ("{}", "N/A", "", None)


def tool_info(span: Span) -> ToolInfo:
    attrs = span.attributes
    name = (
        attrs.get("gen_ai.tool.name")
        or attrs.get("tool.name")
        or span.name.removeprefix("execute_tool").strip()
    )
    call_id = attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id") or attrs.get("tool.id")
    raw_args = attrs.get("gen_ai.tool.call.arguments", attrs.get("tool.parameters"))
    if raw_args is None and attrs.get("gcp.vertex.agent.tool_call_args") not in _EMPTY:
        raw_args = attrs.get("gcp.vertex.agent.tool_call_args")
    if raw_args is None and "openinference.span.kind" in attrs:
        raw_args = attrs.get("input.value")
    raw_result = attrs.get("gen_ai.tool.call.result")
    if raw_result is None and attrs.get("gcp.vertex.agent.tool_response") not in _EMPTY:
        raw_result = attrs.get("gcp.vertex.agent.tool_response")
    if raw_result is None and "openinference.span.kind" in attrs:
        raw_result = attrs.get("output.value")
    error = None
    if span.status_code == "ERROR" or attrs.get("error.type"):
        error = span.status_message or str(attrs.get("error.type") or "error")
    result = as_object(raw_result)
    if result is None and error is not None:
        result = {"error": error}
    return ToolInfo(
        str(name), str(call_id) if call_id else None, as_object(raw_args, "value"), result, error
    )


def agent_io(span: Span) -> tuple[Msg | None, Msg | None]:
    """What an agent (or workflow) span says it was given and answered, when it says."""
    attrs = span.attributes
    given = genai_messages(attrs.get("gen_ai.input.messages")) or []
    users = [c for c in given if c["role"] == "user" and any(p.get("text") for p in c["parts"])]
    user = users[-1] if users else None
    answer = llm_output(span) if "gen_ai.output.messages" in attrs else None
    if "openinference.span.kind" in attrs:
        user = user or _value_content(attrs.get("input.value"), "user")
        answer = answer or _value_content(attrs.get("output.value"), "model")
    return user, answer


def _value_content(value: Any, who: str) -> Msg | None:
    """OpenInference ``input.value``/``output.value``: text, or JSON holding the text."""
    if value is None or value == "":
        return None
    data = loads(value)
    if isinstance(data, list):  # a request's input list: its last message of ``who``
        said = [m for m in data if isinstance(m, dict) and isinstance(m.get("content"), str)]
        mine = [m for m in said if _role(m.get("role")) == who]
        return make_content(who, [make_part(text=mine[-1]["content"])]) if mine else None
    if isinstance(data, dict):
        for key in ("input", "output", "content", "text", "final_output", "message"):
            if isinstance(data.get(key), str):
                return make_content(who, [make_part(text=data[key])])
    if isinstance(data, str):
        return make_content(who, [make_part(text=data)])
    return make_content(who, [make_part(text=json.dumps(data, ensure_ascii=False))])
