"""Running the async core from synchronous code."""

from __future__ import annotations

from assay._async import run_sync


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
