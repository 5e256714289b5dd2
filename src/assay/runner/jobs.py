"""Which eval sets a run evaluates, each with the config that scores it: the one loader behind
``assay eval``, :func:`assay.testing.evaluate_agent` and the ``AgentEvaluator`` drop-in.

An eval set's config is the one given (``assay eval --config``, ``evaluate_agent(config=...)``),
else ADK's ``test_config.json`` in the eval set file's folder (each file its own folder's, as
ADK's ``AgentEvaluator.find_config_for_test_file`` finds it), else ADK's defaults. A given config
that is missing or malformed is an error, never replaced by another (``adk eval`` falls back to
the defaults when its ``--config_file_path`` does not exist). Every problem is reported at once:
the given config's, each eval set's, each ``test_config.json``'s (once, however many eval sets
share it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from assay.config import EvalConfig, default_config, load_config, parse_config
from assay.errors import InputError
from assay.evalset.io import LoadedEvalSet, config_beside, load_eval_set
from assay.runner.sets import EvalSetJob

GivenConfig = EvalConfig | Mapping[str, Any] | str | os.PathLike[str]
"""An :class:`~assay.config.EvalConfig`, its data, or the path of its file (JSON or YAML)."""

EvalSetSource = str | os.PathLike[str] | LoadedEvalSet
"""An eval-set file, or an eval set already loaded."""

ChosenConfig = tuple[EvalConfig, str]
"""A config and where it came from: its file, ``given`` or ``defaults``."""

_A = TypeVar("_A")
_R = TypeVar("_R")


def given_config(config: GivenConfig) -> ChosenConfig:
    """A config the caller gave: an object or its data (``given``), or the file it names;
    raises :class:`~assay.errors.ConfigError`."""
    if isinstance(config, EvalConfig):
        return config, "given"
    if isinstance(config, Mapping):
        return parse_config(dict(config), "<config>"), "given"
    return load_config(Path(config)), os.fspath(config)


def _file_of(eval_set: EvalSetSource) -> Path:
    return eval_set.path if isinstance(eval_set, LoadedEvalSet) else Path(eval_set)


def config_for(eval_set: EvalSetSource, config: GivenConfig | None = None) -> ChosenConfig:
    """The config that scores ``eval_set`` (see the module docstring): ``config`` when given,
    else the ``test_config.json`` beside its file, else ADK's defaults. The eval set itself is
    not read; raises :class:`~assay.errors.ConfigError`."""
    if config is not None:
        return given_config(config)
    file = _file_of(eval_set)
    beside = config_beside(file)
    if beside is None:
        return default_config(), "defaults"
    return load_config(beside), str(beside)


def _attempt(step: Callable[[_A], _R], arg: _A, failed: list[InputError]) -> _R | None:
    try:
        return step(arg)
    except InputError as exc:
        failed.append(exc)
        return None


def jobs_for(
    eval_sets: Iterable[EvalSetSource], config: GivenConfig | None = None
) -> list[EvalSetJob]:
    """Each eval set (read from its file unless loaded already) with :func:`config_for`'s
    config, each config file read once. Every problem found is raised together: as an
    :class:`~assay.errors.EvalSetError` or a :class:`~assay.errors.ConfigError` when all are of
    that kind, else as an :class:`~assay.errors.InputError`."""
    failed: list[InputError] = []
    configs: dict[Path | None, ChosenConfig | None] = {}  # by test_config.json; None: the other
    find = partial(config_for, config=config)
    jobs = []
    for source in eval_sets:
        file = _file_of(source)
        key = None if config is not None else config_beside(file)
        if key not in configs:
            configs[key] = _attempt(find, source, failed)
        if isinstance(source, LoadedEvalSet):
            loaded: LoadedEvalSet | None = source
        else:
            loaded = _attempt(load_eval_set, Path(source), failed)
        chosen = configs[key]
        if loaded is not None and chosen is not None:
            jobs.append(EvalSetJob(loaded, *chosen))
    if failed:
        kinds = {type(exc) for exc in failed}
        kind = kinds.pop() if len(kinds) == 1 else InputError
        raise kind([problem for exc in failed for problem in exc.problems])
    return jobs


SESSIONS_SET_ID = "sessions"
"""The eval set id of the cases made from span files' sessions (``assay eval --traces`` with no
eval set)."""


def session_jobs(
    case_keys: Iterable[str], source: Path, config: GivenConfig | None = None
) -> list[EvalSetJob]:
    """One job scoring each session read from span files as a case of its own (its id the
    session's case key), with no expected invocations: the criteria that need them are not
    applicable (:meth:`~assay.runner.scoring.ConfiguredMetric.not_applicable`). ``source`` is
    the first span file (what the run history and reports name). The config is ``config``,
    else ADK's defaults; a config whose every criterion needs an eval set is refused
    (:class:`~assay.errors.InputError` naming them)."""
    from assay.errors import Problem
    from assay.evalset.case import EvalCase, EvalSet

    chosen = given_config(config) if config is not None else (default_config(), "defaults")
    needing = _needing_expected(chosen[0])
    if needing and len(needing) == len(chosen[0].criteria):
        names = ", ".join(needing)
        raise InputError(
            [
                Problem(
                    "no --config (ADK's default criteria)"
                    if chosen[1] == "defaults"
                    else chosen[1],
                    "criteria",
                    f"every criterion needs an eval set (expected invocations): {names}; "
                    "give EVALSET, or name a reference-free criterion (a rubric, "
                    "hallucinations_v1, safety_v1, the multi-turn metrics, a custom metric)",
                )
            ]
        )
    cases = [
        EvalCase.model_construct(eval_id=key, conversation=None, conversation_scenario=None)
        for key in case_keys
    ]
    eval_set = EvalSet(eval_set_id=SESSIONS_SET_ID, name=source.name, eval_cases=[])
    eval_set.eval_cases = cases  # made, not validated: a case without expected invocations
    return [EvalSetJob(LoadedEvalSet(eval_set, source, "evalset"), *chosen)]


def _needing_expected(config: EvalConfig) -> list[str]:
    """The config's criteria that need an eval set's expected invocations."""
    from assay.metrics.registry import default_registry

    registry = default_registry()
    needing = []
    for name in config.criteria:
        info = registry.info(name) if registry.is_registered(name) else None
        if info is not None and (info.needs_expected or registry.applies_to(name) is not None):
            needing.append(name)
    return needing
