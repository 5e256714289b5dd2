"""A run keeps its finished results frozen out of the garbage collector's way, and leaves a
process that manages its collector itself alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from _support import Example

from assay._internal.collector import collections_paused, results_kept_frozen
from assay.config import load_config
from assay.evalset.io import load_eval_set
from assay.results.model import EvalCaseResult
from assay.results.traces import load_traces
from assay.runner.evaluate import EvalSetJob, evaluate_sync


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    """Each test starts with the collector on and nothing frozen, and leaves it so."""
    was_enabled = gc.isenabled()
    gc.unfreeze()
    gc.enable()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def _frozen_when_each_case_ends(example: Example) -> list[int]:
    """Objects frozen as each case of the example is handed to ``on_case`` (before the case's
    own freeze), and after the run."""
    job = EvalSetJob(load_eval_set(example.evalset), load_config(example.config), "test")
    seen: list[int] = []

    def on_case(_job: EvalSetJob, _result: EvalCaseResult) -> None:
        seen.append(gc.get_freeze_count())

    evaluate_sync([job], load_traces([example.traces]), on_case=on_case, concurrency=1)
    seen.append(gc.get_freeze_count())
    return seen


def test_each_finished_case_freezes_what_is_alive_and_the_run_unfreezes_it_at_its_end(
    example: Example,
) -> None:
    seen = _frozen_when_each_case_ends(example)

    assert seen[0] == 0  # nothing frozen before the first case finished
    assert all(count > 0 for count in seen[1:-1])  # the cases before it are kept frozen
    assert seen[-1] == 0  # and everything is unfrozen when the run ends


def test_a_process_that_froze_objects_itself_is_left_as_it_is(example: Example) -> None:
    gc.freeze()
    frozen = gc.get_freeze_count()

    seen = _frozen_when_each_case_ends(example)

    # never frozen further (what it froze only shrinks as objects are freed), never unfrozen
    assert max(seen) <= frozen and seen[-1] > 0


def test_a_process_with_its_collector_off_is_left_as_it_is(example: Example) -> None:
    gc.disable()

    seen = _frozen_when_each_case_ends(example)

    assert set(seen) == {0} and not gc.isenabled()


def test_overlapping_runs_unfreeze_only_when_the_last_one_ends() -> None:
    with results_kept_frozen() as outer_case_done:
        with results_kept_frozen() as inner_case_done:
            inner_case_done()
        assert gc.get_freeze_count() > 0  # the outer run still goes on
        outer_case_done()
    assert gc.get_freeze_count() == 0


def test_a_run_that_raises_still_unfreezes() -> None:
    with pytest.raises(RuntimeError), results_kept_frozen() as case_done:
        case_done()
        raise RuntimeError("the run broke")
    assert gc.get_freeze_count() == 0


def test_collections_are_paused_inside_the_block_and_the_collector_is_as_it_was_after() -> None:
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled()

    gc.disable()
    with collections_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # it was off: left off


def test_a_load_that_raises_still_gets_its_collector_back() -> None:
    with pytest.raises(ValueError), collections_paused():
        raise ValueError("malformed input")
    assert gc.isenabled()


def test_what_a_paused_load_made_is_frozen_when_a_run_keeps_things_frozen() -> None:
    with collections_paused():
        loaded = [[i] for i in range(1000)]
    assert gc.get_freeze_count() == 0  # no run: nothing frozen

    with results_kept_frozen():
        with collections_paused():
            loaded = [[i] for i in range(1000)]
        assert gc.get_freeze_count() >= 1000
    assert gc.get_freeze_count() == 0 and loaded
