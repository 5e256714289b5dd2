"""The public API, pinned: every name of ``assay``, ``assay.testing`` and ``assay.custom``, what
it is, and the parameters of each public function (names, order, keyword-only or not, defaults).

A move inside the package must keep these: a name that disappears, changes kind or loses a
parameter fails here, not in a user's code. Changing the API on purpose means changing this
table, which a review sees.
"""

from __future__ import annotations

import enum
import inspect
from types import ModuleType
from typing import Any

import pydantic
import pytest

import assay
import assay.custom
import assay.testing

API: dict[str, dict[str, tuple[str, list[str] | None]]] = {
    "assay": {
        "AssayError": ("exception", None),
        "ConfigError": ("exception", None),
        "EvalCase": ("model", None),
        "EvalConfig": ("model", None),
        "EvalSet": ("model", None),
        "EvalSetError": ("exception", None),
        "EvalSetJob": ("class", None),
        "EvalSetResult": ("model", None),
        "EvalStatus": ("enum", None),
        "InputError": ("exception", None),
        "Invocation": ("model", None),
        "MetricResult": ("class", None),
        "Problem": ("class", None),
        "RunUpdate": ("class", None),
        "Traces": ("class", None),
        "TracesError": ("exception", None),
        "__version__": ("str", None),
        "default_config": ("function", []),
        "evaluate": (
            "async function",
            ["jobs", "traces=None", "*agent=None", "*registry=None", "*concurrency=8",
             "*on_case=None", "*on_inference=None", "*judges=None", "*done=None",
             "*captures=None", "*progress=True",
             "*history=False", "*resume=None", "*executor=None", "*options=None"],
        ),
        "evaluate_sync": (
            "function",
            ["jobs", "traces=None", "*agent=None", "*registry=None", "*concurrency=8",
             "*on_case=None", "*on_inference=None", "*judges=None", "*done=None",
             "*captures=None", "*progress=True",
             "*history=False", "*resume=None", "*executor=None", "*options=None"],
        ),
        "load_config": ("function", ["path"]),
        "load_eval_set": ("function", ["path"]),
        "load_traces": ("function", ["paths", "reading=None"]),
        "parse_config": ("function", ["data", "file='<config>'"]),
        "write_eval_set": ("function", ["eval_set", "path"]),
    },
    "assay.testing": {
        "AgentEvaluator": ("class", None),
        "EvaluationFailed": ("exception", None),
        "aevaluate_agent": (
            "async function",
            ["agent", "eval_set", "*config=None", "*eval_ids=None", "*num_runs=2",
             "*judge_model=None", "*mock_tools=False", "*turn_timeout_s=300.0",
             "*inference_concurrency=4", "*agent_attempts=2", "*concurrency=8", "*cache=True",
             "*env=None", "*check=True", "*judge_profile=None", "*progress=True",
             "*history=False", "*resume=None", "*executor=None"],
        ),
        "agent_factory": ("function", ["agent", "*env=None"]),
        "assert_passed": ("function", ["results"]),
        "evaluate_agent": (
            "function",
            ["agent", "eval_set", "*config=None", "*eval_ids=None", "*num_runs=2",
             "*judge_model=None", "*mock_tools=False", "*turn_timeout_s=300.0",
             "*inference_concurrency=4", "*agent_attempts=2", "*concurrency=8", "*cache=True",
             "*env=None", "*check=True", "*judge_profile=None", "*progress=True",
             "*history=False", "*resume=None", "*executor=None"],
        ),
        "failure_report": ("function", ["results"]),
        "load_jobs": ("function", ["eval_set", "config=None"]),
    },
    "assay.custom": {  # the types of a custom metric's function, as google-adk's
        "BaseCriterion": ("model", None),
        "ConversationScenario": ("model", None),
        "EvalMetric": ("model", None),
        "EvalStatus": ("enum", None),
        "EvaluationResult": ("model", None),
        "Invocation": ("model", None),
        "PerInvocationResult": ("model", None),
        "RubricScore": ("model", None),
    },
}  # fmt: skip

AGENT_EVALUATOR = {  # ADK's AgentEvaluator, as assay.testing offers it: static methods
    "evaluate": (
        "async function",
        ["agent_module", "eval_dataset_file_path_or_dir", "num_runs=2", "agent_name=None",
         "initial_session_file=None", "print_detailed_results=True", "artifact_service=None",
         "output_file=None", "app_name=None", "eval_set_results_manager=None"],
    ),
    "evaluate_eval_set": (
        "async function",
        ["agent_module", "eval_set", "criteria=None", "eval_config=None", "num_runs=2",
         "agent_name=None", "print_detailed_results=True", "artifact_service=None",
         "output_file=None", "app_name=None", "eval_set_results_manager=None"],
    ),
    "find_config_for_test_file": ("function", ["test_file"]),
    "migrate_eval_data_to_new_schema": (
        "function", ["old_eval_data_file", "new_eval_data_file", "initial_session_file=None"]
    ),
}  # fmt: skip

MODULES = {"assay": assay, "assay.testing": assay.testing, "assay.custom": assay.custom}


def _kind(value: Any) -> str:
    if inspect.isclass(value):
        if issubclass(value, BaseException):
            return "exception"
        if issubclass(value, pydantic.BaseModel):
            return "model"
        if issubclass(value, enum.Enum):
            return "enum"
        return "class"
    if inspect.iscoroutinefunction(value):
        return "async function"
    if inspect.isfunction(value):
        return "function"
    return type(value).__name__


def _parameters(function: Any) -> list[str]:
    """Each parameter as ``name``, ``name=default``, ``*name=default`` (keyword-only),
    ``*args`` or ``**kwargs``."""
    shown = []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            shown.append(f"*{parameter.name}")
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            shown.append(f"**{parameter.name}")
            continue
        star = "*" if parameter.kind is parameter.KEYWORD_ONLY else ""
        default = "" if parameter.default is parameter.empty else f"={parameter.default!r}"
        shown.append(f"{star}{parameter.name}{default}")
    return shown


def _described(value: Any) -> tuple[str, list[str] | None]:
    kind = _kind(value)
    return kind, _parameters(value) if kind.endswith("function") else None


@pytest.mark.parametrize("module", sorted(API))
def test_the_public_names_are_exactly_the_pinned_ones(module: str) -> None:
    assert sorted(MODULES[module].__all__) == sorted(API[module])


@pytest.mark.parametrize(("module", "name"), [(m, n) for m in sorted(API) for n in API[m]])
def test_each_public_name_is_what_it_was_with_the_same_parameters(module: str, name: str) -> None:
    value = getattr(MODULES[module], name)
    assert _described(value) == API[module][name]


@pytest.mark.parametrize("name", sorted(AGENT_EVALUATOR))
def test_agent_evaluator_keeps_adks_static_methods(name: str) -> None:
    raw = inspect.getattr_static(assay.testing.AgentEvaluator, name)
    assert isinstance(raw, staticmethod)
    assert _described(raw.__func__) == AGENT_EVALUATOR[name]


def test_the_table_would_catch_a_lost_parameter() -> None:
    def before(jobs: object, traces: object = None, *, agent: object = None) -> None: ...
    def after(jobs: object, traces: object = None) -> None: ...

    assert _described(before) != _described(after)
    assert _described(before) == ("function", ["jobs", "traces=None", "*agent=None"])


def test_every_module_in_the_table_is_a_module() -> None:
    assert all(isinstance(module, ModuleType) for module in MODULES.values())
