"""Running the async core from synchronous code."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from assay._internal.aio import run_sync, sync_of


class _Counted:
    reprs = 0

    def __repr__(self) -> str:
        _Counted.reprs += 1
        return "counted"


def test_run_sync_returns_the_result_without_formatting_it() -> None:
    # asyncio.run on Python 3.11 formats the main task's result when it ends: for the results
    # of a large run that cost seconds.
    async def produce() -> list[_Counted]:
        return [_Counted()]

    found = run_sync(produce())

    assert isinstance(found[0], _Counted) and _Counted.reprs == 0


def test_run_sync_raises_what_the_coroutine_raises() -> None:
    async def fail() -> None:
        raise KeyError("no")

    try:
        run_sync(fail())
    except KeyError as exc:
        assert exc.args == ("no",)
    else:
        raise AssertionError("no error")


async def _scaled(value: int, *, factor: int = 2, note: str | None = None) -> list[int]:
    """Multiply, asynchronously."""
    return [value * factor]


_scaled_sync = sync_of(_scaled, "_scaled_sync", "``_scaled``, synchronously.")


def test_sync_of_runs_the_coroutine_function_with_the_arguments_given() -> None:
    assert _scaled_sync(3, factor=5) == [15]
    assert _scaled_sync(3) == [6]


def test_sync_of_shows_the_async_functions_parameters_under_its_own_name() -> None:
    assert inspect.signature(_scaled_sync) == inspect.signature(_scaled)
    assert (_scaled_sync.__name__, _scaled_sync.__qualname__) == ("_scaled_sync", "_scaled_sync")
    assert _scaled_sync.__doc__ == "``_scaled``, synchronously."
    assert _scaled_sync.__module__ == _scaled.__module__
    assert inspect.isfunction(_scaled_sync) and not inspect.iscoroutinefunction(_scaled_sync)


def test_sync_of_inside_a_running_loop_says_to_await_the_async_function() -> None:
    async def inside() -> None:
        with pytest.raises(RuntimeError) as failed:
            _scaled_sync(1)
        assert str(failed.value) == (
            "_scaled_sync() cannot run inside a running event loop; use `await _scaled(...)` there"
        )

    asyncio.run(inside())


def test_what_sync_of_raises_opens_with_its_own_cause_not_a_chained_no_running_loop() -> None:
    # the check for a running loop once left its RuntimeError as the context of every error,
    # so a failing evaluate_agent opened with "RuntimeError: no running event loop"
    async def fail() -> None:
        raise KeyError("the cause")

    failing = sync_of(fail, "failing", "fails")
    with pytest.raises(KeyError) as failed:
        failing()
    assert failed.value.__context__ is None and failed.value.__cause__ is None
