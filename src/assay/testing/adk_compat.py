"""``AgentEvaluator``: google-adk 2.13's test helper, with the same calls, run by assay.

Switching is one import::

    # from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from assay.testing import AgentEvaluator

    @pytest.mark.asyncio  # pytest-asyncio, as ADK's own tests use it
    async def test_home_automation() -> None:
        await AgentEvaluator.evaluate(
            "home_automation_agent",
            "tests/fixture/home_automation_agent/simple_test.test.json",
            initial_session_file="tests/fixture/home_automation_agent/initial.session.json",
        )

As in ADK: ``agent_module`` is a module exposing ``root_agent`` (or ``get_agent_async``),
directly or in its ``agent`` submodule, and ``agent_name`` picks a sub-agent. It also takes every
other spec ``assay eval --agent`` takes: an ADK agent folder, ``module:attr``,
``path/to/file.py:attr``, ``http(s)://...``, ``openai:MODEL`` / ``ollama:MODEL``; a spec that
cannot be used is an :class:`~assay.agents.python.AgentLoadError` naming ``agent_module``.

A folder of eval files is searched for ``*.test.json`` files (any depth), each evaluated with the
``test_config.json`` beside it (else the default criteria); ``initial_session_file`` seeds the legacy files' sessions (and is refused
for eval-set files, which carry their own); each case runs ``num_runs`` times (2), and a metric
fails a case when the mean of its per-turn scores over every run is below its threshold, or when
it produced no score; a run that produced no metric results at all fails its case too. Failures
raise an ``AssertionError`` (:class:`~assay.testing.failures.EvaluationFailed`) whose message
shows each failing case, its metrics and its failing turns.

Where it differs: every file is evaluated before anything is raised (ADK stops at the first file
that fails), so the message covers them all; likewise every eval file and ``test_config.json``
that does not load is reported at once, before anything runs; the agent is loaded once, not once
per file; tool calls in ``output_file`` read ``name({args})``; ``artifact_service`` is not
supported yet.
"""

from __future__ import annotations

import csv
import logging
import os
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay._internal.files import load_data
from assay.agents.base import AgentFactory
from assay.agents.python import AgentLoadError, load_python_target
from assay.agents.spec import (
    factory_for,
    find_root_agent,
    for_argument,
    is_adk_agent,
    resolve_agent,
    spec_kind,
)
from assay.config import EvalConfig, parse_config
from assay.errors import EvalSetError, Problem
from assay.evalset.case import EvalSet, SessionInput
from assay.evalset.content import content_text
from assay.evalset.io import LoadedEvalSet, load_eval_set
from assay.evalset.legacy import LegacyInitialSession
from assay.metrics.base import EvalStatus
from assay.results.model import EvalCaseResult, EvalMetricResult, EvalSetResult
from assay.runner.evaluate import EvalSetJob, summarize
from assay.runner.jobs import config_for, given_config, jobs_for
from assay.testing.evaluate import RunSettings, run_jobs
from assay.testing.failures import (
    Block,
    EvaluationFailed,
    MetricLine,
    TurnExcerpt,
    failing_turns,
    render_blocks,
    set_label,
    tool_calls_text,
)

logger = logging.getLogger(__name__)

NUM_RUNS = 2
"""ADK's default number of runs per case."""

_CSV_COLUMNS = (
    "eval_set_id",
    "eval_id",
    "metric_name",
    "threshold",
    "score",
    "eval_status",
    "prompt",
    "expected_response",
    "actual_response",
    "expected_tool_calls",
    "actual_tool_calls",
)


# --- the verdict, as ADK's AgentEvaluator reaches it ---------------------------------------


def _informational(row: EvalMetricResult) -> bool:
    return row.eval_status is EvalStatus.INFORMATIONAL or (
        row.criterion is None and row.threshold is None
    )


def _per_metric(runs: Sequence[EvalCaseResult]) -> dict[str, tuple[float | None, list[float]]]:
    """Per metric (first-seen order): its threshold and every per-turn score over all runs."""
    found: dict[str, tuple[float | None, list[float]]] = {}
    for case in runs:
        for row in case.eval_metric_result_per_invocation:
            for metric in row.eval_metric_results:
                if metric.metric_name in case.assay.not_applicable or _informational(metric):
                    continue
                _, scores = found.setdefault(metric.metric_name, (metric.threshold, []))
                if metric.score is not None:
                    scores.append(metric.score)
    return found


