"""What kind of file a parsed JSON or YAML document is, told by its top-level keys, so that a file
passed where another kind belongs is named for what it is, with where it goes, in one line
instead of a list of schema errors."""

from __future__ import annotations

from typing import Any, Literal

FileKind = Literal["eval set", "eval set result", "traces", "config", "session", "labels"]
PassedAs = Literal["EVALSET", "--traces"]

_CASES = frozenset({"eval_cases", "evalCases"})
_CASE_RESULTS = frozenset({"eval_case_results", "evalCaseResults"})
_INVOCATION_KEYS = frozenset(
    {"invocation_id", "invocationId", "user_content", "userContent", "final_response"}
)
_SESSION_KEYS = (frozenset({"app_name", "user_id"}), frozenset({"appName", "userId"}))

SAVE_TRACES = "assay eval EVALSET --agent SPEC --save-traces FILE"
"""How a traces file is made."""


def _is_traces(data: dict[str, Any]) -> bool:
    """``{eval_id: [Invocation, ...]}``: every value a list, and some list opening with an
    invocation."""
    if not data or not all(isinstance(value, list) for value in data.values()):
        return False
    return any(
        value and isinstance(value[0], dict) and _INVOCATION_KEYS & set(value[0])
        for value in data.values()
    )


def _is_session(data: dict[str, Any]) -> bool:
    keys = set(data)
    return any(names <= keys for names in _SESSION_KEYS) and bool({"state", "events"} & keys)


def kind_of(data: Any) -> FileKind | None:
    """The kind of file ``data`` (a parsed document) is, when its top-level keys say so."""
    if isinstance(data, list):
        results = data and all(isinstance(d, dict) and _CASE_RESULTS & set(d) for d in data)
        return "eval set result" if results else None
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if _CASES & keys:
        return "eval set"
    if _CASE_RESULTS & keys:
        return "eval set result"
    if {"labels", "traces"} <= keys:
        return "labels"
    if "criteria" in keys:
        return "config"
    if _is_session(data):
        return "session"
    return "traces" if _is_traces(data) else None


_WHAT = {
    "eval set": "an eval set",
    "eval set result": "an ADK eval set result (.evalset_result.json)",
    "traces": "a traces file (recorded invocations by eval_id)",
    "config": "an EvalConfig (criteria)",
    "session": (
        "ADK's initial session (app_name, user_id, state), read automatically with the legacy "
        ".test.json files in its folder"
    ),
    "labels": "a labels file for `assay judge agree`",
}

_WHERE = {
    "eval set": f"pass it as EVALSET, and traces from `{SAVE_TRACES}`",
    "eval set result": "pass it as --traces (its actual invocations are read)",
    "traces": "pass it as --traces FILE, with the eval set it records as EVALSET",
    "config": "pass it as --config FILE",
    "session": "pass the .test.json file beside it as EVALSET",
    "labels": "run `assay judge agree FILE`",
}


def wrong_kind(data: Any, passed_as: PassedAs) -> str | None:
    """What to say when ``data`` was passed as ``passed_as`` but is another kind of file
    (``an eval set, not a traces file: pass it as EVALSET, ...``), or None when it is not
    recognisably another kind (its schema errors then say what is wrong)."""
    kind = kind_of(data)
    belongs = {"EVALSET": ("eval set",), "--traces": ("traces", "eval set result")}[passed_as]
    if kind is None or kind in belongs:
        return None
    if passed_as == "--traces":
        return not_traces(kind)
    return f"{_WHAT[kind]}, not an eval set: {_WHERE[kind]}"


def not_traces(kind: FileKind) -> str:
    """What to say of a file of ``kind`` passed as ``--traces``."""
    return f"{_WHAT[kind]}, not a traces file: {_WHERE[kind]}"


def describe(kind: FileKind) -> str:
    """The kind in words (``an eval set``)."""
    return _WHAT[kind]
