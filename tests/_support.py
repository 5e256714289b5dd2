"""Helpers shared across the test suite: the bundled example's paths, CLI run results, and
loading a benchmark script."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

EXAMPLE_DIR = Path(__file__).resolve().parent.parent / "examples" / "travel"
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
_Result = TypeVar("_Result")


def load_script(name: str, path: Path) -> ModuleType:
    """The script at ``path`` (a benchmark, say) imported as module ``name``, registered in
    ``sys.modules`` (dataclasses look their module up by name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_benchmark(name: str, argv: list[str]) -> int:
    """Run benchmark ``name``'s ``main(argv)`` from ``benchmarks/`` (which it imports its
    siblings from), then forget it and the siblings it loaded."""
    before = set(sys.modules)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        code = load_script(name, BENCHMARKS / f"{name}.py").main(argv)
        assert isinstance(code, int)
        return code
    finally:
        sys.path.remove(str(BENCHMARKS))
        for loaded in set(sys.modules) - before:
            if loaded.startswith("bench_"):
                sys.modules.pop(loaded, None)


@dataclass(frozen=True)
class Example:
    """The files of ``examples/travel``."""

    dir: Path = EXAMPLE_DIR
    evalset: Path = EXAMPLE_DIR / "travel.evalset.json"
    config: Path = EXAMPLE_DIR / "test_config.json"
    traces: Path = EXAMPLE_DIR / "traces.json"
    regressed: Path = EXAMPLE_DIR / "traces_regressed.json"


@dataclass(frozen=True)
class CliRun:
    """What one in-process ``assay`` run did: exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        """stdout and stderr together."""
        return self.out + self.err


RunCli = Callable[..., CliRun]
"""The ``run_cli`` fixture: run ``assay ARGS...`` in this process."""


def run_metric(coro: Coroutine[Any, Any, _Result]) -> _Result:
    """A deterministic metric's ``evaluate`` run to its result without an event loop (such a
    metric never suspends; one that does fails the test)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: _Result = stop.value
        return result
    coro.close()
    raise AssertionError("a deterministic metric awaited something")