def _metric_verdicts(runs: Sequence[EvalCaseResult]) -> list[MetricLine]:
    reasons = {k: v for case in runs for k, v in case.assay.metric_reasons.items()}
    lines = []
    for name, (threshold, scores) in _per_metric(runs).items():
        mean = statistics.mean(scores) if scores else None
        if mean is None:
            status = EvalStatus.NOT_EVALUATED
        elif threshold is None or mean >= threshold:
            status = EvalStatus.PASSED
        else:
            status = EvalStatus.FAILED
        note = reasons.get(name, "no score") if mean is None else ""
        if len(scores) > 1:
            note = f"mean of {len(scores)} turn scores over every run"
        lines.append(MetricLine(name, mean, threshold, status, note))
    return lines


def _turn_key(turn: TurnExcerpt) -> tuple[object, ...]:
    actual = turn.actual
    return (turn.index, turn.failed, content_text(actual.final_response), tool_calls_text(actual))


def _turns(runs: Sequence[EvalCaseResult], failing: set[str]) -> list[TurnExcerpt]:
    """The failing metrics' failing turns over every run; a turn that went the same way in
    several runs is shown once, labelled with all of them."""
    shown: dict[tuple[object, ...], TurnExcerpt] = {}
    for case in runs:
        label = (case.assay.run,) if len(runs) > 1 else ()
        for turn in failing_turns(case, label):
            if turn.failed and not failing & set(turn.failed):
                continue
            key = _turn_key(turn)
            earlier = shown.get(key)
            shown[key] = turn if earlier is None else replace(earlier, runs=earlier.runs + label)
    return list(shown.values())


def adk_block(runs: Sequence[EvalCaseResult]) -> Block | None:
    """The block for one eval case over all its runs, or None when ADK would pass it."""
    metrics = _metric_verdicts(runs)
    failing = {m.name for m in metrics if m.status is not EvalStatus.PASSED}
    empty = [
        case
        for case in runs
        if case.final_eval_status is not EvalStatus.PASSED
        and not any(row.eval_metric_results for row in case.eval_metric_result_per_invocation)
    ]
    if not failing and not empty:
        return None
    several = len(runs) > 1
    block = Block(runs[0].eval_id, "FAILED", runs=len(runs), metrics=metrics)
    for case in runs:
        if case.assay.reason:
            prefix = f"run {case.assay.run}: " if several else ""
            block.notes.append(prefix + case.assay.reason)
    if empty and not metrics:
        block.notes.append(f"{len(empty)} of {len(runs)} run(s) produced no metric results")
    block.turns = _turns(runs, failing)
    return block


def _by_case(result: EvalSetResult) -> dict[str, list[EvalCaseResult]]:
    grouped: dict[str, list[EvalCaseResult]] = {}
    for case in result.eval_case_results:
        grouped.setdefault(case.eval_id, []).append(case)
    return grouped


def adk_failure_report(results: Sequence[EvalSetResult], agent_module: str) -> str | None:
    """The failure message under ADK's rules (see the module docstring), or None if none."""
    groups = []
    failed = total = 0
    for result in results:
        cases = _by_case(result)
        total += len(cases)
        blocks = [b for runs in cases.values() if (b := adk_block(runs)) is not None]
        failed += len(blocks)
        groups.append((set_label(result), blocks))
    if not failed:
        return None
    headline = f"{failed} of {total} eval case(s) failed for {agent_module}"
    return render_blocks(groups, headline)


# --- loading: the agent, the files, the initial session -----------------------------------


def _module_name(agent_module: str) -> str:
    """The module an ADK module or folder spec is imported as (a folder: by its name)."""
    path = Path(agent_module)
    return path.resolve().name if path.is_dir() else agent_module


async def _root_agent(agent_module: str) -> tuple[Any, Any]:
    """``root_agent`` of the module (or of its ``agent`` submodule), else what its
    ``get_agent_async()`` returns, with the cleanup object it may return beside it."""
    try:
        return find_root_agent(agent_module), None
    except AgentLoadError as missing:
        module = _module_name(agent_module)
        for name in (f"{module}.agent", module):
            make = getattr(sys.modules.get(name), "get_agent_async", None)
            if callable(make):
                made = await make()
                return made if isinstance(made, tuple) else (made, None)
        raise missing


