"""Benchmark an agent run's memory: ``assay eval --agent`` over N one-turn cases, each answered
with one tool call whose result is 4 KB of its own, scored on ``tool_trajectory_avg_score``.

    .venv/bin/python benchmarks/bench_agent_memory.py [--n 2000 20000] [--tool-kb 4]
        [--inference-concurrency 4] [--save-traces] [--json]

Each N gets a temporary folder with the eval set (``N`` cases, one invocation each, the expected
tool use), the config and a Python agent file (a function returning a ``TurnResult`` with the
tool call and its result), and runs ``assay eval EVALSET --agent agent.py:agent --no-history
--no-progress`` (with ``--save-traces`` too when asked) in a child process. Wall seconds, CPU
seconds (user + sys) and max RSS come from the operating system's accounting of that child
(``os.wait4``); the run must pass every case (exit 0), else the script exits 1. The load
average is printed before and after: the figures mean little on a busy machine without it.

The goal (issue 33): 20,000 cases under 250 MB RSS, that is, memory bounded by the run's
concurrency rather than by the eval set. Latest figures are in docs/design.md ("Fast and
bounded end to end"). After issue 33's second pass (idle): 2,000 cases 99.9 MB / 1.5 s, 20,000
cases 97.2 MB / 8.0 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = """
from assay.agents.base import ToolCall, TurnResult

TOOL_BYTES = {tool_bytes}


def agent(message, session):
    n = int(message.rsplit(" ", 1)[1])
    found = f"{{n:08d}}" + "r" * (TOOL_BYTES - 8)  # a result of its own for every case
    call = ToolCall(name="lookup", args={{"n": n}}, response={{"result": found}})
    return TurnResult(final_response="done", tool_calls=[call])
"""


def write_inputs(folder: Path, n: int, tool_bytes: int) -> tuple[Path, Path, Path]:
    """The eval set, config and agent file of an ``n``-case run, written into ``folder``."""
    evalset = folder / "many.evalset.json"
    with evalset.open("w", encoding="utf-8") as out:
        out.write('{"eval_set_id": "many", "eval_cases": [')
        for i in range(n):
            case = {
                "eval_id": f"c{i}",
                "conversation": [
                    {
                        "invocation_id": f"i{i}",
                        "user_content": {"role": "user", "parts": [{"text": f"case {i}"}]},
                        "final_response": {"role": "model", "parts": [{"text": "done"}]},
                        "intermediate_data": {"tool_uses": [{"name": "lookup", "args": {"n": i}}]},
                    }
                ],
            }
            out.write(("," if i else "") + json.dumps(case))
        out.write("]}")
    config = folder / "config.json"
    config.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    agent = folder / "agent.py"
    agent.write_text(AGENT.format(tool_bytes=tool_bytes))
    return evalset, config, agent


def run_once(n: int, tool_bytes: int, concurrency: int, save_traces: bool) -> dict[str, object]:
    """One child run of ``n`` cases: wall and CPU seconds, max RSS in MB, exit code."""
    with tempfile.TemporaryDirectory(prefix="assay-agent-mem-") as name:
        folder = Path(name)
        evalset, config, agent = write_inputs(folder, n, tool_bytes)
        assay = Path(sys.executable).parent / "assay"
        command = [
            str(assay), "eval", str(evalset), "--config", str(config),
            "--agent", f"{agent}:agent", "--inference-concurrency", str(concurrency),
            "--no-history", "--no-progress",
        ]  # fmt: skip
        if save_traces:
            command += ["--save-traces", str(folder / "saved.json")]
        with (folder / "log.txt").open("wb") as log:
            started = time.perf_counter()
            child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        tail = (folder / "log.txt").read_text(errors="replace")[-600:] if code else ""
        saved_mb = (folder / "saved.json").stat().st_size / 2**20 if save_traces and not code else 0
    return {
        "n": n,
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "code": code,
        "saved_traces_mb": round(saved_mb, 1),
        "log_tail": tail,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--tool-kb", type=float, default=4.0)
    parser.add_argument("--inference-concurrency", type=int, default=4)
    parser.add_argument("--save-traces", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    before = os.getloadavg()
    rows = [
        run_once(n, int(args.tool_kb * 1024), args.inference_concurrency, args.save_traces)
        for n in args.n
    ]
    after = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "load_before": before, "load_after": after}))
    else:
        print(f"load average before {before[0]:.2f}/{before[1]:.2f}/{before[2]:.2f}")
        print(f"{'cases':>8} {'wall s':>8} {'cpu s':>8} {'max RSS MB':>11} {'ms/case':>8}  exit")
        for row in rows:
            per_case = float(row["wall_s"]) * 1000 / int(row["n"])  # type: ignore[arg-type]
            print(
                f"{row['n']:>8} {row['wall_s']:>8} {row['cpu_s']:>8} {row['max_rss_mb']:>11}"
                f" {per_case:>8.2f}  {row['code']}"
            )
            if row["code"]:
                print(row["log_tail"])
        print(f"load average after {after[0]:.2f}/{after[1]:.2f}/{after[2]:.2f}")
    return 0 if all(row["code"] == 0 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
