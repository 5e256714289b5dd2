"""Tool declarations as recorded in eval sets, in the forms a chat model's API accepts.

ADK records genai ``Tool`` objects (``function_declarations`` with genai-schema ``parameters``:
upper-case types, snake_case or camelCase keys; or ``parameters_json_schema``); hand-written files
may hold bare function declarations or OpenAI tools. :func:`openai_tools` turns any of them into
OpenAI ``tools``; :func:`declarations_from_calls` declares the tools an eval set's recorded calls
use, for files that carry no declarations.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic.alias_generators import to_snake

from assay.agents.python import AgentLoadError
from assay.evalset.case import EvalCase

_JSON = dict[str, Any]

_CAMEL = "anyOf minItems maxItems minLength maxLength minProperties maxProperties"
_SCHEMA_NAMES = {to_snake(name): name for name in [*_CAMEL.split(), "additionalProperties"]}
_SCHEMA_NAMES |= {"defs": "$defs", "ref": "$ref"}
_SCHEMA_DROPPED = frozenset({"property_ordering", "example", "nullable"})


def json_schema(schema: Mapping[str, Any]) -> _JSON:
    """A genai ``Schema`` (snake_case or camelCase keys, upper-case types) as JSON Schema
    (lower-case types, JSON Schema's key names; ``nullable`` adds ``"null"`` to the type).
    A schema already in JSON Schema comes back the same."""
    out: _JSON = {}
    for key, value in schema.items():
        name = to_snake(key) if isinstance(key, str) else key
        if value is None or name in _SCHEMA_DROPPED:
            continue
        if name == "type":
            kinds = [str(t).lower() for t in (value if isinstance(value, list) else [value])]
            kinds = [kind for kind in kinds if kind != "type_unspecified"]
            if kinds:
                out["type"] = kinds if isinstance(value, list) else kinds[0]
        elif name in ("properties", "defs") and isinstance(value, Mapping):
            out[_SCHEMA_NAMES.get(name, name)] = {k: _sub(v) for k, v in value.items()}
        elif name in ("items", "additional_properties") and isinstance(value, Mapping):
            out[_SCHEMA_NAMES.get(name, name)] = json_schema(value)
        elif name == "any_of" and isinstance(value, list):
            out["anyOf"] = [_sub(v) for v in value]
        else:
            out[_SCHEMA_NAMES.get(name, key)] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _sub(value: Any) -> Any:
    return json_schema(value) if isinstance(value, Mapping) else value


def _function(declaration: Mapping[str, Any], *, openai: bool = False) -> _JSON:
    name = declaration.get("name")
    if not isinstance(name, str) or not name.strip():
        shown = json.dumps(declaration, default=str)[:200]
        raise AgentLoadError(f"a recorded tool declaration has no name: {shown}")
    out: _JSON = {"name": name}
    if isinstance(declaration.get("description"), str):
        out["description"] = declaration["description"]
    given = declaration.get("parameters_json_schema", declaration.get("parametersJsonSchema"))
    if openai or given is not None:
        parameters = given if given is not None else declaration.get("parameters")
    else:
        raw = declaration.get("parameters")
        parameters = json_schema(raw) if isinstance(raw, Mapping) else None
    no_parameters = {"type": "object", "properties": {}}
    out["parameters"] = dict(parameters) if isinstance(parameters, Mapping) else no_parameters
    return out


def _functions(item: Any) -> list[_JSON]:
    """The function declarations of one recorded tool, whatever its form; none for a tool a
    model here cannot call (Google Search, code execution, retrieval)."""
    if hasattr(item, "model_dump"):  # a genai object given in Python
        item = item.model_dump(mode="json", exclude_none=True)
    if not isinstance(item, Mapping):
        raise AgentLoadError(
            f"a recorded tool declaration is {type(item).__name__}; expected a genai Tool "
            "(function_declarations), a function declaration or an OpenAI tool"
        )
    if item.get("type") == "function" and isinstance(item.get("function"), Mapping):
        return [_function(item["function"], openai=True)]
    declared = item.get("function_declarations", item.get("functionDeclarations"))
    if isinstance(declared, list):
        return [_function(d) for d in declared if isinstance(d, Mapping)]
    return [_function(item)] if "name" in item else []


def openai_tools(declarations: Sequence[Any]) -> list[_JSON]:
    """Recorded tool declarations as OpenAI ``tools``, each function name once (the first)."""
    tools: dict[str, _JSON] = {}
    for item in declarations:
        for function in _functions(item):
            tools.setdefault(function["name"], {"type": "function", "function": function})
    return list(tools.values())


_VALUE_TYPES = ((bool, "BOOLEAN"), (int, "INTEGER"), (float, "NUMBER"), (str, "STRING"))


def _value_schema(value: Any) -> _JSON:
    """A genai schema for a recorded argument value (no type for a null)."""
    for kind, name in _VALUE_TYPES:
        if isinstance(value, kind):
            return {"type": name}
    if isinstance(value, list):
        return {"type": "ARRAY", "items": _value_schema(value[0]) if value else {"type": "STRING"}}
    return {"type": "OBJECT"} if isinstance(value, dict) else {}


def declarations_from_calls(cases: Sequence[EvalCase]) -> list[_JSON]:
    """A genai ``Tool`` declaring every tool called in ``cases``' conversations, its parameters
    those of the recorded arguments (typed from the first value seen); empty when none."""
    found: dict[str, _JSON] = {}
    for case in cases:
        for invocation in case.conversation or []:
            for call in invocation.tool_calls():
                if call.name:
                    properties = found.setdefault(call.name, {})
                    for key, value in (call.args or {}).items():
                        properties.setdefault(key, _value_schema(value))
    if not found:
        return []
    functions = [
        {"name": name, "parameters": {"type": "OBJECT", "properties": properties}}
        for name, properties in found.items()
    ]
    return [{"function_declarations": functions}]