def _pick(root: Any, agent_name: str | None) -> Any:
    if not agent_name:
        return root
    find = getattr(root, "find_agent", None)
    if callable(find):
        found = find(agent_name)
    else:
        own = getattr(root, "name", None) or getattr(root, "__name__", None)
        found = root if own == agent_name else None
    if found is None:
        raise ValueError(f"Sub-Agent {agent_name!r} not found.")
    return found


def _initial_session(path: str | None) -> SessionInput | None:
    if not path:
        return None
    data = load_data(Path(path), EvalSetError)
    if not isinstance(data, dict):
        expected = "expected an ADK session object with 'app_name', 'user_id' and 'state'"
        raise EvalSetError([Problem(path, "", expected)])
    if not data:
        return None
    try:
        session = LegacyInitialSession.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise EvalSetError([Problem(path, where, first["msg"])]) from None
    return SessionInput(app_name=session.app_name, user_id=session.user_id, state=session.state)


def _with_session(
    loaded: LoadedEvalSet, session: SessionInput | None, given: bool
) -> LoadedEvalSet:
    """ADK's sessions: a legacy per-turn file gets the given session (none without one, as ADK
    does not read an ``initial.session.json`` beside it); an eval-set file refuses one."""
    if loaded.format == "evalset" or loaded.format == "jsonl":
        if given and session is not None:
            raise AssertionError(
                f"{loaded.path}: the initial session of an eval-set file belongs in its cases' "
                "session_input; initial_session_file is only for the legacy .test.json format"
            )
        return loaded
    if loaded.format == "legacy_cases" and not given:
        return loaded
    cases = [
        case.model_copy(update={"session_input": session}) for case in loaded.eval_set.eval_cases
    ]
    return replace(loaded, eval_set=loaded.eval_set.model_copy(update={"eval_cases": cases}))


def _test_files(path_or_dir: str) -> list[str]:
    if not os.path.isdir(path_or_dir):
        return [path_or_dir]
    found = sorted(
        os.path.join(root, name)
        for root, _, names in os.walk(path_or_dir)
        for name in names
        if name.endswith(".test.json")
    )
    if not found:
        raise ValueError(
            f"No `*.test.json` eval files found in {path_or_dir}, so there is nothing to evaluate."
        )
    return found


def _as_config(eval_config: Any) -> EvalConfig:
    """assay's config, its data, or ADK's ``EvalConfig``."""
    if not isinstance(eval_config, EvalConfig | Mapping):
        eval_config = eval_config.model_dump(mode="json", exclude_none=True)
    config, _source = given_config(eval_config)
    return config


def _as_eval_set(eval_set: Any) -> EvalSet:
    if isinstance(eval_set, EvalSet):
        return eval_set
    return EvalSet.model_validate(eval_set.model_dump(mode="json", exclude_none=True))


def _check_set(job: EvalSetJob) -> None:
    if not job.loaded.eval_set.eval_cases:
        raise ValueError(
            f"No eval cases were evaluated in {job.loaded.path}, so there is nothing to report a "
            "pass or a failure for. This happens when the eval set has no eval cases."
        )


# --- output: console, CSV, an ADK results manager -----------------------------------------


def _print(results: Sequence[EvalSetResult]) -> None:
    from rich.console import Console

    from assay.report.console import print_results

    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "140"))
    console = Console(file=sys.stdout, width=width, highlight=False)
    summary = summarize([c for r in results for c in r.eval_case_results])
    print_results(console, results, summary, detailed=True)


def _csv_rows(result: EvalSetResult) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for eval_id, runs in _by_case(result).items():
        per_metric: dict[str, list[dict[str, Any]]] = {}
        for case in runs:
            for turn in case.eval_metric_result_per_invocation:
                actual, expected = turn.actual_invocation, turn.expected_invocation
                for metric in turn.eval_metric_results:
                    per_metric.setdefault(metric.metric_name, []).append(
                        {
                            "eval_set_id": result.eval_set_id,
                            "eval_id": eval_id,
                            "metric_name": metric.metric_name,
                            "threshold": metric.threshold,
                            "score": metric.score,
                            "eval_status": metric.eval_status.name,
                            "prompt": content_text((expected or actual).user_content),
                            "expected_response": content_text(
                                expected.final_response if expected else None
                            ),
                            "actual_response": content_text(actual.final_response),
                            "expected_tool_calls": tool_calls_text(expected),
                            "actual_tool_calls": tool_calls_text(actual),
                        }
                    )
        rows += [row for metric_rows in per_metric.values() for row in metric_rows]
    return rows


