"""Evaluate an agent from a test: run it over eval sets, score it, raise when it does not pass.

::

    from assay.testing import evaluate_agent

    def test_travel_agent() -> None:
        evaluate_agent("my_app.agent:travel_agent", "tests/evals/travel.evalset.json")

``agent`` is an ``--agent`` spec (``module:attr``, ``path/to/file.py:attr``, an ADK agent folder
or module, ``http(s)://...``, ``openai:MODEL``), an agent object, a Python function
``(message, session)``, an ADK agent, or an agent factory (a callable taking one
:class:`~assay.agents.base.CaseContext`). ``eval_set`` is an eval-set file (any format assay
reads), a folder (every ``*.evalset.json`` and ``*.test.json`` below it) or a loaded
:class:`~assay.evalset.case.EvalSet`. The criteria come from ``config``, else from the
``test_config.json`` beside each file, else ADK's defaults.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from assay._internal.aio import sync_of
from assay.agents.base import AgentFactory, CaseContext
from assay.agents.spec import AgentLike, agent_factory
from assay.errors import EvalSetError, Problem
from assay.evalset.case import EvalCase, EvalSet
from assay.evalset.io import LoadedEvalSet
from assay.report.progress import ProgressCallback
from assay.results.captured import Captures
from assay.results.model import EvalSetResult
from assay.runner.evaluate import CaseCallback, DoneCases, EvalSetJob, evaluate
from assay.runner.executors.base import Executor
from assay.runner.jobs import EvalSetSource, GivenConfig, jobs_for
from assay.runner.options import HistoryOption, RunOptions
from assay.testing.failures import assert_passed

EVAL_SET_SUFFIXES = (".evalset.json", ".test.json")
"""The files a folder is searched for."""

EvalSetLike = str | os.PathLike[str] | EvalSet | LoadedEvalSet | EvalSetJob
"""An eval-set file or folder, or an eval set already loaded."""
ConfigLike = GivenConfig | None
"""An :class:`~assay.config.EvalConfig`, its data, or the path of its file."""


RunSettings = RunOptions
"""How the agent is run, judged and recorded: :func:`evaluate_agent`'s keyword arguments (the
runner's :class:`~assay.runner.options.RunOptions`)."""


def agent_name(agent: AgentLike) -> str:
    """What the run history calls ``agent``: its spec, else its qualified name."""
    if isinstance(agent, str):
        return agent
    module = getattr(agent, "__module__", None) or type(agent).__module__
    name = getattr(agent, "__qualname__", None) or type(agent).__qualname__
    return f"{module}:{name}"


def _files_in(folder: Path) -> list[Path]:
    found = sorted(
        path
        for path in folder.rglob("*")
        if path.name.endswith(EVAL_SET_SUFFIXES) and path.is_file()
    )
    if not found:
        message = "no *.evalset.json or *.test.json file in this folder or below it"
        raise EvalSetError([Problem(str(folder), "", message)])
    return found


def _sources(eval_set: str | os.PathLike[str] | EvalSet | LoadedEvalSet) -> Sequence[EvalSetSource]:
    if isinstance(eval_set, LoadedEvalSet):
        return [eval_set]
    if isinstance(eval_set, EvalSet):
        return [LoadedEvalSet(eval_set, Path(f"<{eval_set.eval_set_id}>"), "evalset")]
    path = Path(eval_set)
    return _files_in(path) if path.is_dir() else [path]


def load_jobs(eval_set: EvalSetLike, config: ConfigLike = None) -> list[EvalSetJob]:
    """The eval sets ``eval_set`` names, each with its config: ``config`` when given, else the
    ``test_config.json`` beside its file, else ADK's defaults
    (:func:`~assay.runner.jobs.jobs_for`). Every problem found in every file is raised together
    as an :class:`~assay.errors.InputError`."""
    if isinstance(eval_set, EvalSetJob):
        if config is not None:
            raise ValueError("give config=None with an EvalSetJob: the job has its config")
        return [eval_set]
    return jobs_for(_sources(eval_set), config)


def only_cases(job: EvalSetJob, keep: Callable[[int, EvalCase], bool]) -> EvalSetJob:
    """``job`` with only the cases ``keep(index, case)`` accepts."""
    eval_set = job.loaded.eval_set
    cases = [case for i, case in enumerate(eval_set.eval_cases) if keep(i, case)]
    loaded = replace(job.loaded, eval_set=eval_set.model_copy(update={"eval_cases": cases}))
    return replace(job, loaded=loaded)


def _seeing_whole_sets(factory: AgentFactory, jobs: Sequence[EvalSetJob]) -> AgentFactory:
    """A factory whose :class:`CaseContext` lists every case of the case's eval set, even when
    only some of them run (an agent built from the eval set, such as a model given the recorded
    tool declarations, reads them all)."""
    whole = {
        id(case): job.loaded.eval_set.eval_cases
        for job in jobs
        for case in job.loaded.eval_set.eval_cases
    }

    def make(context: CaseContext) -> Any:
        return factory(replace(context, cases=whole.get(id(context.case), context.cases)))

    return make


