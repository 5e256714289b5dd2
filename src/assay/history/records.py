"""What the history holds besides its SQL: run summaries, case rows, and the ids, hashes and
paths that name them."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from assay.errors import AssayError
from assay.llm.cache import ResponseCache
from assay.results.model import SIMULATOR, EvalCaseResult, EvalSetResult

HISTORY_FILE = "history.sqlite"


class HistoryError(AssayError):
    """The history file cannot be used, or a run it was asked for is not in it."""


@dataclass(frozen=True)
class RunInfo:
    """One run as ``assay runs`` lists it."""

    id: str
    started: float
    finished: float | None
    status: str
    source: str
    eval_sets: list[str]
    config: dict[str, Any]
    config_hash: str
    judges: list[str]
    """The judges in words (:func:`run_judges`); a run recorded before they were, or imported
    from ADK, names their model strings."""
    assay_version: str
    git_commit: str | None
    passed: int
    failed: int
    not_evaluated: int
    tokens: int

    @property
    def cases(self) -> int:
        """Case results recorded (every run number counts)."""
        return self.passed + self.failed + self.not_evaluated

    @property
    def pass_rate(self) -> float | None:
        """Passed over recorded cases; None when none is recorded."""
        return self.passed / self.cases if self.cases else None


class CaseRow(NamedTuple):
    """A finished case as written: its place, status, tokens, the time it finished, its stored
    text, and the metric header that text introduces (number and JSON), if any. (A named tuple:
    one is made per case, and a frozen dataclass costs several times as much to build.)"""

    eval_set_id: str
    eval_id: str
    run: int
    status: int
    tokens: int
    written: float
    text: str
    header: tuple[int, str] | None = None
    output: bytes | None = None
    """The result as a resumed run adds it back (:func:`~assay.results.collected.pack_output`),
    where it was made anyway (in a worker process); else None."""


def default_history_path(env: Mapping[str, str] | None = None) -> Path:
    """``$ASSAY_HISTORY``, else ``history.sqlite`` beside the response cache
    (``$ASSAY_CACHE_DIR``, else ``.assay`` in the current folder)."""
    source = os.environ if env is None else env
    explicit = source.get("ASSAY_HISTORY")
    if explicit:
        return Path(explicit)
    return ResponseCache.default_path(source).parent / HISTORY_FILE


def config_hash(config: Mapping[str, Any]) -> str:
    """sha256 of the config's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def new_run_id(now: float | None = None) -> str:
    """``YYYYMMDD-HHMMSS-xxxx`` (UTC), sortable by start time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(2)}"


def git_commit(cwd: Path | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``cwd``; None outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def run_judges(results: Sequence[EvalSetResult]) -> list[str]:
    """The run's judges in words, each once (:meth:`~assay.results.model.JudgeInfo.describe`:
    ``openai:gpt-4o-mini (from --judge-model)``), the simulated user's model marked as such
    (``simulated user: ...``); sorted."""
    found: set[str] = set()
    for result in results:
        if result.assay is None:
            continue
        for metric, info in result.assay.judges.items():
            described = info.describe()
            if described is not None:
                found.add(f"simulated user: {described}" if metric == SIMULATOR else described)
    return sorted(found)


def case_tokens(result: EvalCaseResult) -> int:
    """Tokens the case's judges and simulated user used."""
    tokens = sum(notes.usage.total_tokens for notes in result.assay.metrics.values())
    if result.assay.simulator_usage is not None:
        tokens += result.assay.simulator_usage.total_tokens
    return tokens


def case_row(
    result: EvalCaseResult,
    text: str,
    header: tuple[int, str] | None = None,
    output: bytes | None = None,
) -> CaseRow:
    """The row that stores ``result`` as ``text`` (and ``output``: :attr:`CaseRow.output`)."""
    return CaseRow(
        result.eval_set_id,
        result.eval_id,
        result.assay.run,
        int(result.final_eval_status),
        case_tokens(result),
        time.time(),
        text,
        header,
        output,
    )


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours
        return True
    return True


RUN_COLUMNS = (
    "id, started, finished, status, source, eval_sets, config, config_hash, judges, "
    "assay_version, git_commit, host, pid, tokens"
)
"""The ``runs`` columns :func:`run_info` reads, in its order."""


def run_info(row: Sequence[Any]) -> RunInfo:
    """A run from a row of :data:`RUN_COLUMNS`, then (as the store's own query gives them) its
    passed, failed and not-evaluated case counts and the tokens its cases used; without those,
    its counts are 0. A run still marked running whose process on this host is gone is
    ``interrupted``."""
    status = str(row[3])
    host, pid = row[11], row[12]
    if status == "running" and host == socket.gethostname() and pid and not pid_alive(pid):
        status = "interrupted"
    counted = len(row) > 14
    return RunInfo(
        id=row[0],
        started=row[1],
        finished=row[2],
        status=status,
        source=row[4],
        eval_sets=json.loads(row[5]),
        config=json.loads(row[6]),
        config_hash=row[7],
        judges=json.loads(row[8]),
        assay_version=row[9],
        git_commit=row[10],
        passed=int(row[14] or 0) if counted else 0,
        failed=int(row[15] or 0) if counted else 0,
        not_evaluated=int(row[16] or 0) if counted else 0,
        tokens=int(row[13] if row[13] is not None else (row[17] or 0) if counted else 0),
    )
