"""Benchmark: resuming a recorded run that already has every case, against the fresh run.

    .venv/bin/python benchmarks/bench_resume.py [--n 5000 [50000 ...]] [--seed 0] [--repeat 1]
        [--json FILE] [--timeout 900] [--no-output] [--profile] [--keep DIR]

For each ``--n`` it writes ``bench_scale``'s inputs (an eval set of static conversations, a
traces file of the actual invocations, a config scoring ``tool_trajectory_avg_score`` and
``response_match_score``), then runs, each as its own process:

``fresh``
    ``assay eval bench.evalset.json --traces ... --config ... --output fresh.results.json
    --history-file history.sqlite --no-progress``: the run recorded in a new history file;
``resumed``
    the same command with ``--resume RUN`` (the run the fresh one recorded, which has every
    case) and ``--output resumed.results.json``: nothing is scored, every case is kept.

Wall seconds, CPU seconds (user + sys) and max RSS come from the operating system's accounting
of each finished child (``os.wait4``, as ``bench_scale`` takes them); the figure the issue asks
for is resumed / fresh wall time (goal: under 0.1 at 50,000 cases). Both results files must
hold every case with the same statuses; the script exits 1 otherwise. ``--no-output`` leaves
``--output`` out of both commands (the results file of 50,000 cases is 1.4 GB of indented JSON).
``--profile`` also runs the resumed command once more in this interpreter under cProfile and
prints the top 25 functions by cumulative time.

Measured (2 shared cores, load 1-6; Python 3.11; seed 0; one pair each; with ``--output``):

    N        fresh wall s / MB   resumed wall s / MB   resumed / fresh
    before: each kept case a query, decoded twice (the second time for --save-traces, held in
    a list), its traces parsed again each time
    5,000       11.2 / 407          22.8 / 769              2.03
    after: keys indexed once, texts read a batch ahead, each case decoded once with the
    invocations and conversation the runner already read
    5,000       17.8 / 404          11.5 / 384              0.64 (CPU 13.9 / 11.4 s: 0.82)
    50,000     111.4 / 420          87.9 / 168              0.79 (CPU 0.76)
    (an earlier pair, before collected.py kept indented texts: 0.90 and 1.01)

    after issue 33's second pass (both runs faster; idle machine)
    5,000        7.46 / 166           6.15 / 155              0.82
    50,000      78.0 / 243           62.6 / 160              0.80

    after issue 33's third pass: both runs with the CLI's default workers (2 here), the kept
    results decoded by the workers (median pair of 3)
    5,000        4.76 / 69            4.01 / 66               0.84 (0.78-0.95)

    after the fourth pass: the history keeps what the workers made of each case, and a kept
    case is added back as it is, not decoded; results files written from a thread (median
    pair of 3)
    5,000        4.51 / 72            2.26 / 67               0.50 (0.50-0.56)
    50,000      38.85 / 141          13.53 / 70               0.35 (0.33-0.37)
    then the history's input parts at 4 MB (one pair each)
    50,000      37.08 / 84           13.03 / 71               0.35
    50,000      33.58 / 83            9.27 / 68               0.28 (--no-output)

The goal (under 0.1) is not reached: what both runs do outside scoring, reading and checking
the inputs (the kept cases are found by the ids read there) and writing the 1.4 GB results
file, is about 30% of the fresh run here; a kept case itself now costs ~45 us (see
docs/design.md).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale
from bench_scale import Measure

TOP = 25


@dataclass
class Pair:
    """One ``--n``: the fresh run and its resume."""

    cases: int
    fresh: Measure
    resumed: Measure

    @property
    def ratio(self) -> float:
        return self.resumed.wall_s / self.fresh.wall_s if self.fresh.wall_s else float("inf")

    @property
    def agree(self) -> bool:
        fresh = (self.fresh.cases, self.fresh.passed, self.fresh.failed)
        resumed = (self.resumed.cases, self.resumed.passed, self.resumed.failed)
        return fresh == resumed and fresh[0] == self.cases


def _command(inputs: bench_scale.Inputs, output: str | None, *extra: str) -> list[str]:
    command = [*bench_scale._assay_command(), "eval", str(inputs.evalset)]
    command += ["--traces", str(inputs.traces), "--config", str(inputs.config), "--no-progress"]
    command += ["--history-file", str(inputs.folder / "history.sqlite")]
    if output is not None:
        command += ["--output", str(inputs.folder / output)]
    return [*command, *extra]


def _run_id(history: Path) -> str:
    db = sqlite3.connect(history)
    try:
        [(run,)] = db.execute("SELECT id FROM runs").fetchall()
    finally:
        db.close()
    return str(run)


def _counted(measure: Measure, results: Path | None, log: Path) -> Measure:
    if results is not None:
        measure.cases, measure.passed, measure.failed = bench_scale.count_statuses(results)
        return measure
    text = log.read_text(encoding="utf-8", errors="replace")  # the console's last summary line
    for line in reversed(text.splitlines()):
        words = line.replace(",", "").split()
        if len(words) > 4 and words[1] == "passed" and words[3] == "failed":
            measure.passed, measure.failed = int(words[0]), int(words[2].rstrip(";"))
            measure.cases = measure.passed + measure.failed + int(words[4])
            break
    return measure


def measure_pair(n: int, seed: int, folder: Path, timeout: float, output: bool) -> Pair:
    """Write the inputs, run fresh, then resume the run it recorded."""
    inputs = bench_scale.write_inputs(n, seed, folder)
    bench_scale._fresh(folder / "history.sqlite")
    fresh_out = "fresh.results.json" if output else None
    log = folder / "fresh.log"
    fresh = bench_scale.measure(_command(inputs, fresh_out), folder, log, timeout)
    fresh = _counted(fresh, folder / fresh_out if fresh_out else None, log)
    run = _run_id(folder / "history.sqlite")
    resumed_out = "resumed.results.json" if output else None
    log = folder / "resumed.log"
    resumed = bench_scale.measure(
        _command(inputs, resumed_out, "--resume", run), folder, log, timeout
    )
    resumed = _counted(resumed, folder / resumed_out if resumed_out else None, log)
    return Pair(n, fresh, resumed)


def profile_resume(folder: Path, output: bool) -> str:
    """The resumed command run again in this process under cProfile: the top functions."""
    from assay.cli.main import main as assay_main

    inputs = bench_scale.Inputs(
        folder,
        folder / "bench.evalset.json",
        folder / "bench.evalset.jsonl",
        folder / "bench.traces.json",
        folder / "test_config.json",
        0,
        0,
    )
    run = _run_id(folder / "history.sqlite")
    argv = _command(inputs, "profile.results.json" if output else None, "--resume", run)[1:]
    if argv[0] != "eval":  # run as `python -m assay.cli.main`
        argv = argv[argv.index("eval") :]
    profiler = cProfile.Profile()
    quiet = io.StringIO()
    saved = sys.stdout
    sys.stdout = quiet
    profiler.enable()
    try:
        assay_main(argv)
    except SystemExit:
        pass
    finally:
        profiler.disable()
        sys.stdout = saved
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(TOP)
    return text.getvalue()


def _line(name: str, m: Measure) -> str:
    return (
        f"  {name:<8}{m.wall_s:9.2f}{m.cpu_s:9.2f}{m.max_rss_mb:12.1f}{m.code:6}"
        f"{m.cases:9}{m.passed:8}{m.failed:8}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000], help="cases (several: each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1, help="fresh + resumed pairs; each kept")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--no-output", action="store_true", help="no --output in either run")
    parser.add_argument("--profile", action="store_true", help="profile the resumed run too")
    parser.add_argument("--keep", type=Path, help="write the inputs here and keep them")
    args = parser.parse_args(argv)

    base = (args.keep or Path(tempfile.mkdtemp(prefix="bench_resume_"))).resolve()
    pairs: list[Pair] = []
    try:
        for n in args.n:
            for attempt in range(max(args.repeat, 1)):
                pair = measure_pair(n, args.seed, base / f"n{n}", args.timeout, not args.no_output)
                pairs.append(pair)
                print(f"\nN = {n} (pair {attempt + 1}), --output: {not args.no_output}")
                print(
                    f"  {'run':<8}{'wall s':>9}{'CPU s':>9}{'max RSS MB':>12}{'exit':>6}"
                    f"{'cases':>9}{'passed':>8}{'failed':>8}"
                )
                print(_line("fresh", pair.fresh))
                print(_line("resumed", pair.resumed))
                verdict = "" if pair.agree else "  DISAGREEMENT or INCOMPLETE (see the logs)"
                print(f"  resumed / fresh wall: {pair.ratio:.3f}{verdict}", flush=True)
            if args.profile:
                print(f"\nPROFILE of the resumed run, N = {n}, top {TOP} by cumulative time")
                print(profile_resume(base / f"n{n}", not args.no_output))
        if args.json:
            payload = [{**asdict(p), "ratio": p.ratio, "agree": p.agree} for p in pairs]
            args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        return 0 if all(p.agree for p in pairs) else 1
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
