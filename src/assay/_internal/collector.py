"""Keeping a run's finished case results out of the garbage collector's way.

A run keeps every case result until it ends: about 150 container objects a case, which
CPython's cyclic garbage collector walks again in each full collection, and a growing heap
triggers one every time it grows by a quarter. With the loaded inputs that is millions of
objects: on a 10,000-case deterministic run the collector took about half the scoring time
(``benchmarks/bench_collector.py``).

So while a run goes, each finished case freezes what is alive (:func:`gc.freeze`, which moves
every tracked object to the permanent generation in constant time): later collections look
only at what was made since, the cases being scored. When the run ends everything is
unfrozen, as before. Reference counting frees objects as usual, frozen or not; only cyclic
garbage made before a freeze waits for the end of the run to be collected.

The collector is the process's: a process that froze objects itself, or turned the collector
off, is left as it is. Runs may nest or overlap (an ``evaluate`` inside another's event loop);
the last one to end unfreezes.

Loading a run's inputs is the same story in a shorter time: validating 10,000 cases' traces makes
millions of objects, none of them garbage, and the collector walked the growing heap again and
again (16-19 s to load them, 5.5-6 s with collections paused). :func:`collections_paused`
pauses it for such a load; inside a run that keeps things frozen (the ``assay`` command is one,
from start to end), what was loaded is frozen when the load ends, or the first collections after
it would walk all of it, still in the youngest generation, two or three times.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _Runs:
    """How many runs are keeping results frozen in this process."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()


_RUNS = _Runs()


@contextmanager
def collections_paused() -> Iterator[None]:
    """No cyclic garbage collection for the length of the block (an allocation-heavy load that
    makes no garbage cycles), then the collector as it was; inside a run that keeps things
    frozen (:func:`results_kept_frozen`), what is alive is frozen first."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        with _RUNS.lock:
            if _RUNS.count:
                gc.freeze()
        if was_enabled:
            gc.enable()


def _nothing() -> None:
    """What finishing a case does when the run leaves the collector alone."""


@contextmanager
def results_kept_frozen() -> Iterator[Callable[[], None]]:
    """For the length of a run: the function to call when a case has finished (it freezes
    what is alive, or does nothing when the process manages its collector itself)."""
    with _RUNS.lock:
        if _RUNS.count == 0 and (not gc.isenabled() or gc.get_freeze_count()):
            managed = False
        else:
            managed = True
            _RUNS.count += 1
    if not managed:
        yield _nothing
        return
    try:
        yield gc.freeze
    finally:
        with _RUNS.lock:
            _RUNS.count -= 1
            if _RUNS.count == 0:
                gc.unfreeze()