def _select(jobs: list[EvalSetJob], eval_ids: Sequence[str]) -> list[EvalSetJob]:
    wanted = set(eval_ids)
    known = [c.eval_id for job in jobs for c in job.loaded.eval_set.eval_cases]
    unknown = sorted(wanted - set(known))
    if unknown:
        listed = ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
        raise ValueError(
            f"no eval case with id {', '.join(map(repr, unknown))}; the cases are: {listed}"
        )
    chosen = [only_cases(job, lambda _i, case: case.eval_id in wanted) for job in jobs]
    return [job for job in chosen if job.loaded.eval_set.eval_cases]


async def run_jobs(
    jobs: Sequence[EvalSetJob],
    factory: AgentFactory,
    settings: RunOptions,
    whole_sets: Sequence[EvalSetJob] = (),
    progress: ProgressCallback | bool | None = None,
    name: str | None = None,
    *,
    done: DoneCases | None = None,
    captures: Captures | None = None,
    on_case: CaseCallback | None = None,
) -> list[EvalSetResult]:
    """Run and score ``jobs`` as ``settings`` say; ``whole_sets`` are the jobs they were cut
    from, if they were; ``progress``, when given, in place of the settings' (as
    :func:`~assay.runner.evaluate.evaluate` takes it); ``name`` is what the run history calls
    the agent. ``done``, ``captures`` and ``on_case`` are
    :func:`~assay.runner.evaluate.evaluate`'s (a run recorded by its caller: the pytest
    plugin's session)."""
    if whole_sets:
        factory = _seeing_whole_sets(factory, whole_sets)
    if progress is not None:
        settings = replace(settings, progress=progress)
    agent = settings.agent(factory, name=name)
    return await evaluate(
        jobs, agent=agent, options=settings, done=done, captures=captures, on_case=on_case
    )


async def aevaluate_agent(
    agent: AgentLike,
    eval_set: EvalSetLike,
    *,
    config: ConfigLike = None,
    eval_ids: Sequence[str] | None = None,
    num_runs: int = 2,
    judge_model: str | None = None,
    mock_tools: bool = False,
    turn_timeout_s: float = 300.0,
    inference_concurrency: int = 4,
    agent_attempts: int = 2,
    concurrency: int = 8,
    cache: bool = True,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    judge_profile: str | None = None,
    progress: ProgressCallback | bool = True,
    history: HistoryOption = False,
    resume: str | None = None,
    executor: Executor | None = None,
) -> list[EvalSetResult]:
    """Run ``agent`` over ``eval_set`` and score it; one result per eval set.

    ``eval_ids`` runs only those cases; ``num_runs`` runs each case that many times (each run
    scored on its own; 2 by default, as ADK's ``AgentEvaluator``); ``judge_model`` overrides
    every criterion's judge; ``judge_profile`` is a judge profile file from ``assay judge align``
    (``"none"`` for none; by default the embedded judge's bundled alignment); ``mock_tools`` answers tool calls from the recorded responses;
    ``turn_timeout_s`` bounds one agent turn; ``agent_attempts`` is how often a conversation the
    agent fails is tried from scratch. With ``check`` (the default) it raises
    :class:`~assay.testing.failures.EvaluationFailed` unless every case run passed with every
    applicable metric evaluated; ``progress`` is called with a
    :class:`~assay.report.progress.RunUpdate` as each case finishes (by default a line per case,
    and a heartbeat while none finishes, goes to stderr; False for neither); bad files raise :class:`~assay.errors.InputError`, a bad agent
    :class:`~assay.agents.python.AgentLoadError`. ``history`` records the run in the run history
    (True: the default one, else its file's path) for ``assay runs`` and ``assay show``;
    ``resume`` continues a recorded run; ``executor`` is where the cases run (see
    :func:`~assay.runner.evaluate.evaluate`).
    """
    settings = RunOptions(
        num_runs=num_runs,
        judge_model=judge_model,
        mock_tools=mock_tools,
        turn_timeout_s=turn_timeout_s,
        inference_concurrency=inference_concurrency,
        agent_attempts=agent_attempts,
        concurrency=concurrency,
        cache=cache,
        env=env,
        judge_profile=judge_profile,
        progress=progress,
        history=history,
        resume=resume,
        executor=executor,
    )
    jobs = load_jobs(eval_set, config)
    factory = agent_factory(agent, env=env)
    chosen = _select(jobs, eval_ids) if eval_ids is not None else jobs
    whole = jobs if eval_ids is not None else ()
    results = await run_jobs(chosen, factory, settings, whole, name=agent_name(agent))
    if check:
        assert_passed(results)
    return results


evaluate_agent = sync_of(
    aevaluate_agent,
    "evaluate_agent",
    ":func:`aevaluate_agent` for code that is not async (a plain pytest test).",
)
