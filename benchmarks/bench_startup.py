"""Benchmark: how long the ``assay`` command takes to print its help, per command.

    .venv/bin/python benchmarks/bench_startup.py [--runs 10] [--bin DIR]

Runs each of ``assay --help``, ``assay eval --help``, ``assay validate --help`` and ``assay
report --help`` ``--runs`` times as a fresh process (the console script beside this Python, or
in ``--bin``), after one untimed run each (so bytecode is written, $PYTHONDONTWRITEBYTECODE
being dropped for them, and the files are in the page cache), and prints the median wall and
CPU (user + system) time of each: on a shared machine the CPU time is the steadier figure. When
google-adk's ``adk`` script is there too, ``adk eval --help`` is timed the same way and each
median wall time is given as a share of its.

A command's help imports that command's module only (:mod:`assay.cli.lazy`), and the module
imports what its run needs only when it runs, so every help should cost about what ``assay
--help`` does: the interpreter, click and the command's own declaration.
tests/cli/test_startup.py pins that without timing (which modules a help imports).

Measured (2 shared cores, Python 3.11): see the figures this script prints; the last run's are
in docs/design.md, "Fast and bounded end to end (issue 33)".
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

COMMANDS: list[list[str]] = [
    ["--help"],
    ["eval", "--help"],
    ["validate", "--help"],
    ["report", "--help"],
]


def timed(argv: Sequence[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU (user + system) seconds of ``runs`` runs of ``argv`` (each must exit 0),
    after one untimed run."""
    env = {**os.environ, "COLUMNS": "100"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    walls: list[float] = []
    cpus: list[float] = []
    for i in range(runs + 1):
        started = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise SystemExit(f"error: {' '.join(argv)} exited {child.returncode}")
        if i:  # the first run writes bytecode and warms the page cache
            walls.append(time.perf_counter() - started)
            cpus.append(usage.ru_utime + usage.ru_stime)
    return walls, cpus


def _load() -> str:
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command")
    parser.add_argument(
        "--bin",
        type=Path,
        default=Path(sys.executable).parent,
        help="the folder holding the assay (and adk) scripts [default: this Python's]",
    )
    args = parser.parse_args(argv)
    assay = args.bin / "assay"
    if not assay.is_file():
        print(f"error: no assay script in {args.bin}", file=sys.stderr)
        return 2
    rows: list[tuple[str, float, float]] = []
    for command in COMMANDS:
        walls, cpus = timed([str(assay), *command], args.runs)
        rows.append(
            (" ".join(["assay", *command]), statistics.median(walls), statistics.median(cpus))
        )
    adk = args.bin / "adk"
    adk_median = None
    if adk.is_file():
        walls, cpus = timed([str(adk), "eval", "--help"], args.runs)
        adk_median = statistics.median(walls)
        rows.append(("adk eval --help", adk_median, statistics.median(cpus)))
    print(f"{args.runs} runs each, median wall and CPU (user + system) seconds; {_load()}")
    for name, wall, cpu in rows:
        share = f"  {wall / adk_median:5.2f}x adk eval --help" if adk_median else ""
        print(f"  {name:<22} {wall:6.3f} s wall  {cpu:6.3f} s CPU{share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