def _write_csv(results: Sequence[EvalSetResult], output_file: str) -> None:
    """Append one row per metric and turn (ADK's columns); the header only to a new file."""
    path = Path(output_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file()
    with path.open("a", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=_CSV_COLUMNS)
        if new:
            writer.writeheader()
        for result in results:
            writer.writerows(_csv_rows(result))
    logger.info("Saved eval results to %s", output_file)


def _save(results: Sequence[EvalSetResult], manager: Any, app_name: str) -> None:
    """Hand each set's case results to an ADK ``EvalSetResultsManager``, as ADK's models."""
    from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult

    for result in results:
        cases = [
            AdkEvalCaseResult.model_validate(case.model_dump(mode="json", exclude_none=True))
            for case in result.eval_case_results
        ]
        manager.save_eval_set_result(app_name, result.eval_set_id, cases)


# --- the drop-in ----------------------------------------------------------------------------


def _check_arguments(
    num_runs: int, artifact_service: Any, app_name: str | None, manager: Any
) -> None:
    if num_runs < 1:
        raise ValueError(f"`num_runs` must be at least 1, got {num_runs}.")
    if manager is not None and not app_name:
        raise ValueError("app_name is required when eval_set_results_manager is provided.")
    if artifact_service is not None:
        raise NotImplementedError(
            "assay's AgentEvaluator does not take an artifact_service yet; use google-adk's "
            "AgentEvaluator for cases that load artifacts"
        )


def _app_of(agent_module: str) -> Any:
    """The ADK ``App`` beside ``root_agent`` (its plugins and settings take part, as in ADK)."""
    from google.adk.apps.app import App

    module = _module_name(agent_module)
    for name in (f"{module}.agent", module):
        app = getattr(sys.modules.get(name), "app", None)
        if isinstance(app, App):
            return app
    return None


async def _agent_factory(agent_module: str, agent_name: str | None) -> tuple[AgentFactory, Any]:
    """The agent ``agent_module`` names, with the cleanup object its ``get_agent_async`` may
    return: ADK's module or folder, or any other spec ``assay eval --agent`` takes; a problem is
    an :class:`AgentLoadError` naming the parameter, not the command line's flag."""
    try:
        return await _any_agent(agent_module.strip(), agent_name)
    except AgentLoadError as exc:
        raise for_argument(exc, "agent_module") from None


async def _any_agent(agent_module: str, agent_name: str | None) -> tuple[AgentFactory, Any]:
    if not agent_module:
        raise AgentLoadError("--agent: the spec is empty")
    kind = spec_kind(agent_module)
    if kind in ("http", "model"):
        if agent_name:
            raise ValueError(
                f"agent_name picks a sub-agent of an ADK agent; {agent_module!r} is not one"
            )
        return resolve_agent(agent_module), None
    if kind == "python":
        root, cleanup = load_python_target(agent_module), None
    else:
        root, cleanup = await _root_agent(agent_module)
    target = _pick(root, agent_name)
    if is_adk_agent(target):
        from assay.agents.adk import adk_agent_factory

        app = _app_of(agent_module) if kind == "package" else None
        return adk_agent_factory(target, source=agent_module, app=app), cleanup
    return factory_for(target, agent_module), cleanup


async def _evaluate_jobs(
    agent_module: str,
    jobs: Sequence[EvalSetJob],
    *,
    num_runs: int,
    agent_name: str | None,
    print_detailed_results: bool,
    output_file: str | None,
    app_name: str | None,
    eval_set_results_manager: Any,
) -> None:
    factory, cleanup = await _agent_factory(agent_module, agent_name)
    try:
        results = await run_jobs(jobs, factory, RunSettings(num_runs=num_runs))
    finally:
        closing = getattr(cleanup, "aclose", None)
        if callable(closing):
            await closing()
    if print_detailed_results:
        _print(results)
    if output_file:
        _write_csv(results, output_file)
    if eval_set_results_manager is not None and app_name:
        _save(results, eval_set_results_manager, app_name)
    message = adk_failure_report(results, agent_module)
    if message is not None:
        raise EvaluationFailed(message, results)


class AgentEvaluator:
    """google-adk 2.13's ``AgentEvaluator``, run by assay (see the module docstring)."""

    @staticmethod
    def find_config_for_test_file(test_file: str) -> EvalConfig:
        """The ``test_config.json`` in the test file's folder, else the default criteria."""
        config, _source = config_for(test_file)
        return config

    @staticmethod
    async def evaluate_eval_set(
        agent_module: str,
        eval_set: Any,
        criteria: dict[str, float] | None = None,
        eval_config: Any = None,
        num_runs: int = NUM_RUNS,
        agent_name: str | None = None,
        print_detailed_results: bool = True,
        artifact_service: Any = None,
        output_file: str | None = None,
        app_name: str | None = None,
        eval_set_results_manager: Any = None,
    ) -> None:
        """Evaluate the agent on an eval set (assay's or ADK's :class:`EvalSet`) with
        ``eval_config`` (assay's, ADK's, or its data) or the deprecated ``criteria``
        (metric name -> threshold); raise ``AssertionError`` when a case fails."""
        _check_arguments(num_runs, artifact_service, app_name, eval_set_results_manager)
        if eval_set is None or not eval_set.eval_cases:
            raise ValueError(
                "No eval cases were evaluated, so there is nothing to report a pass or a failure "
                "for. This happens when `eval_set` has no eval cases."
            )
        if criteria:
            logger.warning("`criteria` is deprecated; pass `eval_config` instead")
            eval_config = parse_config({"criteria": dict(criteria)})
        if eval_config is None:
            raise ValueError("`eval_config` is required.")
        loaded_set = _as_eval_set(eval_set)
        loaded = LoadedEvalSet(loaded_set, Path(f"<{loaded_set.eval_set_id}>"), "evalset")
        await _evaluate_jobs(
            agent_module,
            [EvalSetJob(loaded, _as_config(eval_config), "given")],
            num_runs=num_runs,
            agent_name=agent_name,
            print_detailed_results=print_detailed_results,
            output_file=output_file,
            app_name=app_name,
            eval_set_results_manager=eval_set_results_manager,
        )

    @staticmethod
    async def evaluate(
        agent_module: str,
        eval_dataset_file_path_or_dir: str,
        num_runs: int = NUM_RUNS,
        agent_name: str | None = None,
        initial_session_file: str | None = None,
        print_detailed_results: bool = True,
        artifact_service: Any = None,
        output_file: str | None = None,
        app_name: str | None = None,
        eval_set_results_manager: Any = None,
    ) -> None:
        """Evaluate the agent on an eval file, or on every ``*.test.json`` below a folder, each
        with the ``test_config.json`` beside it; raise ``AssertionError`` when a case fails."""
        _check_arguments(num_runs, artifact_service, app_name, eval_set_results_manager)
        session = _initial_session(initial_session_file)
        jobs = [
            replace(job, loaded=_with_session(job.loaded, session, bool(initial_session_file)))
            for job in jobs_for(_test_files(str(eval_dataset_file_path_or_dir)))
        ]
        for job in jobs:
            _check_set(job)
        await _evaluate_jobs(
            agent_module,
            jobs,
            num_runs=num_runs,
            agent_name=agent_name,
            print_detailed_results=print_detailed_results,
            output_file=output_file,
            app_name=app_name,
            eval_set_results_manager=eval_set_results_manager,
        )

    @staticmethod
    def migrate_eval_data_to_new_schema(
        old_eval_data_file: str,
        new_eval_data_file: str,
        initial_session_file: str | None = None,
    ) -> None:
        """Write a legacy ``.test.json`` file as an eval set (ADK's ``.evalset.json`` shape)."""
        if not old_eval_data_file or not new_eval_data_file:
            raise ValueError("One of old_eval_data_file or new_eval_data_file is empty.")
        from assay.evalset.io import write_eval_set

        session = _initial_session(initial_session_file)
        loaded = _with_session(
            load_eval_set(old_eval_data_file), session, bool(initial_session_file)
        )
        write_eval_set(loaded.eval_set, new_eval_data_file)
