"""The pytest plugin: eval sets as tests, one test per eval case.

Enabled by naming the agent, on the command line or in the ini file::

    pytest --assay-agent my_app.agent:travel_agent
    # pytest.ini / pyproject [tool.pytest.ini_options]: assay_agent = "my_app.agent:travel_agent"

it collects every ``*.evalset.json`` and ``*.test.json`` that has a ``test_config.json`` in its
folder, one item per eval case (``tests/evals/travel.evalset.json::forecast_paris``), which runs
the agent on that case only, with that folder's criteria, and fails with a readable account of
what did not pass. A file that does not load is one failing item saying why. Options:
``--assay-judge-model`` (ini ``assay_judge_model``), ``--assay-judge-profile``
(``assay_judge_profile``), ``--assay-num-runs`` (``assay_num_runs``,
default 2, as ADK's ``AgentEvaluator``) and ``--assay-mock-tools`` (``assay_mock_tools``).

``--assay-history FILE`` (``assay_history``; ``default`` for the default history) records the
session as one run in the run history, as ``assay eval`` records one invocation
(:mod:`assay.testing.session_run`): each eval case's result as its test finishes, the run
finished at the session's end, or left interrupted when the session stops early.
``--assay-resume RUN`` (``assay_resume``; a run's id or ``latest``) continues that run: the cases
it has are taken as recorded, not run or judged again, and their tests pass or fail as recorded.

A ``conftest.py`` may choose the agent for the eval sets below it (say, one agent per folder)
by implementing the ``pytest_assay_agent(path, config)`` hook, returning an agent spec, an agent
object, or None to leave the choice to the ini file. ``--assay-agent`` on the command line
overrides both.

Without an agent from any of these the plugin collects nothing and changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assay._internal.aio import run_sync
from assay.agents.base import AgentFactory
from assay.agents.spec import agent_factory
from assay.errors import AssayError, InputError, Problem
from assay.evalset.io import config_beside
from assay.history.records import HistoryError
from assay.results.model import EvalSetResult
from assay.runner.evaluate import EvalSetJob
from assay.runner.options import HistoryOption
from assay.testing.evaluate import (
    EVAL_SET_SUFFIXES,
    RunSettings,
    agent_name,
    load_jobs,
    only_cases,
    run_jobs,
)
from assay.testing.failures import EvaluationFailed, assert_passed
from assay.testing.session_run import SessionRun, open_session_run


class AssayHookSpecs:
    """The hook a ``conftest.py`` may implement."""

    @pytest.hookspec(firstresult=True)
    def pytest_assay_agent(self, path: Path, config: pytest.Config) -> Any:
        """The agent for the eval-set file at ``path``: an ``--agent`` spec string, an agent
        object, a Python function agent or an agent factory; None to leave the choice to the
        ``assay_agent`` ini value. ``--assay-agent`` on the command line takes precedence."""


_SETTINGS = pytest.StashKey[RunSettings]()
_AGENTS = pytest.StashKey[dict[object, tuple[object, AgentFactory | AssayError]]]()
_RUN = pytest.StashKey[SessionRun]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare ``pytest_assay_agent``."""
    pluginmanager.add_hookspecs(AssayHookSpecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--assay-*`` options and their ini twins."""
    group = parser.getgroup("assay", "assay: eval sets as tests")
    group.addoption(
        "--assay-agent",
        dest="assay_agent",
        metavar="SPEC",
        help="Collect eval sets beside a test_config.json and run this agent on each case "
        "(module:attr, path/to/file.py:attr, an ADK agent module or folder, http(s)://URL, "
        "openai:MODEL, ollama:MODEL).",
    )
    group.addoption(
        "--assay-judge-model",
        dest="assay_judge_model",
        metavar="MODEL",
        help="LLM judge for every judged metric (as assay eval --judge-model).",
    )
    group.addoption(
        "--assay-judge-profile",
        dest="assay_judge_profile",
        metavar="FILE",
        help="A judge profile from assay judge align, or none (as assay eval --judge-profile).",
    )
    group.addoption(
        "--assay-num-runs",
        dest="assay_num_runs",
        type=int,
        metavar="N",
        help="Runs per eval case, each of which must pass (default 2).",
    )
    group.addoption(
        "--assay-mock-tools",
        dest="assay_mock_tools",
        action="store_true",
        default=None,
        help="Answer the agent's tool calls from the eval case's recorded tool responses.",
    )
    group.addoption(
        "--assay-history",
        dest="assay_history",
        metavar="FILE",
        help="Record the session as one run in this run history (assay runs, assay show); "
        "'default' for the default history (as assay eval's).",
    )
    group.addoption(
        "--assay-resume",
        dest="assay_resume",
        metavar="RUN",
        help="Continue this recorded run (its id, or latest) in the --assay-history: the "
        "cases it has are taken as recorded, not run or judged again (as assay eval --resume).",
    )
    parser.addini("assay_agent", "The agent to evaluate (as --assay-agent).", default="")
    parser.addini("assay_judge_model", "LLM judge (as --assay-judge-model).", default="")
    parser.addini("assay_judge_profile", "Judge profile (as --assay-judge-profile).", default="")
    parser.addini("assay_num_runs", "Runs per eval case (default 2).", default="2")
    parser.addini("assay_mock_tools", "Mock tools (as --assay-mock-tools).", type="bool")
    parser.addini("assay_history", "Run history to record in (as --assay-history).", default="")
    parser.addini("assay_resume", "Recorded run to continue (as --assay-resume).", default="")


def _num_runs(config: pytest.Config) -> int:
    given = config.getoption("assay_num_runs")
    raw = given if given is not None else config.getini("assay_num_runs")
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(f"assay_num_runs: expected a whole number, got {raw!r}") from None


def _history(config: pytest.Config) -> HistoryOption:
    """``--assay-history``: a history file, ``default`` for the default one; else none."""
    given = config.getoption("assay_history") or config.getini("assay_history")
    if not given:
        return False
    return True if given == "default" else str(given)


def _resume(config: pytest.Config, history: HistoryOption) -> str | None:
    """``--assay-resume``: the run to continue, which needs a history; else None."""
    given = config.getoption("assay_resume") or config.getini("assay_resume")
    if not given:
        return None
    if history is False:
        raise pytest.UsageError(
            "assay: --assay-resume needs the run history: give --assay-history FILE (or "
            "'default'), or the assay_history ini value"
        )
    return str(given)


def pytest_configure(config: pytest.Config) -> None:
    """Check the options once, before anything is collected."""
    mock = config.getoption("assay_mock_tools")
    history = _history(config)
    resume = _resume(config, history)
    try:
        config.stash[_SETTINGS] = RunSettings(
            num_runs=_num_runs(config),
            judge_model=config.getoption("assay_judge_model")
            or config.getini("assay_judge_model")
            or None,
            mock_tools=bool(mock if mock is not None else config.getini("assay_mock_tools")),
            judge_profile=config.getoption("assay_judge_profile")
            or config.getini("assay_judge_profile")
            or None,
            history=history,
            resume=resume,
        )
    except ValueError as exc:
        raise pytest.UsageError(f"assay: {exc}") from None
    config.stash[_AGENTS] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    """With a history, open the session's run over the eval-case tests that will run."""
    config = session.config
    settings = config.stash[_SETTINGS]
    tests = [item for item in session.items if isinstance(item, EvalCaseItem)]
    if settings.history is False or not tests:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    try:
        config.stash[_RUN] = open_session_run(
            [(test.job, agent_name(test.agent)) for test in tests],
            settings,
            note=reporter.write_line if reporter is not None else _silent,
        )
    except (InputError, HistoryError) as exc:
        raise pytest.UsageError(f"assay: {exc}") from None


def _silent(_message: str) -> None:
    """Nothing said (no terminal to say it on)."""


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    """Mark the session's run finished, or interrupted when the session stopped early."""
    run = session.config.stash.get(_RUN, None)
    if run is not None:
        del session.config.stash[_RUN]
        run.end(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)


def _agent_for(path: Path, parent: pytest.Collector) -> Any:
    config = parent.config
    given = config.getoption("assay_agent")
    if given:
        return given
    chosen = parent.session.gethookproxy(path).pytest_assay_agent(path=path, config=config)
    if chosen is not None:
        return chosen
    return config.getini("assay_agent") or None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """An eval-set file beside a ``test_config.json``, when an agent is named for it."""
    if not file_path.name.endswith(EVAL_SET_SUFFIXES):
        return None
    if config_beside(file_path) is None:
        return None
    agent = _agent_for(file_path, parent)
    if agent is None:
        return None
    collector: pytest.Collector = EvalSetFile.from_parent(parent, path=file_path, agent=agent)
    return collector


def _factory(config: pytest.Config, agent: Any) -> AgentFactory:
    """The agent's factory, resolved once per session (a failure too, reported by each item)."""
    cache = config.stash[_AGENTS]
    key: object = agent if isinstance(agent, str) else id(agent)
    if key not in cache:
        try:
            made: AgentFactory | AssayError = agent_factory(agent)
        except AssayError as exc:
            made = exc
        cache[key] = (agent, made)
    found = cache[key][1]
    if isinstance(found, AssayError):
        raise found
    return found


class EvalSetFile(pytest.File):
    """An eval-set file: one item per eval case, or one failing item if it does not load."""

    def __init__(self, *, agent: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.agent = agent

    def collect(self) -> Iterator[pytest.Item]:
        """One :class:`EvalCaseItem` per case."""
        try:
            [job] = load_jobs(self.path)
        except InputError as exc:
            yield BrokenEvalSet.from_parent(self, name="load", problems=exc.problems)
            return
        seen: Counter[str] = Counter()
        for index, case in enumerate(job.loaded.eval_set.eval_cases):
            seen[case.eval_id] += 1
            name = (
                case.eval_id if seen[case.eval_id] == 1 else f"{case.eval_id}[{seen[case.eval_id]}]"
            )
            yield EvalCaseItem.from_parent(self, name=name, job=job, index=index, agent=self.agent)


def _failure_text(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    if isinstance(excinfo.value, EvaluationFailed | AssayError):
        return str(excinfo.value)
    return None


class EvalCaseItem(pytest.Item):
    """One eval case: run the agent on it, score it, fail unless every run passed."""

    def __init__(self, *, job: EvalSetJob, index: int, agent: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job = job
        self.index = index
        self.agent = agent

    def runtest(self) -> None:
        """Evaluate this case with its folder's config."""
        if self.job.loaded.warnings:
            warnings = "\n".join(str(w) for w in self.job.loaded.warnings)
            self.add_report_section("call", "assay warnings", warnings)
        run = self.config.stash.get(_RUN, None)
        if run is not None:
            run.ran += 1
        factory = _factory(self.config, self.agent)
        job = only_cases(self.job, lambda i, _case: i == self.index)
        settings = self.config.stash[_SETTINGS]
        if run is None:
            results = run_sync(run_jobs([job], factory, settings, whole_sets=[self.job]))
        else:
            results = run_sync(self._recorded(run, job, factory, settings))
            run.took(self.job, self.index, results)
        assert_passed(results)

    async def _recorded(
        self, run: SessionRun, job: EvalSetJob, factory: AgentFactory, settings: RunSettings
    ) -> list[EvalSetResult]:
        """This case's results in the session's run: kept from the run when it has them,
        else run, scored and handed to the run's recording."""
        [case] = job.loaded.eval_set.eval_cases
        recording = run.recording
        return await run_jobs(
            [job],
            factory,
            replace(settings, history=False, resume=None),  # the session's run records it
            whole_sets=[self.job],
            done=run.done_for(self.job, case.eval_id, settings.num_runs),
            captures=recording.captures,
            on_case=recording.on_case,
        )

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        """The readable account of what did not pass, without a traceback."""
        return _failure_text(excinfo) or super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the case is: its file and eval id."""
        return self.path, None, f"{self.path.name}::{self.name}"


class BrokenEvalSet(pytest.Item):
    """An eval-set file (or its ``test_config.json``) that does not load."""

    def __init__(self, *, problems: Sequence[Problem], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problems = list(problems)

    def runtest(self) -> None:
        """Fail with every problem found."""
        raise InputError(self.problems)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        """``cannot load FILE:`` and one line per problem."""
        lines = [f"cannot load {self.path}:", *(f"  {problem}" for problem in self.problems)]
        return (
            "\n".join(lines)
            if isinstance(excinfo.value, InputError)
            else super().repr_failure(excinfo, style=style)
        )

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """The file."""
        return self.path, None, f"{self.path.name}: cannot load"
