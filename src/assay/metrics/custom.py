"""Custom metrics: a Python function named in the config's ``custom_metrics``, run as ADK runs it.

The config names the function (``custom_metrics.NAME.code_config.name``, ``package.module.function``)
and lists ``NAME`` in ``criteria`` with its threshold. As google-adk 2.13's ``adk eval``:

* the function is called once per case with ``(eval_metric, actual_invocations,
  expected_invocations, conversation_scenario)`` and may be sync or async; ``eval_metric`` is a
  fresh ``EvalMetric`` with the metric's name, its criterion (``criterion.threshold`` is the
  configured threshold), ``custom_function_path`` and ``threshold`` None; the actual invocations
  carry the case's rubrics and their expected invocation's (a rubric id given twice is an error);
* the arguments are google-adk's own types when google-adk is installed (a function written for
  ``adk eval`` runs unchanged), else :mod:`assay.custom`'s, which have the same names and fields;
  the result may be either package's ``EvaluationResult`` (read by its field names);
* the returned ``overall_eval_status`` and each ``eval_status`` are taken as they are: the
  threshold is not applied again, and a NOT_EVALUATED (or INFORMATIONAL) result stays one.

Where assay differs, for the run's sake: the module is imported once, when the metric is built,
with the eval set's folder and the working directory put in front of ``sys.path`` for the import
only (then taken out again); a function that cannot be imported, raises, runs past the timeout
(:data:`DEFAULT_TIMEOUT_S`, or ``ASSAY_CUSTOM_METRIC_TIMEOUT`` seconds), returns something that is
not an ``EvaluationResult``, or returns a verdict without one result per invocation leaves the
metric NOT_EVALUATED with a reason naming the function, and the run goes on (ADK logs the first
three and aborts the run on the last two). A sync function runs in a thread of its own (ADK calls
it on its event loop), so several cases may call it at once.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import math
import numbers
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, cast

from pydantic import ValidationError

from assay.config import BaseCriterion, CustomMetricConfig
from assay.evalset.case import EvalCase
from assay.evalset.invocation import Invocation
from assay.evalset.rubric import Rubric, RubricScore
from assay.metrics.base import (
    EvalStatus,
    Metric,
    MetricInfo,
    MetricResult,
    PerInvocationResult,
    not_evaluated,
    paired_expected,
)
from assay.metrics.custom_types import EvalMetric, as_data, as_details, as_status
from assay.metrics.registry import UnavailableMetric

DEFAULT_TIMEOUT_S = 300.0
"""How long one call of a custom metric's function may take, unless ``ASSAY_CUSTOM_METRIC_TIMEOUT``
says otherwise."""
TIMEOUT_ENV = "ASSAY_CUSTOM_METRIC_TIMEOUT"
"""The environment variable giving the timeout of one call, in seconds."""

MetricFunction = Callable[..., Any]


class _Problem(Exception):
    """Why one call of the function gave no verdict (the reason, without the function's name)."""


@dataclass(frozen=True)
class AdkTypes:
    """google-adk's classes that a custom metric's arguments are made of."""

    invocation: Any
    eval_metric: Any
    criterion: Any
    scenario: Any


@cache
def adk_types() -> AdkTypes | None:
    """google-adk's types, or None when google-adk cannot be imported."""
    try:
        eval_case = importlib.import_module("google.adk.evaluation.eval_case")
        eval_metrics = importlib.import_module("google.adk.evaluation.eval_metrics")
        scenarios = importlib.import_module("google.adk.evaluation.conversation_scenarios")
        return AdkTypes(
            invocation=eval_case.Invocation,
            eval_metric=eval_metrics.EvalMetric,
            criterion=eval_metrics.BaseCriterion,
            scenario=scenarios.ConversationScenario,
        )
    except Exception:  # not installed, or an install that does not import: assay's types
        return None


# --------------------------------------------------------------------------- building


def timeout_from(env: Mapping[str, str]) -> float | str:
    """The timeout of one call: ``ASSAY_CUSTOM_METRIC_TIMEOUT`` seconds, else
    :data:`DEFAULT_TIMEOUT_S`; or why the variable's value is not one."""
    raw = env.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        return f"{TIMEOUT_ENV}={raw!r} is not a positive number of seconds"
    return seconds


_PATH_LOCK = threading.Lock()


@contextmanager
def _on_sys_path(folders: Sequence[Path]) -> Iterator[None]:
    """``folders`` in front of ``sys.path`` (those not on it already), taken out afterwards."""
    with _PATH_LOCK:
        added = [
            entry
            for entry in dict.fromkeys(str(folder.resolve()) for folder in folders)
            if entry not in sys.path
        ]
        sys.path[:0] = added
        try:
            yield
        finally:
            for entry in added:
                with suppress(ValueError):
                    sys.path.remove(entry)


def import_function(path: str, folders: Sequence[Path] = ()) -> MetricFunction | str:
    """The function at ``path`` (``package.module.function``), imported with ``folders`` in front
    of ``sys.path``; or why it cannot be had."""
    module_name, _, attribute = path.strip().rpartition(".")
    if not module_name or not attribute:
        return "code_config.name must be 'module.function'"
    try:
        with _on_sys_path(folders):
            importlib.invalidate_caches()
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        where = ", ".join(str(folder) for folder in folders)
        looked = f" (looked in {where} and on sys.path)" if where else ""
        return f"cannot import module '{module_name}': {exc}{looked}"
    except (Exception, SystemExit) as exc:
        return f"cannot import module '{module_name}': {type(exc).__name__}: {exc}"
    try:
        function = getattr(module, attribute)
    except AttributeError:
        return f"module '{module_name}' has no attribute '{attribute}'"
    if not callable(function):
        return f"'{path}' is a {type(function).__name__}, not a function"
    return cast(MetricFunction, function)


def custom_metric(
    name: str,
    criterion: BaseCriterion | None,
    config: CustomMetricConfig,
    *,
    eval_set_folder: Path | None = None,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    use_adk_types: bool | None = None,
) -> Metric:
    """The custom metric ``name`` declared by ``config``: its function imported now (with
    ``eval_set_folder`` and the working directory in front of ``sys.path`` for the import), or,
    when it cannot be, a metric that scores every case NOT_EVALUATED with the reason.

    ``timeout_s`` bounds one call (default: ``ASSAY_CUSTOM_METRIC_TIMEOUT`` in ``env``, else
    :data:`DEFAULT_TIMEOUT_S`); ``use_adk_types`` passes google-adk's types (True), assay's
    (False), or google-adk's when it is installed (None).
    """
    path = config.code_config.name

    def unavailable(problem: str) -> Metric:
        return UnavailableMetric(name, criterion, f"custom metric {path}: {problem}")

    timeout = (
        timeout_s if timeout_s is not None else timeout_from(os.environ if env is None else env)
    )
    if isinstance(timeout, str):
        return unavailable(timeout)
    folders = [folder for folder in (eval_set_folder, Path.cwd()) if folder is not None]
    function = import_function(path, folders)
    if isinstance(function, str):
        return unavailable(function)
    types: AdkTypes | None = None
    if use_adk_types is not False:
        types = adk_types()
        if types is None and use_adk_types:
            return unavailable("google-adk's types were asked for, but google-adk is not installed")
    return CustomMetric(name, criterion, path, function, timeout_s=timeout, adk=types)


# --------------------------------------------------------------------------- running


class CustomMetric:
    """A custom metric whose function has been imported; see the module's documentation."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="custom",
        description="A Python function named in the config's custom_metrics.",
    )

    def __init__(
        self,
        name: str,
        criterion: BaseCriterion | None,
        function_path: str,
        function: MetricFunction,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        adk: AdkTypes | None = None,
    ) -> None:
        if not math.isfinite(timeout_s) or timeout_s <= 0:
            raise ValueError(f"timeout_s must be a positive number of seconds; got {timeout_s}")
        self.name = name
        self.criterion = criterion
        self.function_path = function_path
        self.function = function
        self.timeout_s = timeout_s
        self.adk = adk

    async def evaluate(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> MetricResult:
        """Call the function on the case and read its verdict."""
        try:
            arguments = self._arguments(actual, expected, case)
            value = await self._call(arguments)
            return _read_result(self, value, actual, expected)
        except _Problem as problem:
            reason = f"custom metric {self.function_path}: {problem}"
            return not_evaluated(self.name, self.criterion, actual, reason, expected)

    def _arguments(
        self,
        actual: Sequence[Invocation],
        expected: Sequence[Invocation] | None,
        case: EvalCase,
    ) -> tuple[Any, Any, Any, Any]:
        with_rubrics = actual_with_rubrics(actual, expected, case)
        scenario = case.conversation_scenario
        if self.adk is None:
            eval_metric = EvalMetric(
                metric_name=self.name,
                threshold=None,
                criterion=self.criterion.model_copy(deep=True) if self.criterion else None,
                custom_function_path=self.function_path,
            )
            return (
                eval_metric,
                with_rubrics,
                [inv.model_copy(deep=True) for inv in expected] if expected is not None else None,
                scenario.model_copy(deep=True) if scenario is not None else None,
            )
        adk = self.adk
        try:
            return (
                adk.eval_metric(
                    metric_name=self.name,
                    threshold=None,
                    criterion=(
                        adk.criterion.model_validate(self.criterion.model_dump(mode="json"))
                        if self.criterion is not None
                        else None
                    ),
                    custom_function_path=self.function_path,
                ),
                [
                    adk.invocation.model_validate(inv.model_dump(mode="json"))
                    for inv in with_rubrics
                ],
                (
                    [adk.invocation.model_validate(inv.model_dump(mode="json")) for inv in expected]
                    if expected is not None
                    else None
                ),
                (
                    adk.scenario.model_validate(scenario.model_dump(mode="json"))
                    if scenario is not None
                    else None
                ),
            )
        except Exception as exc:
            raise _Problem(
                f"could not make google-adk's types of the case: {type(exc).__name__}: {exc}"
            ) from exc

    async def _call(self, arguments: tuple[Any, ...]) -> Any:
        """The function's result on ``arguments``, within the timeout."""
        task = asyncio.ensure_future(self._run(arguments))
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()  # an async function stops at its next await; a thread is left behind
            task.add_done_callback(_forget)
            raise _Problem(
                f"did not return within {self.timeout_s:g} s (the timeout of one call; "
                f"{TIMEOUT_ENV} sets it)"
            )
        if task.cancelled():
            raise _Problem("was cancelled")
        error = task.exception()
        if error is not None:
            raise _Problem(f"raised {type(error).__name__}: {error}")
        return task.result()

    async def _run(self, arguments: tuple[Any, ...]) -> Any:
        function = self.function
        if _is_async(function):
            value = function(*arguments)
        else:
            value = await in_thread(function, arguments, f"assay custom metric {self.name}")
        if inspect.isawaitable(value):
            value = await value
        return value


def _is_async(function: MetricFunction) -> bool:
    """Whether calling ``function`` gives a coroutine (an ``async def``, or an object whose
    ``__call__`` is one). A sync function that returns an awaitable is awaited after its thread."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__
    )


def _forget(task: asyncio.Future[Any]) -> None:
    """Take an abandoned call's outcome, so that asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


async def in_thread(function: MetricFunction, arguments: tuple[Any, ...], name: str) -> Any:
    """``function(*arguments)`` in a daemon thread of its own, awaited here.

    Not :func:`asyncio.to_thread`: a call that never returns would hold a worker of the loop's
    executor, which ``asyncio.run`` waits for at its end; a daemon thread is left behind instead.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        try:
            value = context.run(function, *arguments)
        except BaseException as exc:  # reported to the caller, whatever it is
            outcome: tuple[Any, BaseException | None] = (None, _as_exception(exc))
        else:
            outcome = (value, None)
        with suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


def _as_exception(error: BaseException) -> BaseException:
    """``error``, or, for one asyncio would not pass through a future (SystemExit,
    KeyboardInterrupt), an exception saying which it was."""
    if isinstance(error, Exception):
        return error
    return RuntimeError(f"{type(error).__name__}: {error}")


# --------------------------------------------------------------------------- arguments


def actual_with_rubrics(
    actual: Sequence[Invocation], expected: Sequence[Invocation] | None, case: EvalCase
) -> list[Invocation]:
    """Copies of the actual invocations, each with the case's rubrics and then its expected
    invocation's added to its own, as ADK adds them before scoring."""
    out = []
    for index, invocation in enumerate(actual):
        added = list(case.rubrics or [])
        if expected and index < len(expected):
            added += expected[index].rubrics or []
        copy = invocation.model_copy(deep=True)
        if added:
            copy.rubrics = _merged(list(copy.rubrics or []), added)
        out.append(copy)
    return out


def _merged(own: list[Rubric], added: list[Rubric]) -> list[Rubric]:
    seen = {rubric.rubric_id for rubric in own}
    for rubric in added:
        if rubric.rubric_id in seen:
            raise _Problem(f"rubric id '{rubric.rubric_id}' is given twice for one invocation")
        seen.add(rubric.rubric_id)
        own.append(rubric.model_copy(deep=True))
    return own


# --------------------------------------------------------------------------- the verdict

_RESULT_FIELDS = ("overall_score", "overall_eval_status", "per_invocation_results")


def _read_result(
    metric: CustomMetric,
    value: Any,
    actual: Sequence[Invocation],
    expected: Sequence[Invocation] | None,
) -> MetricResult:
    """The :class:`MetricResult` of the function's ``value`` (ADK's ``EvaluationResult``, or
    :mod:`assay.custom`'s, read by field names); raises :class:`_Problem` when it is not one."""
    if isinstance(value, Mapping) or not all(hasattr(value, f) for f in _RESULT_FIELDS):
        raise _Problem(
            f"returned {_kind(value)}, not an EvaluationResult (an object with "
            "overall_score, overall_eval_status and per_invocation_results)"
        )
    overall = _score(value.overall_score, "overall_score")
    status = _status(value.overall_eval_status, "overall_eval_status")
    entries = _entries(value.per_invocation_results)
    paired = paired_expected(actual, expected)
    per_invocation = [
        PerInvocationResult(actual=inv, expected=paired[i] if paired else None)
        for i, inv in enumerate(actual)
    ]
    if len(entries) == len(actual):
        for index, entry in enumerate(entries):
            _read_entry(entry, f"per_invocation_results[{index}]", per_invocation[index])
    elif status not in (EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL):
        raise _Problem(
            f"returned {len(entries)} per-invocation results for {len(actual)} invocations "
            f"with overall_eval_status {status.name} (it needs one per invocation)"
        )
    details = _details(value, "overall_token_usage_details", "overall_duration_details")
    not_scored = f"custom metric {metric.function_path}: returned NOT_EVALUATED"
    return MetricResult(
        metric_name=metric.name,
        criterion=metric.criterion,
        score=overall,
        status=status,
        per_invocation=per_invocation,
        reason=not_scored if status is EvalStatus.NOT_EVALUATED else None,
        rubric_scores=_rubric_scores(
            getattr(value, "overall_rubric_scores", None), "overall_rubric_scores"
        ),
        details=details,
    )


def _read_entry(entry: Any, where: str, into: PerInvocationResult) -> None:
    if isinstance(entry, Mapping) or not all(hasattr(entry, f) for f in ("score", "eval_status")):
        raise _Problem(f"{where} is {_kind(entry)}, not a PerInvocationResult")
    into.score = _score(entry.score, f"{where}.score")
    into.status = _status(entry.eval_status, f"{where}.eval_status")
    into.rubric_scores = _rubric_scores(
        getattr(entry, "rubric_scores", None), f"{where}.rubric_scores"
    )
    into.details = _details(entry, "token_usage_details", "duration_details")


def _entries(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise _Problem(f"per_invocation_results is {_kind(value)}, not a list")
    return list(value)


def _status(value: Any, where: str) -> EvalStatus:
    status = as_status(value)
    if isinstance(status, EvalStatus):
        return status
    if isinstance(status, int) and not isinstance(status, bool) and 1 <= status <= 4:
        return EvalStatus(status)
    raise _Problem(f"{where} is {value!r}, not an EvalStatus")


def _score(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _Problem(f"{where} is {_kind(value)}, not a number")
    score = float(value)
    if not math.isfinite(score):
        raise _Problem(f"{where} is {score}, not a finite number")
    return score


def _rubric_scores(value: Any, where: str) -> list[RubricScore] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise _Problem(f"{where} is {_kind(value)}, not a list of RubricScore")
    try:
        return [RubricScore.model_validate(as_data(item)) for item in value]
    except ValidationError as exc:
        raise _Problem(f"{where} are not RubricScores: {exc.errors()[0]['msg']}") from None


def _details(value: Any, *fields: str) -> dict[str, Any] | None:
    """The token usage and duration details the function gave, under the names assay's result
    rows use (``token_usage_details``, ``duration_details``)."""
    found: dict[str, Any] = {}
    for field in fields:
        data = as_details(getattr(value, field, None))
        if data is None:
            continue
        if not isinstance(data, Mapping):
            raise _Problem(f"{field} is {_kind(data)}, not an object")
        found[field.removeprefix("overall_")] = dict(data)
    return found or None


def _kind(value: Any) -> str:
    """``value``'s type in words: "None", "a dict", "an int", "a my_pkg.Result"."""
    if value is None:
        return "None"
    kind = type(value)
    named = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return f"{'an' if named[0].lower() in 'aeiou' else 'a'} {named}"
